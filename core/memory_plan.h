// The memory plan: where each intermediate buffer of a Plan lives in its device's arena, from the
// buffers' sizes and lifetimes alone (a pure function; the Plan binds the result to tensors).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace tower {

// One buffer: its size and the steps it is alive in, [first_step, last_step] inclusive.
struct BufferLifetime {
  std::size_t bytes = 0;
  int first_step = 0;  // the step that writes it (0 for a feed, alive from the start)
  int last_step = 0;   // the last step that reads it (or the plan's end for a fetched value)
};

struct MemoryPlan {
  std::vector<std::size_t> offsets;  // per buffer, in the order given
  std::size_t total_bytes = 0;       // the arena's size: the end of the highest buffer
};

// Buffer sizes are rounded up to this in the arena, so every buffer starts aligned for any kernel.
inline constexpr std::size_t kBufferAlignment = 64;
constexpr std::size_t align_buffer(std::size_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

// With reuse: largest buffers first (ties in the order given), each at the lowest offset that no
// buffer alive at an overlapping step occupies. Without reuse: one after another, in the order
// given. Sizes are used as given (align them first).
MemoryPlan plan_memory(std::span<const BufferLifetime> buffers, bool reuse);

}  // namespace tower
