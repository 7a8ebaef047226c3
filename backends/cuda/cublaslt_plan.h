// Host-side keys of cuBLASLt dense plans (no CUDA types, unit-tested without a GPU): the alignment
// cuBLASLt may assume for each operand's pointer, and the plan cache key that includes it.
#pragma once

#include <compare>
#include <cstdint>

#include "tower/core/dtype.h"

namespace tower::cuda {

// cuBLASLt's MIN_ALIGNMENT_{A,B,C,D}_BYTES default to 256, which tower's arenas do not promise (buffers
// sit at 64-byte offsets): a heuristic picked under the default may need an alignment the pointer
// lacks. So each plan asks for the pointers' real alignment: the lowest set bit of the address, at
// most 256 (a null pointer: 256).
constexpr std::uint32_t kMaxLtAlignment = 256;
constexpr std::uint32_t pointer_alignment(std::uintptr_t address) {
  if (address == 0) return kMaxLtAlignment;
  const std::uintptr_t lowest = address & (~address + 1);
  return lowest >= kMaxLtAlignment ? kMaxLtAlignment : static_cast<std::uint32_t>(lowest);
}
inline std::uint32_t pointer_alignment(const void* p) { return pointer_alignment(reinterpret_cast<std::uintptr_t>(p)); }

// One cuBLASLt dense plan: (gpu, m, n, k, relu, TF32, dtype) and the alignments of A (the kernel), B (x), C and D
// (both y), so that a heuristic chosen for aligned buffers is never used on less aligned ones.
struct LtDenseKey {
  const void* gpu = nullptr;
  int m = 0, n = 0, k = 0;
  bool relu = false;
  // config::tensor_float_32_execution_enabled(): CUBLAS_COMPUTE_32F_FAST_TF32 instead of CUBLAS_COMPUTE_32F.
  bool tf32 = false;
  // float32, or float16/bfloat16 (mixed precision: half operands, float32 accumulation on tensor cores).
  DType dtype = DType::float32;
  std::uint32_t align_a = 0, align_b = 0, align_c = 0, align_d = 0;
  auto operator<=>(const LtDenseKey&) const = default;
};

inline LtDenseKey lt_dense_key(const void* gpu, int m, int n, int k, bool relu, const void* a, const void* b,
                               const void* c, const void* d, bool tf32 = false, DType dtype = DType::float32) {
  return {gpu,  m, n, k, relu, tf32, dtype, pointer_alignment(a), pointer_alignment(b), pointer_alignment(c),
          pointer_alignment(d)};
}

}  // namespace tower::cuda
