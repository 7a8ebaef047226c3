// Offsets of a Plan's buffers in their arena, greedy by size over lifetimes.
#include "tower/core/memory_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "tower/core/error.h"

namespace tower {

namespace {

// offset + bytes, the end of a buffer in the arena; ValueError when it does not fit in 64 bits (a few
// buffers of huge shapes, each of which alone fits).
std::size_t buffer_end(std::size_t offset, std::size_t bytes) {
  std::size_t end = 0;
  if (__builtin_add_overflow(offset, bytes, &end))
    raise<ValueError>("the memory plan: a buffer of {} bytes at offset {} ends beyond 2^64 bytes; no device holds "
                      "that much: use smaller shapes or batches",
                      bytes, offset);
  return end;
}

}  // namespace

MemoryPlan plan_memory(std::span<const BufferLifetime> buffers, bool reuse) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  if (!reuse) {
    for (std::size_t i = 0; i < buffers.size(); ++i)
      plan.offsets[i] = plan.total_bytes, plan.total_bytes = buffer_end(plan.total_bytes, buffers[i].bytes);
    return plan;
  }
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<std::size_t> placed;
  std::vector<std::pair<std::size_t, std::size_t>> busy;  // [begin, end) of buffers alive at the same time
  for (std::size_t i : order) {
    const BufferLifetime& v = buffers[i];
    busy.clear();
    for (std::size_t p : placed)
      if (buffers[p].first_step <= v.last_step && v.first_step <= buffers[p].last_step)
        busy.emplace_back(plan.offsets[p], plan.offsets[p] + buffers[p].bytes);
    std::sort(busy.begin(), busy.end());
    std::size_t offset = 0;
    for (auto [b, e] : busy) {
      if (buffer_end(offset, v.bytes) <= b) break;
      offset = std::max(offset, e);
    }
    plan.offsets[i] = offset;
    plan.total_bytes = std::max(plan.total_bytes, buffer_end(offset, v.bytes));
    placed.push_back(i);
  }
  return plan;
}

}  // namespace tower
