// The memory plan as a pure function: offsets from buffer sizes and lifetimes, no graph, no device.
#include <doctest/doctest.h>

#include <vector>

#include "tower/core/memory_plan.h"

using namespace tower;

namespace {

// True when no two buffers alive at a common step share a byte.
bool disjoint_when_alive(const std::vector<BufferLifetime>& b, const MemoryPlan& plan) {
  for (std::size_t i = 0; i < b.size(); ++i)
    for (std::size_t j = i + 1; j < b.size(); ++j) {
      const bool together = b[i].first_step <= b[j].last_step && b[j].first_step <= b[i].last_step;
      const bool overlap = plan.offsets[i] < plan.offsets[j] + b[j].bytes && plan.offsets[j] < plan.offsets[i] + b[i].bytes;
      if (together && overlap) return false;
    }
  return true;
}

}  // namespace

TEST_CASE("memory plan: buffers alive one after another share one offset") {
  const std::vector<BufferLifetime> chain{{256, 0, 1}, {256, 1, 2}, {256, 2, 3}, {256, 3, 4}};
  const MemoryPlan plan = plan_memory(chain, true);
  REQUIRE(plan.offsets.size() == 4);
  // Neighbours overlap at one step, so two slots alternate.
  CHECK(plan.offsets == std::vector<std::size_t>{0, 256, 0, 256});
  CHECK(plan.total_bytes == 512);
  CHECK(disjoint_when_alive(chain, plan));
}

TEST_CASE("memory plan: without reuse every buffer gets its own bytes, in the order given") {
  const std::vector<BufferLifetime> chain{{64, 0, 1}, {128, 1, 2}, {64, 2, 3}};
  const MemoryPlan plan = plan_memory(chain, false);
  CHECK(plan.offsets == std::vector<std::size_t>{0, 64, 192});
  CHECK(plan.total_bytes == 256);
}

TEST_CASE("memory plan: the largest buffer goes first, smaller ones fill the gaps") {
  // 0 and 2 live at the same time as the big one; 3 lives after everything else.
  const std::vector<BufferLifetime> b{{64, 0, 2}, {1024, 1, 3}, {128, 2, 4}, {512, 5, 6}};
  const MemoryPlan plan = plan_memory(b, true);
  CHECK(plan.offsets[1] == 0);     // largest first, at 0
  CHECK(plan.offsets[3] == 0);     // alive after the others: reuses the start
  CHECK(plan.offsets[2] == 1024);  // next largest: above the big one
  CHECK(plan.offsets[0] == 1152);  // above both
  CHECK(plan.total_bytes == 1216);
  CHECK(disjoint_when_alive(b, plan));
}

TEST_CASE("memory plan: a buffer that fits between two others takes the gap") {
  // a [0,256) and c [512,768) are alive with b; the gap [256,512) is free for b.
  const std::vector<BufferLifetime> b{{256, 0, 9}, {256, 0, 0}, {256, 0, 9}, {256, 1, 9}};
  const MemoryPlan plan = plan_memory(b, true);
  CHECK(plan.offsets == std::vector<std::size_t>{0, 256, 512, 256});
  CHECK(plan.total_bytes == 768);
  CHECK(disjoint_when_alive(b, plan));
}

TEST_CASE("memory plan: ties keep the given order; empty and zero-byte inputs") {
  CHECK(plan_memory(std::vector<BufferLifetime>{}, true).total_bytes == 0);
  const std::vector<BufferLifetime> same{{64, 0, 5}, {64, 0, 5}, {64, 0, 5}};
  CHECK(plan_memory(same, true).offsets == std::vector<std::size_t>{0, 64, 128});
  CHECK(align_buffer(0) == 0);
  CHECK(align_buffer(1) == kBufferAlignment);
  CHECK(align_buffer(kBufferAlignment) == kBufferAlignment);
  CHECK(align_buffer(kBufferAlignment + 1) == 2 * kBufferAlignment);
}

TEST_CASE("memory plan: many random lifetimes never overlap while alive and never exceed the unshared sum") {
  std::vector<BufferLifetime> b;
  unsigned seed = 12345;
  const auto next = [&] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
  std::size_t sum = 0;
  for (int i = 0; i < 200; ++i) {
    const int first = static_cast<int>(next() % 100);
    b.push_back({align_buffer(1 + next() % 5000), first, first + static_cast<int>(next() % 20)});
    sum += b.back().bytes;
  }
  const MemoryPlan plan = plan_memory(b, true);
  CHECK(disjoint_when_alive(b, plan));
  CHECK(plan.total_bytes <= sum);
  CHECK(plan.total_bytes < plan_memory(b, false).total_bytes);
}
