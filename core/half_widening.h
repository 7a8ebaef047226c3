// What a backend's half adapter (op_registry.h's HalfKernelAdapter) does for an op without half code:
// each float16/bfloat16 input is widened to a float32 tensor, each half output gets a float32 buffer,
// the op's float32 kernel runs on those, and each half output (and each half input the op updates in
// place) is rounded back once. The backend says how: backends/cpu/half_kernels.cpp (per-thread host
// buffers) and backends/cuda/half_ops.cpp (caching-allocator buffers, conversions on the stream).
#pragma once

#include <cstddef>
#include <functional>

#include "tower/core/op_registry.h"

namespace tower {

struct HalfWidening {
  // A float32 copy of a half tensor. `slot` numbers the step's widened tensors (0, 1, ...), for a
  // backend that keeps a buffer per slot from call to call.
  std::function<Tensor(KernelContext& ctx, const Tensor& half, std::size_t slot)> widen;
  // A float32 tensor of `shape` for a half output (its values are written by the kernel).
  std::function<Tensor(KernelContext& ctx, const Shape& shape, std::size_t slot)> buffer;
  // Rounds a float32 result into its half destination (nearest even).
  std::function<void(KernelContext& ctx, const Tensor& wide, Tensor& half)> round;
};

// Runs `kernel` on float32 copies of ctx's half tensors, as above.
void run_widened(KernelContext& ctx, KernelFn kernel, const HalfWidening& how);

}  // namespace tower
