// CUDA 2-D max and average pooling (NHWC) and their gradients, and max pooling with its argmax, with
// the CPU's semantics (backends/cpu/pool_kernels.cpp). The gradients gather (one thread per dx element, summing the windows
// that contain it in the CPU's order) instead of scattering with atomics: deterministic, and equal to
// the CPU's sums.
#include <cmath>

#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/pool_launchers.h"
#include "tower/core/window.h"

namespace tower::cuda {

namespace {

// The part [y0, y1) x [x0, x1) of output (oy, ox)'s window inside x.
struct Span {
  std::int64_t y0, y1, x0, x1;
  __device__ std::int64_t count() const { return (y1 - y0) * (x1 - x0); }
};

__device__ Span window_span(const PoolWindow& w, std::int64_t oy, std::int64_t ox) {
  const window::Range ry = window::window_inside(oy, w.kernel_h, w.stride_h, w.pad_top, w.in_h);
  const window::Range rx = window::window_inside(ox, w.kernel_w, w.stride_w, w.pad_left, w.in_w);
  return {ry.lo, ry.hi, rx.lo, rx.hi};
}

// The outputs of one axis whose windows contain an input position: window::windows_containing.
using window::Range;
using window::windows_containing;

// Element i of an NHWC tensor (batch, h, w, c) as (n, y, x, e).
struct Nhwc {
  std::int64_t n, y, x, e;
};

__device__ Nhwc split_nhwc(std::int64_t i, std::int64_t h, std::int64_t w, std::int64_t c) {
  const std::int64_t e = i % c, pixel = i / c;
  return {pixel / (w * h), (pixel / w) % h, pixel % w, e};
}

template <typename T>
__global__ void max_pool2d_kernel(const T* x, T* y, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.out_h * w.out_w * w.channels) {
    const Nhwc o = split_nhwc(i, w.out_h, w.out_w, w.channels);
    const Span s = window_span(w, o.y, o.x);
    const T* image = x + o.n * w.in_h * w.in_w * w.channels + o.e;
    T m = -INFINITY;
    for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
      for (std::int64_t ix = s.x0; ix < s.x1; ++ix) {
        const T v = image[(iy * w.in_w + ix) * w.channels];
        m = v > m || v != v ? v : m;
      }
    y[i] = m;
  }
}

// argmax[i]: the input position iy * in_w + ix of the first element of output i's window equal to
// y[i], -1 when there is none (y is NaN).
template <typename T>
__global__ void max_pool2d_argmax_kernel(const T* x, const T* y, std::int64_t* argmax, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.out_h * w.out_w * w.channels) {
    const Nhwc o = split_nhwc(i, w.out_h, w.out_w, w.channels);
    const Span s = window_span(w, o.y, o.x);
    const T* image = x + o.n * w.in_h * w.in_w * w.channels + o.e;
    std::int64_t found = -1;
    for (std::int64_t iy = s.y0; iy < s.y1 && found < 0; ++iy)
      for (std::int64_t ix = s.x0; ix < s.x1; ++ix)
        if (image[(iy * w.in_w + ix) * w.channels] == y[i]) {
          found = iy * w.in_w + ix;
          break;
        }
    argmax[i] = found;
  }
}

// dx[i] = the sum, over the windows containing i in output order, of dy where that window's argmax is i.
template <typename T>
__global__ void max_pool2d_grad_kernel(const T* dy, const std::int64_t* argmax, T* dx, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.in_h * w.in_w * w.channels) {
    const Nhwc p = split_nhwc(i, w.in_h, w.in_w, w.channels);
    const Range ry = windows_containing(p.y, w.kernel_h, w.stride_h, w.pad_top, w.out_h);
    const Range rx = windows_containing(p.x, w.kernel_w, w.stride_w, w.pad_left, w.out_w);
    const std::int64_t position = p.y * w.in_w + p.x;
    T acc = 0;
    for (std::int64_t oy = ry.lo; oy < ry.hi; ++oy)
      for (std::int64_t ox = rx.lo; ox < rx.hi; ++ox) {
        const std::int64_t o = ((p.n * w.out_h + oy) * w.out_w + ox) * w.channels + p.e;
        if (argmax[o] == position) acc += dy[o];
      }
    dx[i] = acc;
  }
}

