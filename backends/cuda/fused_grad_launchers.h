// Launchers of max_pool2d_with_argmax and its gradient (NHWC, uint8 window positions), with the CPU's
// semantics (backends/cpu/pool_kernels.cpp). Plain pointers only; each returns the launch status for
// CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "tower/backends/cuda/pool_launchers.h"

namespace tower::cuda {

// y = the max of each window (a later element wins if greater or NaN), argmax = its position in the
// window, (iy - top) * kernel_w + (ix - left) from the window's corner, 255 where y is NaN.
template <typename T>
cudaError_t launch_max_pool2d_with_argmax(const T* x, T* y, std::uint8_t* argmax, const PoolWindow& w,
                                          cudaStream_t stream);
// dx (batch, in_h, in_w, c): for each element, the dy of the windows whose argmax names it, added in
// output order to 0 (one thread per dx element: no atomics, the CPU's sums).
template <typename T>
cudaError_t launch_max_pool2d_with_argmax_grad(const T* dy, const std::uint8_t* argmax, T* dx, const PoolWindow& w,
                                               cudaStream_t stream);

}  // namespace tower::cuda
