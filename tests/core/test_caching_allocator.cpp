// CachingAllocator's bookkeeping, on a fake "system" (aligned host memory with a capacity): reuse,
// rounding, best fit, statistics, the budget of a logical device, the out-of-memory retry and message.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "tower/core/caching_allocator.h"
#include "tower/core/error.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

// A device with `capacity` bytes: allocate returns nullptr beyond it, as cudaMalloc runs out.
struct FakeSystem {
  std::size_t capacity;
  std::size_t used = 0;
  std::set<void*> live;
  std::map<void*, std::size_t> sizes;

  CachingAllocator::System calls() {
    return {.allocate =
                [this](std::size_t bytes) -> void* {
                  if (used + bytes > capacity) return nullptr;
                  void* p = std::aligned_alloc(CachingAllocator::kAlignment, bytes);
                  used += bytes;
                  live.insert(p);
                  sizes[p] = bytes;
                  return p;
                },
            .free =
                [this](void* p) {
                  CHECK(live.erase(p) == 1);
                  used -= sizes[p];
                  sizes.erase(p);
                  std::free(p);
                },
            .describe = [this] { return format_bytes(capacity - used) + " free of " + format_bytes(capacity); }};
  }
};

}  // namespace

TEST_CASE("CachingAllocator: sizes round up to 512 bytes; a freed block is reused without a system call") {
  FakeSystem system{.capacity = 1 << 20};
  CachingAllocator a("fake:0", system.calls());
  CHECK(CachingAllocator::round_size(0) == 512);
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);

  void* p = a.allocate(1000);
  CHECK(a.block_size(p) == 1024);
  CHECK(a.stats().in_use == 1024);
  CHECK(a.deallocate(p));
  CHECK(a.stats().in_use == 0);
  CHECK(a.stats().reserved == 1024);  // kept, not returned
  CHECK(system.live.size() == 1);

  void* q = a.allocate(1024);
  CHECK(q == p);
  const auto s = a.stats();
  CHECK(s.allocations == 2);
  CHECK(s.cache_hits == 1);
  CHECK(s.system_allocations == 1);
  CHECK(s.peak_in_use == 1024);
  a.deallocate(q);
}

TEST_CASE("CachingAllocator: best fit among cached blocks, never a block more than 4/3 of the request") {
  FakeSystem system{.capacity = 1 << 24};
  CachingAllocator a("fake:0", system.calls());
  void* small = a.allocate(4096);
  void* medium = a.allocate(5120);
  void* big = a.allocate(65536);
  a.deallocate(small);
  a.deallocate(medium);
  a.deallocate(big);

  CHECK(a.allocate(4608) == medium);  // 5120 fits best (4096 is too small); freed at the end
  void* fresh = a.allocate(40960);  // 65536 would waste more than a quarter of itself: a new block
  CHECK(fresh != big);
  CHECK(a.block_size(fresh) == 40960);
  void* reused = a.allocate(60000);
  CHECK(reused == big);
  CHECK(a.stats().system_allocations == 4);
  // Back to the cache, which returns every block to the system when it goes (no leak under ASan).
  for (void* p : {medium, fresh, reused}) a.deallocate(p);
}

TEST_CASE("CachingAllocator: statistics follow every allocation, free and empty_cache") {
  FakeSystem system{.capacity = 1 << 24};
  CachingAllocator a("fake:0", system.calls());
  std::vector<void*> blocks;
  for (int i = 1; i <= 4; ++i) blocks.push_back(a.allocate(static_cast<std::size_t>(i) * 1024));
  auto s = a.stats();
  CHECK(s.in_use == 10 * 1024);
  CHECK(s.reserved == 10 * 1024);
  CHECK(s.peak_in_use == 10 * 1024);
  for (void* p : blocks) a.deallocate(p);
  s = a.stats();
  CHECK(s.in_use == 0);
  CHECK(s.peak_in_use == 10 * 1024);
  CHECK(s.reserved == 10 * 1024);
  a.empty_cache();
  s = a.stats();
  CHECK(s.reserved == 0);
  CHECK(s.peak_reserved == 10 * 1024);
  CHECK(s.system_frees == 4);
  CHECK(system.live.empty());
}

