// CUDA kernels around cuDNN's convolutions: explicit zero padding of x, the crop of dx out of its padded
// copy, and the HWIO <-> KRSC kernel layout changes.
#include "backends/cuda/conv_launchers.h"
#include "backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

// One thread per element of padded (batch, padded_h, padded_w, c).
template <typename T>
__global__ void pad_nhwc_kernel(const T* x, T* padded, PaddedNhwc p) {
  TOWER_GRID_STRIDE(i, p.batch * p.padded_h * p.padded_w * p.c) {
    const std::int64_t e = i % p.c, pixel = i / p.c;
    const std::int64_t px = pixel % p.padded_w, py = (pixel / p.padded_w) % p.padded_h;
    const std::int64_t n = pixel / (p.padded_w * p.padded_h);
    const std::int64_t iy = py - p.top, ix = px - p.left;
    const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
    padded[i] = inside ? x[((n * p.h + iy) * p.w + ix) * p.c + e] : T(0);
  }
}

// One thread per element of x (batch, h, w, c).
template <typename T>
__global__ void crop_nhwc_kernel(const T* padded, T* x, PaddedNhwc p) {
  TOWER_GRID_STRIDE(i, p.batch * p.h * p.w * p.c) {
    const std::int64_t e = i % p.c, pixel = i / p.c;
    const std::int64_t ix = pixel % p.w, iy = (pixel / p.w) % p.h, n = pixel / (p.w * p.h);
    x[i] = padded[((n * p.padded_h + iy + p.top) * p.padded_w + ix + p.left) * p.c + e];
  }
}

// One thread per element of krsc (out, kh * kw, in); hwio is (kh * kw, in, out).
template <typename T>
__global__ void hwio_to_krsc_kernel(const T* hwio, T* krsc, std::int64_t taps, std::int64_t in, std::int64_t out) {
  TOWER_GRID_STRIDE(i, out * taps * in) {
    const std::int64_t ci = i % in, tap = (i / in) % taps, co = i / (in * taps);
    krsc[i] = hwio[(tap * in + ci) * out + co];
  }
}

// One thread per element of hwio (kh * kw, in, out); krsc is (out, kh * kw, in).
template <typename T>
__global__ void krsc_to_hwio_kernel(const T* krsc, T* hwio, std::int64_t taps, std::int64_t in, std::int64_t out) {
  TOWER_GRID_STRIDE(i, taps * in * out) {
    const std::int64_t co = i % out, ci = (i / out) % in, tap = i / (out * in);
    hwio[i] = krsc[(co * taps + tap) * in + ci];
  }
}

}  // namespace

template <typename T>
cudaError_t launch_pad_nhwc(const T* x, T* padded, const PaddedNhwc& p, cudaStream_t stream) {
  if (p.top < 0 || p.left < 0 || p.top + p.h > p.padded_h || p.left + p.w > p.padded_w) return cudaErrorInvalidValue;
  const std::int64_t n = p.batch * p.padded_h * p.padded_w * p.c;
  if (n == 0) return cudaSuccess;
  pad_nhwc_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, padded, p);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_crop_nhwc(const T* padded, T* x, const PaddedNhwc& p, cudaStream_t stream) {
  if (p.top < 0 || p.left < 0 || p.top + p.h > p.padded_h || p.left + p.w > p.padded_w) return cudaErrorInvalidValue;
  const std::int64_t n = p.batch * p.h * p.w * p.c;
  if (n == 0) return cudaSuccess;
  crop_nhwc_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(padded, x, p);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_hwio_to_krsc(const T* hwio, T* krsc, std::int64_t kh, std::int64_t kw, std::int64_t in,
                                std::int64_t out, cudaStream_t stream) {
  const std::int64_t n = kh * kw * in * out;
  if (n == 0) return cudaSuccess;
  hwio_to_krsc_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(hwio, krsc, kh * kw, in, out);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_krsc_to_hwio(const T* krsc, T* hwio, std::int64_t kh, std::int64_t kw, std::int64_t in,
                                std::int64_t out, cudaStream_t stream) {
  const std::int64_t n = kh * kw * in * out;
  if (n == 0) return cudaSuccess;
  krsc_to_hwio_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(krsc, hwio, kh * kw, in, out);
  return cudaGetLastError();
}

#define TOWER_INSTANTIATE(T)                                                                                   \
  template cudaError_t launch_pad_nhwc<T>(const T*, T*, const PaddedNhwc&, cudaStream_t);                     \
  template cudaError_t launch_crop_nhwc<T>(const T*, T*, const PaddedNhwc&, cudaStream_t);                    \
  template cudaError_t launch_hwio_to_krsc<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t,         \
                                              std::int64_t, cudaStream_t);                                    \
  template cudaError_t launch_krsc_to_hwio<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t,         \
                                              std::int64_t, cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
