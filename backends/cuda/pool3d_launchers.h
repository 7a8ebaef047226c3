// Launchers of the 3-D max and average pooling kernels (NDHWC) and their gradients: the 2-D kernels'
// contract (pool_launchers.h) with a depth axis; own kernels rather than cuDNN's for the same reasons
// (TF's asymmetric "same" padding, the CPU's tie rule and count). Plain pointers only; each returns the
// launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// Windows over x (batch, in[0], in[1], in[2], c) (depth, height, width) giving (batch, out[0], out[1],
// out[2], c): along axis a output o covers inputs [o * stride[a] - pad[a], + kernel[a]), clipped to x.
struct Pool3DWindow {
  std::int64_t batch = 0, channels = 0;
  std::int64_t in[3] = {}, out[3] = {}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {};
};

// y = the max of each window (NaN propagates), -inf for a window with no input element.
template <typename T>
cudaError_t launch_max_pool3d(const T* x, T* y, const Pool3DWindow& w, cudaStream_t stream);
// dx: each dy goes to the first position of its window (in (d, h, w) order) where x equals y, as the
// CPU routes it; argmax (batch, out..., c) is scratch for that position (-1: none).
template <typename T>
cudaError_t launch_max_pool3d_grad(const T* dy, const T* x, const T* y, T* dx, std::int64_t* argmax,
                                   const Pool3DWindow& w, cudaStream_t stream);
// y = the mean over the part of each window inside x (padding not counted).
template <typename T>
cudaError_t launch_avg_pool3d(const T* x, T* y, const Pool3DWindow& w, cudaStream_t stream);
// dx: each dy spread evenly over the part of its window inside x.
template <typename T>
cudaError_t launch_avg_pool3d_grad(const T* dy, T* dx, const Pool3DWindow& w, cudaStream_t stream);

}  // namespace tower::cuda
