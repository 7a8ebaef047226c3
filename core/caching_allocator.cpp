// CachingAllocator: best-fit reuse of freed blocks, budget, out-of-memory retry and message.
#include "tower/core/caching_allocator.h"

#include <fmt/format.h>

#include <algorithm>

#include "tower/core/error.h"

namespace tower {

std::string format_bytes(std::size_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.2f} {}", value, units[unit]);
}

CachingAllocator::CachingAllocator(std::string device, System system, std::size_t budget)
    : device_(std::move(device)), system_(std::move(system)), budget_(budget) {
  if (!system_.allocate || !system_.free)
    raise<ValueError>("CachingAllocator for {}: the system allocate and free calls must both be given", device_);
}

CachingAllocator::~CachingAllocator() { empty_cache(); }

void* CachingAllocator::take_cached(std::size_t size) {
  auto it = cached_.lower_bound(size);
  // A block more than a third larger than the request would waste over a quarter of itself.
  if (it == cached_.end() || it->first - size > it->first / 4) return nullptr;
  void* ptr = it->second;
  in_use_.emplace(ptr, it->first);
  stats_.in_use += it->first;
  cached_.erase(it);
  ++stats_.cache_hits;
  return ptr;
}

void* CachingAllocator::allocate_from_system(std::size_t size) {
  if (budget_ != 0 && stats_.reserved + size > budget_) return nullptr;
  void* ptr = system_.allocate(size);
  if (!ptr) return nullptr;
  ++stats_.system_allocations;
  stats_.reserved += size;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  in_use_.emplace(ptr, size);
  stats_.in_use += size;
  return ptr;
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = round_size(bytes);
  std::lock_guard lock(mutex_);
  ++stats_.allocations;
  void* ptr = take_cached(size);
  if (!ptr) ptr = allocate_from_system(size);
  if (!ptr && !cached_.empty()) {  // the cache holds memory this request could use: give it back, retry
    release_cache();
    ptr = allocate_from_system(size);
  }
  if (!ptr) throw_out_of_memory(bytes, size);
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  return ptr;
}

bool CachingAllocator::deallocate(void* ptr) noexcept {
  std::lock_guard lock(mutex_);
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) return false;
  stats_.in_use -= it->second;
  cached_.emplace(it->second, ptr);
  in_use_.erase(it);
  return true;
}

void CachingAllocator::release_cache() {
  for (const auto& [size, ptr] : cached_) {
    system_.free(ptr);
    stats_.reserved -= size;
    ++stats_.system_frees;
  }
  cached_.clear();
}

void CachingAllocator::empty_cache() noexcept {
  std::lock_guard lock(mutex_);
  release_cache();
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::size_t CachingAllocator::block_size(const void* ptr) const {
  std::lock_guard lock(mutex_);
  auto it = in_use_.find(const_cast<void*>(ptr));
  return it == in_use_.end() ? 0 : it->second;
}

void CachingAllocator::throw_out_of_memory(std::size_t bytes, std::size_t size) const {
  std::string limit;
  if (budget_ != 0)
    limit = fmt::format(", budget {}{}", format_bytes(budget_),
                        stats_.reserved + size > budget_ ? ": the request does not fit in it" : "");
  const std::string device_says = system_.describe ? "; the device has " + system_.describe() : "";
  raise<OutOfMemoryError>("{}: out of memory allocating {} ({} in use by tower, {} reserved{}{}){}", device_,
                          format_bytes(std::max(bytes, size)), format_bytes(stats_.in_use),
                          format_bytes(stats_.reserved), limit, device_says, kSmallerBatchAdvice);
}

}  // namespace tower
