// CachingAllocator: keeps freed device memory for reuse instead of returning it to the system, so a
// training loop that allocates the same sizes every step stops calling cudaMalloc/cudaFree after its
// first step. Backend-agnostic: a device gives it the two calls that get and return memory. An
// optional budget caps what it holds (a logical GPU's share of a physical one).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tower {

struct CachingAllocatorStats {
  std::size_t in_use = 0;         // bytes of blocks handed out (sizes rounded up to kAlignment)
  std::size_t reserved = 0;       // bytes held from the system: in use + cached
  std::size_t peak_in_use = 0;
  std::size_t peak_reserved = 0;
  std::size_t allocations = 0;    // allocate() calls
  std::size_t cache_hits = 0;     // ... served from the cache
  std::size_t system_allocations = 0;  // calls of the system allocator
  std::size_t system_frees = 0;        // blocks returned to the system (empty_cache, out-of-memory retries)
};

// "1.50 MiB", "512 B": for messages.
std::string format_bytes(std::size_t bytes);

class CachingAllocator {
 public:
  // Every block is a multiple of this (and so is every pointer the system allocator returns on GPUs).
  static constexpr std::size_t kAlignment = 512;

  struct System {
    // Returns `bytes` of memory, or nullptr when the device is out of memory (other failures throw).
    std::function<void*(std::size_t bytes)> allocate;
    std::function<void(void* ptr)> free;  // must not throw
    // Optional: what the device says about its memory, for the out-of-memory message
    // ("12.0 GiB free of 80.0 GiB").
    std::function<std::string()> describe = nullptr;
  };

  // device: the name for messages ("cuda:0"); budget: the most bytes this allocator may hold from
  // the system (0: no limit other than the device's).
  CachingAllocator(std::string device, System system, std::size_t budget = 0);
  ~CachingAllocator();  // returns every cached block; blocks still in use are left to the system
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (0 gives a block of kAlignment): the smallest cached block that fits
  // and wastes at most a quarter of itself, else a new one from the system. When the system is out
  // of memory or the budget is reached, the cache is returned to the system and the request tried
  // once more; then OutOfMemoryError names the device, the request, what is in use, reserved and
  // the budget, and suggests a smaller batch or another share of the batch.
  void* allocate(std::size_t bytes);
  // Keeps the block for reuse. False (and nothing done) for a pointer this allocator did not give.
  bool deallocate(void* ptr) noexcept;
  // Returns every cached block to the system (torch.cuda.empty_cache).
  void empty_cache() noexcept;

  CachingAllocatorStats stats() const;
  std::size_t budget() const { return budget_; }
  // The size of the block behind a pointer this allocator gave (0 for any other pointer).
  std::size_t block_size(const void* ptr) const;

  static std::size_t round_size(std::size_t bytes) {
    return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

 private:
  void* take_cached(std::size_t size);        // under mutex_; nullptr when nothing fits
  void* allocate_from_system(std::size_t size);  // under mutex_; nullptr when out of memory
  void release_cache();                       // under mutex_
  [[noreturn]] void throw_out_of_memory(std::size_t bytes, std::size_t size) const;

  std::string device_;
  System system_;
  std::size_t budget_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> cached_;       // free blocks by size
  std::unordered_map<void*, std::size_t> in_use_;  // handed-out blocks and their sizes
  CachingAllocatorStats stats_;
};

}  // namespace tower
