// PinnedHostDevice: page-locked host memory (cudaHostAlloc) as a host-accessible tower Device, so
// that batches prefetched into it reach a GPU by DMA without a staging copy. One per process,
// through tower::pinned_host_device(); freed blocks are cached for the next batch, once the GPU copies
// that read them are done.
#pragma once

#include <cstddef>
#include <memory>

#include "tower/backends/cuda/event_tagged_blocks.h"
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
  void empty_cache() override;

  // Whether [src, src + bytes) lies in a live block of this device.
  bool owns(const void* src, std::size_t bytes) const { return blocks_.owns(src, bytes); }
  // When [src, src + bytes) lies in a live block of this device: the block is not reused (once freed)
  // before `copy_done` (a cudaEvent_t already recorded after an asynchronous copy from src) completes,
  // and true. False when src is not this device's memory.
  bool hold_until(const void* src, std::size_t bytes, std::shared_ptr<void> copy_done);

 protected:
  // A freed block goes back to the cache once the GPU copies reading it (hold_until) have finished;
  // until then it waits, and each allocation or free hands back those that are done.
  void* do_allocate(std::size_t bytes) override;
  void do_deallocate(void* ptr, std::size_t) override;
  std::optional<std::size_t> reserved_bytes() const override { return allocator_.stats().reserved; }

 private:
  void release_ready();

  CachingAllocator allocator_;
  EventTaggedBlocks blocks_;
};

// The process's pinned host device (created on first use, never destroyed: its blocks are freed by the
// driver at exit, not after the CUDA runtime's teardown).
Device& pinned_host();

}  // namespace tower::cuda
