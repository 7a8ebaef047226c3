// PinnedHostDevice: page-locked host memory (cudaHostAlloc) as a host-accessible tower Device, so
// that batches prefetched into it reach a GPU by DMA without a staging copy. One per process,
// through tower::pinned_host_device(); freed blocks are cached for the next batch.
#pragma once

#include "tower/core/caching_allocator.h"
#include "tower/core/device.h"

namespace tower::cuda {

class PinnedHostDevice final : public Device {
 public:
  PinnedHostDevice();

  bool host_accessible() const override { return true; }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_within(void* dst, const void* src, std::size_t bytes) override;
  void empty_cache() override { allocator_.empty_cache(); }

 protected:
  // A freed block is reused at once: every copy from it to a GPU has finished when the copy returns.
  void* do_allocate(std::size_t bytes) override { return allocator_.allocate(bytes); }
  void do_deallocate(void* ptr, std::size_t) override { allocator_.deallocate(ptr); }
  std::optional<std::size_t> reserved_bytes() const override { return allocator_.stats().reserved; }

 private:
  CachingAllocator allocator_;
};

// The process's pinned host device (created on first use).
Device& pinned_host();

}  // namespace tower::cuda
