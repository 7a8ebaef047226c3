// Launcher of the CUDA inverted-dropout kernel. Plain pointers only, as in elementwise_launchers.h.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// mask[i] = 1 / keep if uniform_at(seed, counter, o + i) < keep else 0; y = x * mask, where
// o = *row_offset * row_elements (a device pointer; null: o = 0). The same counter-based Philox words
// as the CPU kernel: the masks are bit for bit the CPU's.
template <typename T>
cudaError_t launch_dropout(const T* x, T* y, T* mask, std::int64_t n, const std::int64_t* row_offset,
                           std::int64_t row_elements, double keep, std::uint64_t seed, std::uint64_t counter,
                           cudaStream_t stream);

}  // namespace tower::cuda
