// Launchers of the 2-D max and average pooling kernels (NHWC) and their gradients. Own kernels rather
// than cuDNN's: cuDNN pads symmetrically (TF "same" is not), routes max-pool gradient ties its own way
// and counts padding differently; these follow the CPU's contract exactly. Plain pointers only; each
// returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// Windows over x (batch, in_h, in_w, c) giving (batch, out_h, out_w, c): output (oy, ox) covers
// input rows [oy * stride_h - pad_top, + kernel_h) (columns alike), clipped to the input.
struct PoolWindow {
  std::int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};

// y = the max of each window (NaN propagates), -inf for a window with no input element.
template <typename T>
cudaError_t launch_max_pool2d(const T* x, T* y, const PoolWindow& w, cudaStream_t stream);
// dx: each dy goes to the first position of its window (row-major) where x equals y, as the CPU and
// TF route it; argmax (batch, out_h, out_w, c) is scratch for that position (-1: none).
template <typename T>
cudaError_t launch_max_pool2d_grad(const T* dy, const T* x, const T* y, T* dx, std::int64_t* argmax,
                                   const PoolWindow& w, cudaStream_t stream);
// y = the mean over the part of each window inside x (padding not counted).
template <typename T>
cudaError_t launch_avg_pool2d(const T* x, T* y, const PoolWindow& w, cudaStream_t stream);
// dx: each dy spread evenly over the part of its window inside x.
template <typename T>
cudaError_t launch_avg_pool2d_grad(const T* dy, T* dx, const PoolWindow& w, cudaStream_t stream);

// max_pool2d_with_argmax and its gradient: uint8 window positions instead of x and y.
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