TEST_CASE("CachingAllocator: a pointer it did not give is refused, and a block is freed only once") {
  FakeSystem system{.capacity = 1 << 20};
  CachingAllocator a("fake:0", system.calls());
  int local = 0;
  CHECK_FALSE(a.deallocate(&local));
  void* p = a.allocate(100);
  CHECK(a.deallocate(p));
  CHECK_FALSE(a.deallocate(p));  // already cached: a double free changes nothing
  CHECK(a.stats().in_use == 0);
  CHECK(a.block_size(&local) == 0);
}

TEST_CASE("CachingAllocator: out of memory returns the cache to the system and tries once more") {
  FakeSystem system{.capacity = 8 * 1024};
  CachingAllocator a("fake:0", system.calls());
  void* p = a.allocate(4 * 1024);
  void* q = a.allocate(2 * 1024);
  a.deallocate(p);
  a.deallocate(q);
  // 6 KiB cached, 2 KiB left on the device: 8 KiB fits only after the cache goes back.
  void* r = a.allocate(8 * 1024);
  CHECK(r != nullptr);
  const auto s = a.stats();
  CHECK(s.system_frees == 2);
  CHECK(s.reserved == 8 * 1024);
  CHECK(s.in_use == 8 * 1024);

  // Nothing cached and the device full: OutOfMemoryError with the whole story.
  const auto msg = message_of<OutOfMemoryError>([&] { a.allocate(1); });
  CHECK(contains(msg, "fake:0: out of memory allocating 512 B"));
  CHECK(contains(msg, "8.00 KiB in use by tower, 8.00 KiB reserved"));
  CHECK(contains(msg, "the device has 0 B free of 8.00 KiB"));
  CHECK(contains(msg, "use a smaller batch size"));
  CHECK(a.stats().in_use == 8 * 1024);  // the failed request changed nothing
  a.deallocate(r);
}

TEST_CASE("CachingAllocator: a budget caps what a logical device holds, whatever the device has free") {
  FakeSystem system{.capacity = 1 << 30};
  CachingAllocator a("cuda:1", system.calls(), /*budget=*/64 * 1024);
  void* p = a.allocate(48 * 1024);
  CHECK(contains(message_of<OutOfMemoryError>([&] { a.allocate(32 * 1024); }),
                 "budget 64.00 KiB: the request does not fit in it"));
  void* q = a.allocate(16 * 1024);  // exactly up to the budget
  a.deallocate(q);
  a.deallocate(p);
  // 64 KiB cached in 48 + 16 KiB blocks: a 60 KiB request fits in the budget only after they go back.
  void* r = a.allocate(60 * 1024);
  CHECK(a.stats().reserved == 60 * 1024);
  CHECK(a.stats().peak_reserved == 64 * 1024);
  a.deallocate(r);
}

TEST_CASE("CachingAllocator: threads allocating and freeing at once keep the books straight") {
  FakeSystem system{.capacity = std::size_t{1} << 30};
  CachingAllocator a("fake:0", system.calls());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 2000; ++i) {
        void* p = a.allocate(static_cast<std::size_t>(512 * (1 + (i + t) % 7)));
        a.deallocate(p);
      }
    });
  for (auto& th : threads) th.join();
  const auto s = a.stats();
  CHECK(s.in_use == 0);
  CHECK(s.allocations == 8000);
  CHECK(s.cache_hits + s.system_allocations == 8000);
  CHECK(s.system_allocations <= 4 * 7);  // at most one block per size per thread at a time
}

TEST_CASE("format_bytes") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1.00 KiB");
  CHECK(format_bytes(1536 * 1024) == "1.50 MiB");
  CHECK(format_bytes(std::size_t{80} << 30) == "80.00 GiB");
}
