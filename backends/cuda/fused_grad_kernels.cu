// CUDA max_pool2d_with_argmax and its gradient (NHWC), with the CPU's semantics
// (backends/cpu/pool_kernels.cpp): the argmax is the window position of the first element equal to
// the max, 255 for a NaN max, and the gradient gathers per dx element in output order.
#include <cmath>

#include "tower/backends/cuda/fused_grad_launchers.h"
#include "tower/backends/cuda/launch.cuh"
#include "tower/core/window.h"

namespace tower::cuda {

namespace {

constexpr std::uint8_t kNoArgmax = 255;

template <typename T>
__global__ void max_pool2d_with_argmax_kernel(const T* x, T* y, std::uint8_t* argmax, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.out_h * w.out_w * w.channels) {
    const std::int64_t e = i % w.channels, pixel = i / w.channels;
    const std::int64_t ox = pixel % w.out_w, oy = (pixel / w.out_w) % w.out_h, n = pixel / (w.out_w * w.out_h);
    const window::Range ry = window::window_inside(oy, w.kernel_h, w.stride_h, w.pad_top, w.in_h);
    const window::Range rx = window::window_inside(ox, w.kernel_w, w.stride_w, w.pad_left, w.in_w);
    const std::int64_t top = oy * w.stride_h - w.pad_top, left = ox * w.stride_w - w.pad_left;
    const T* image = x + n * w.in_h * w.in_w * w.channels + e;
    T m = image[(ry.lo * w.in_w + rx.lo) * w.channels];
    std::int64_t best = (ry.lo - top) * w.kernel_w + (rx.lo - left);
    for (std::int64_t iy = ry.lo; iy < ry.hi; ++iy)
      for (std::int64_t ix = rx.lo; ix < rx.hi; ++ix) {
        const T v = image[(iy * w.in_w + ix) * w.channels];
        if (v > m || v != v) m = v, best = (iy - top) * w.kernel_w + (ix - left);
      }
    y[i] = m;
    argmax[i] = m != m ? kNoArgmax : static_cast<std::uint8_t>(best);
  }
}

template <typename T>
__global__ void max_pool2d_with_argmax_grad_kernel(const T* dy, const std::uint8_t* argmax, T* dx, PoolWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.in_h * w.in_w * w.channels) {
    const std::int64_t e = i % w.channels, pixel = i / w.channels;
    const std::int64_t px = pixel % w.in_w, py = (pixel / w.in_w) % w.in_h, n = pixel / (w.in_w * w.in_h);
    const window::Range ry = window::windows_containing(py, w.kernel_h, w.stride_h, w.pad_top, w.out_h);
    const window::Range rx = window::windows_containing(px, w.kernel_w, w.stride_w, w.pad_left, w.out_w);
    T acc = 0;
    for (std::int64_t oy = ry.lo; oy < ry.hi; ++oy)
      for (std::int64_t ox = rx.lo; ox < rx.hi; ++ox) {
        const std::int64_t o = ((n * w.out_h + oy) * w.out_w + ox) * w.channels + e;
        const std::int64_t at = (py - (oy * w.stride_h - w.pad_top)) * w.kernel_w + (px - (ox * w.stride_w - w.pad_left));
        acc += argmax[o] == at ? dy[o] : T(0);
      }
    dx[i] = acc;
  }
}

bool valid(const PoolWindow& w) {
  return w.kernel_h > 0 && w.kernel_w > 0 && w.kernel_h * w.kernel_w <= kNoArgmax && w.stride_h > 0 &&
         w.stride_w > 0 && w.pad_top >= 0 && w.pad_left >= 0;
}

}  // namespace

template <typename T>
cudaError_t launch_max_pool2d_with_argmax(const T* x, T* y, std::uint8_t* argmax, const PoolWindow& w,
                                          cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t n = w.batch * w.out_h * w.out_w * w.channels;
  if (n == 0) return cudaSuccess;
  max_pool2d_with_argmax_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, argmax, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_max_pool2d_with_argmax_grad(const T* dy, const std::uint8_t* argmax, T* dx, const PoolWindow& w,
                                               cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t n = w.batch * w.in_h * w.in_w * w.channels;
  if (n == 0) return cudaSuccess;
  max_pool2d_with_argmax_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(dy, argmax, dx, w);
  return cudaGetLastError();
}

#define TOWER_INSTANTIATE(T)                                                                                   \
  template cudaError_t launch_max_pool2d_with_argmax<T>(const T*, T*, std::uint8_t*, const PoolWindow&,        \
                                                        cudaStream_t);                                         \
  template cudaError_t launch_max_pool2d_with_argmax_grad<T>(const T*, const std::uint8_t*, T*, const PoolWindow&, \
                                                             cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
