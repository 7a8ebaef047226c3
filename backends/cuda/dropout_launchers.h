// Launchers of the CUDA inverted-dropout and random-tensor kernels. Plain pointers only, as in elementwise_launchers.h.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// mask[i] = 1 / keep if uniform_at(seed, counter, o + i) < keep else 0; y = x * mask, where
// o = *row_offset * row_elements (a device pointer; null: o = 0). The same counter-based Philox words
// as the CPU kernel: the masks are bit for bit the CPU's. counter_at: a device pointer the kernel reads
// the counter from instead (a recorded step: core/step_graph.h, recorded_random_counter), or null.
template <typename T>
cudaError_t launch_dropout(const T* x, T* y, T* mask, std::int64_t n, const std::int64_t* row_offset,
                           std::int64_t row_elements, double keep, std::uint64_t seed, std::uint64_t counter,
                           const std::uint64_t* counter_at, cudaStream_t stream);

// y[i] = lo + width v for element o + i (o as above): v = word 2^-32 (random_uniform, as uniform_at) or,
// with `normal`, philox_normal's Box-Muller value (random_normal), from the CPU kernels' Philox words.
template <typename T>
cudaError_t launch_random(T* y, std::int64_t n, const std::int64_t* row_offset, std::int64_t row_elements,
                          bool normal, double lo, double width, std::uint64_t seed, std::uint64_t counter,
                          const std::uint64_t* counter_at, cudaStream_t stream);

}  // namespace tower::cuda
