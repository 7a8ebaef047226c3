// Launchers of the helper kernels around cuDNN's convolutions: the explicit zero padding of x for
// asymmetric "same" padding (and the crop of dx back out of it), and the kernel layout changes between
// Keras's HWIO and cuDNN's KRSC ("NHWC" filter format). Plain pointers only; each returns the launch
// status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// An NHWC image batch inside a zero-padded one: x (batch, h, w, c) sits at (top, left) of
// padded (batch, padded_h, padded_w, c).
struct PaddedNhwc {
  std::int64_t batch = 0, h = 0, w = 0, c = 0;
  std::int64_t padded_h = 0, padded_w = 0, top = 0, left = 0;
};

// padded = x surrounded by zeros (every element of padded is written).
template <typename T>
cudaError_t launch_pad_nhwc(const T* x, T* padded, const PaddedNhwc& p, cudaStream_t stream);
// x = the (h, w) window of padded at (top, left): the inverse of launch_pad_nhwc.
template <typename T>
cudaError_t launch_crop_nhwc(const T* padded, T* x, const PaddedNhwc& p, cudaStream_t stream);

// A conv kernel (kh, kw, in, out) (Keras HWIO) <-> (out, kh, kw, in) (KRSC, cuDNN's NHWC filter format).
template <typename T>
cudaError_t launch_hwio_to_krsc(const T* hwio, T* krsc, std::int64_t kh, std::int64_t kw, std::int64_t in,
                                std::int64_t out, cudaStream_t stream);
template <typename T>
cudaError_t launch_krsc_to_hwio(const T* krsc, T* hwio, std::int64_t kh, std::int64_t kw, std::int64_t in,
                                std::int64_t out, cudaStream_t stream);

}  // namespace tower::cuda