template <typename T>
__global__ void avg_pool2d_kernel(const T* x, T* y, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.out_h * w.out_w * w.channels) {
    const Nhwc o = split_nhwc(i, w.out_h, w.out_w, w.channels);
    const Span s = window_span(w, o.y, o.x);
    const T* image = x + o.n * w.in_h * w.in_w * w.channels + o.e;
    T sum = 0;
    for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
      for (std::int64_t ix = s.x0; ix < s.x1; ++ix) sum += image[(iy * w.in_w + ix) * w.channels];
    y[i] = sum * (T(1) / static_cast<T>(s.count()));
  }
}

template <typename T>
__global__ void avg_pool2d_grad_kernel(const T* dy, T* dx, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.in_h * w.in_w * w.channels) {
    const Nhwc p = split_nhwc(i, w.in_h, w.in_w, w.channels);
    const Range ry = windows_containing(p.y, w.kernel_h, w.stride_h, w.pad_top, w.out_h);
    const Range rx = windows_containing(p.x, w.kernel_w, w.stride_w, w.pad_left, w.out_w);
    T acc = 0;
    for (std::int64_t oy = ry.lo; oy < ry.hi; ++oy)
      for (std::int64_t ox = rx.lo; ox < rx.hi; ++ox) {
        const std::int64_t o = ((p.n * w.out_h + oy) * w.out_w + ox) * w.channels + p.e;
        acc += dy[o] * (T(1) / static_cast<T>(window_span(w, oy, ox).count()));
      }
    dx[i] = acc;
  }
}

bool valid(const PoolWindow& w) {
  return w.kernel_h > 0 && w.kernel_w > 0 && w.stride_h > 0 && w.stride_w > 0 && w.pad_top >= 0 && w.pad_left >= 0;
}

// max_pool2d_with_argmax's "no position" (a NaN max); windows hold at most 255 positions.
constexpr std::uint8_t kNoArgmax = 255;

bool valid_for_argmax(const PoolWindow& w) { return valid(w) && w.kernel_h * w.kernel_w <= kNoArgmax; }

// y = the window's max (a later element wins if greater or NaN), argmax = its position from the window's
// corner, (iy - top) * kernel_w + (ix - left); kNoArgmax where y is NaN.
template <typename T>
__global__ void max_pool2d_with_argmax_kernel(const T* x, T* y, std::uint8_t* argmax, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.out_h * w.out_w * w.channels) {
    const Nhwc o = split_nhwc(i, w.out_h, w.out_w, w.channels);
    const Span s = window_span(w, o.y, o.x);
    const std::int64_t top = o.y * w.stride_h - w.pad_top, left = o.x * w.stride_w - w.pad_left;
    const T* image = x + o.n * w.in_h * w.in_w * w.channels + o.e;
    T m = image[(s.y0 * w.in_w + s.x0) * w.channels];
    std::int64_t best = (s.y0 - top) * w.kernel_w + (s.x0 - left);
    for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
      for (std::int64_t ix = s.x0; ix < s.x1; ++ix) {
        const T v = image[(iy * w.in_w + ix) * w.channels];
        if (v > m || v != v) m = v, best = (iy - top) * w.kernel_w + (ix - left);
      }
    y[i] = m;
    argmax[i] = m != m ? kNoArgmax : static_cast<std::uint8_t>(best);
  }
}

