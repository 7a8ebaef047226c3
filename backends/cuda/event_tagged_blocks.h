// The live blocks of a host allocator and the asynchronous copies still reading them, so that a freed
// block goes back to the cache only once those copies are done (event-tagged frees, as PyTorch's
// CachingHostAllocator). No CUDA types: an event is opaque here and `done` asks whether it has
// completed (cudaEventQuery on a GPU), so the bookkeeping is unit-tested without one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace tower::cuda {

class EventTaggedBlocks {
 public:
  using Event = std::shared_ptr<void>;  // recorded after a copy that reads a block
  using Done = std::function<bool(const Event&)>;

  explicit EventTaggedBlocks(Done done) : done_(std::move(done)) {}

  // A block [block, block + bytes) was handed out.
  void allocated(void* block, std::size_t bytes);
  // Whether [p, p + bytes) lies in a live block.
  bool owns(const void* p, std::size_t bytes) const;
  // When [p, p + bytes) lies in a live block: the block is held until `event` completes, and true.
  // Tag after recording the event: an event not recorded yet counts as complete.
  // False when p is in no live block (memory this allocator does not own).
  bool tag(const void* p, std::size_t bytes, Event event);
  // The owner frees `block`: true when it may go back to the cache now (no copy reads it); false when
  // it waits for its events (ready() hands it back later).
  bool release(void* block);
  // Blocks released earlier whose events have all completed, now free to reuse (they leave the list).
  std::vector<void*> ready();
  // Released blocks still waiting for their copies.
  std::size_t waiting() const;

 private:
  struct Block {
    std::size_t bytes = 0;
    std::vector<Event> events;  // copies that may still read the block
    bool released = false;
  };
  void forget_done(Block& block);  // under mutex_
  // The live block containing [p, p + bytes), or end(); under mutex_.
  std::map<std::uintptr_t, Block>::iterator find_live(const void* p, std::size_t bytes);

  Done done_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, Block> blocks_;  // by start address
};

}  // namespace tower::cuda