// dx: for each element, the dy of the windows whose argmax names it, added in output order (a gather).
template <typename T>
__global__ void max_pool2d_with_argmax_grad_kernel(const T* dy, const std::uint8_t* argmax, T* dx, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.in_h * w.in_w * w.channels) {
    const Nhwc p = split_nhwc(i, w.in_h, w.in_w, w.channels);
    const Range ry = windows_containing(p.y, w.kernel_h, w.stride_h, w.pad_top, w.out_h);
    const Range rx = windows_containing(p.x, w.kernel_w, w.stride_w, w.pad_left, w.out_w);
    T acc = 0;
    for (std::int64_t oy = ry.lo; oy < ry.hi; ++oy)
      for (std::int64_t ox = rx.lo; ox < rx.hi; ++ox) {
        const std::int64_t o = ((p.n * w.out_h + oy) * w.out_w + ox) * w.channels + p.e;
        const std::int64_t at = (p.y - (oy * w.stride_h - w.pad_top)) * w.kernel_w + (p.x - (ox * w.stride_w - w.pad_left));
        acc += argmax[o] == at ? dy[o] : T(0);
      }
    dx[i] = acc;
  }
}

}  // namespace

template <typename T>
cudaError_t launch_max_pool2d(const T* x, T* y, const PoolWindow& w, cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t n = w.batch * w.out_h * w.out_w * w.channels;
  if (n == 0) return cudaSuccess;
  max_pool2d_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_max_pool2d_grad(const T* dy, const T* x, const T* y, T* dx, std::int64_t* argmax,
                                   const PoolWindow& w, cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t outputs = w.batch * w.out_h * w.out_w * w.channels;
  const std::int64_t inputs = w.batch * w.in_h * w.in_w * w.channels;
  if (inputs == 0) return cudaSuccess;
  if (outputs > 0) {
    max_pool2d_argmax_kernel<T><<<blocks_for(outputs), kThreads, 0, stream>>>(x, y, argmax, w);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  }
  max_pool2d_grad_kernel<T><<<blocks_for(inputs), kThreads, 0, stream>>>(dy, argmax, dx, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_avg_pool2d(const T* x, T* y, const PoolWindow& w, cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t n = w.batch * w.out_h * w.out_w * w.channels;
  if (n == 0) return cudaSuccess;
  avg_pool2d_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_avg_pool2d_grad(const T* dy, T* dx, const PoolWindow& w, cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t n = w.batch * w.in_h * w.in_w * w.channels;
  if (n == 0) return cudaSuccess;
  avg_pool2d_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(dy, dx, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_max_pool2d_with_argmax(const T* x, T* y, std::uint8_t* argmax, const PoolWindow& w,
                                          cudaStream_t stream) {
  if (!valid_for_argmax(w)) return cudaErrorInvalidValue;
  const std::int64_t n = w.batch * w.out_h * w.out_w * w.channels;
  if (n == 0) return cudaSuccess;
  max_pool2d_with_argmax_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, argmax, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_max_pool2d_with_argmax_grad(const T* dy, const std::uint8_t* argmax, T* dx, const PoolWindow& w,
                                               cudaStream_t stream) {
  if (!valid_for_argmax(w)) return cudaErrorInvalidValue;
  const std::int64_t n = w.batch * w.in_h * w.in_w * w.channels;
  if (n == 0) return cudaSuccess;
  max_pool2d_with_argmax_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(dy, argmax, dx, w);
  return cudaGetLastError();
}

#define TOWER_INSTANTIATE(T)                                                                                           \
  template cudaError_t launch_max_pool2d<T>(const T*, T*, const PoolWindow&, cudaStream_t);                            \
  template cudaError_t launch_max_pool2d_grad<T>(const T*, const T*, const T*, T*, std::int64_t*,                      \
                                                 const PoolWindow&, cudaStream_t);                                     \
  template cudaError_t launch_avg_pool2d<T>(const T*, T*, const PoolWindow&, cudaStream_t);                            \
  template cudaError_t launch_avg_pool2d_grad<T>(const T*, T*, const PoolWindow&, cudaStream_t);                       \
  template cudaError_t launch_max_pool2d_with_argmax<T>(const T*, T*, std::uint8_t*, const PoolWindow&, cudaStream_t); \
  template cudaError_t launch_max_pool2d_with_argmax_grad<T>(const T*, const std::uint8_t*, T*, const PoolWindow&,     \
                                                             cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
