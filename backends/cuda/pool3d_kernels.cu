// CUDA 3-D max and average pooling (NDHWC) and their gradients, with the CPU's semantics
// (backends/cpu/pool3d_kernels.cpp). As the 2-D kernels, the gradients gather (one thread per dx
// element, summing the windows that contain it in output order): deterministic, no atomics.
#include <cmath>

#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/pool3d_launchers.h"
#include "tower/core/window.h"

namespace tower::cuda {

namespace {

using window::Range;

// The part of an output voxel's window inside x, axis by axis.
struct Box {
  Range r[3];
  __device__ std::int64_t count() const { return r[0].size() * r[1].size() * r[2].size(); }
};

__device__ Box window_box(const Pool3DWindow& w, const std::int64_t* o) {
  Box b;
  for (int a = 0; a < 3; ++a) b.r[a] = window::window_inside(o[a], w.kernel[a], w.stride[a], w.pad[a], w.in[a]);
  return b;
}

// Element i of an NDHWC tensor (batch, s[0], s[1], s[2], c) as n, p[3] and channel e.
struct Ndhwc {
  std::int64_t n, p[3], e;
};

__device__ Ndhwc split(std::int64_t i, const std::int64_t* s, std::int64_t c) {
  Ndhwc r;
  r.e = i % c;
  std::int64_t v = i / c;
  r.p[2] = v % s[2];
  v /= s[2];
  r.p[1] = v % s[1];
  v /= s[1];
  r.p[0] = v % s[0];
  r.n = v / s[0];
  return r;
}

__device__ std::int64_t voxel(const std::int64_t* s, std::int64_t z, std::int64_t y, std::int64_t x) {
  return (z * s[1] + y) * s[2] + x;
}

template <typename T>
__global__ void max_pool3d_kernel(const T* x, T* y, Pool3DWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.out[0] * w.out[1] * w.out[2] * w.channels) {
    const Ndhwc o = split(i, w.out, w.channels);
    const Box b = window_box(w, o.p);
    const T* image = x + o.n * w.in[0] * w.in[1] * w.in[2] * w.channels + o.e;
    T m = -INFINITY;
    for (std::int64_t iz = b.r[0].lo; iz < b.r[0].hi; ++iz)
      for (std::int64_t iy = b.r[1].lo; iy < b.r[1].hi; ++iy)
        for (std::int64_t ix = b.r[2].lo; ix < b.r[2].hi; ++ix) {
          const T v = image[voxel(w.in, iz, iy, ix) * w.channels];
          m = v > m || v != v ? v : m;
        }
    y[i] = m;
  }
}

// argmax[i]: the input voxel of the first element of output i's window equal to y[i], -1 when none.
template <typename T>
__global__ void max_pool3d_argmax_kernel(const T* x, const T* y, std::int64_t* argmax, Pool3DWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.out[0] * w.out[1] * w.out[2] * w.channels) {
    const Ndhwc o = split(i, w.out, w.channels);
    const Box b = window_box(w, o.p);
    const T* image = x + o.n * w.in[0] * w.in[1] * w.in[2] * w.channels + o.e;
    std::int64_t found = -1;
    for (std::int64_t iz = b.r[0].lo; iz < b.r[0].hi && found < 0; ++iz)
      for (std::int64_t iy = b.r[1].lo; iy < b.r[1].hi && found < 0; ++iy)
        for (std::int64_t ix = b.r[2].lo; ix < b.r[2].hi; ++ix)
          if (image[voxel(w.in, iz, iy, ix) * w.channels] == y[i]) {
            found = voxel(w.in, iz, iy, ix);
            break;
          }
    argmax[i] = found;
  }
}

// The outputs of each axis whose windows contain input position p.
__device__ void containing(const Pool3DWindow& w, const std::int64_t* p, Range* r) {
  for (int a = 0; a < 3; ++a) r[a] = window::windows_containing(p[a], w.kernel[a], w.stride[a], w.pad[a], w.out[a]);
}

template <typename T>
__global__ void max_pool3d_grad_kernel(const T* dy, const std::int64_t* argmax, T* dx, Pool3DWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.in[0] * w.in[1] * w.in[2] * w.channels) {
    const Ndhwc p = split(i, w.in, w.channels);
    Range r[3];
    containing(w, p.p, r);
    const std::int64_t position = voxel(w.in, p.p[0], p.p[1], p.p[2]);
    T acc = 0;
    for (std::int64_t oz = r[0].lo; oz < r[0].hi; ++oz)
      for (std::int64_t oy = r[1].lo; oy < r[1].hi; ++oy)
        for (std::int64_t ox = r[2].lo; ox < r[2].hi; ++ox) {
          const std::int64_t o = (p.n * w.out[0] * w.out[1] * w.out[2] + voxel(w.out, oz, oy, ox)) * w.channels + p.e;
          if (argmax[o] == position) acc += dy[o];
        }
    dx[i] = acc;
  }
}

template <typename T>
__global__ void avg_pool3d_kernel(const T* x, T* y, Pool3DWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.out[0] * w.out[1] * w.out[2] * w.channels) {
    const Ndhwc o = split(i, w.out, w.channels);
    const Box b = window_box(w, o.p);
    const T* image = x + o.n * w.in[0] * w.in[1] * w.in[2] * w.channels + o.e;
    T sum = 0;
    for (std::int64_t iz = b.r[0].lo; iz < b.r[0].hi; ++iz)
      for (std::int64_t iy = b.r[1].lo; iy < b.r[1].hi; ++iy)
        for (std::int64_t ix = b.r[2].lo; ix < b.r[2].hi; ++ix) sum += image[voxel(w.in, iz, iy, ix) * w.channels];
    y[i] = sum * (T(1) / static_cast<T>(b.count()));
  }
}

template <typename T>
__global__ void avg_pool3d_grad_kernel(const T* dy, T* dx, Pool3DWindow w) {
  TOWER_GRID_STRIDE(i, w.batch * w.in[0] * w.in[1] * w.in[2] * w.channels) {
    const Ndhwc p = split(i, w.in, w.channels);
    Range r[3];
    containing(w, p.p, r);
    T acc = 0;
    for (std::int64_t oz = r[0].lo; oz < r[0].hi; ++oz)
      for (std::int64_t oy = r[1].lo; oy < r[1].hi; ++oy)
        for (std::int64_t ox = r[2].lo; ox < r[2].hi; ++ox) {
          const std::int64_t o = (p.n * w.out[0] * w.out[1] * w.out[2] + voxel(w.out, oz, oy, ox)) * w.channels + p.e;
          const std::int64_t at[3] = {oz, oy, ox};
          acc += dy[o] * (T(1) / static_cast<T>(window_box(w, at).count()));
        }
    dx[i] = acc;
  }
}

bool valid(const Pool3DWindow& w) {
  for (int a = 0; a < 3; ++a)
    if (w.kernel[a] < 1 || w.stride[a] < 1 || w.pad[a] < 0) return false;
  return true;
}

std::int64_t outputs(const Pool3DWindow& w) { return w.batch * w.out[0] * w.out[1] * w.out[2] * w.channels; }
std::int64_t inputs(const Pool3DWindow& w) { return w.batch * w.in[0] * w.in[1] * w.in[2] * w.channels; }

}  // namespace

template <typename T>
cudaError_t launch_max_pool3d(const T* x, T* y, const Pool3DWindow& w, cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t n = outputs(w);
  if (n == 0) return cudaSuccess;
  max_pool3d_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_max_pool3d_grad(const T* dy, const T* x, const T* y, T* dx, std::int64_t* argmax,
                                   const Pool3DWindow& w, cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  if (inputs(w) == 0) return cudaSuccess;
  if (outputs(w) > 0) {
    max_pool3d_argmax_kernel<T><<<blocks_for(outputs(w)), kThreads, 0, stream>>>(x, y, argmax, w);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  }
  max_pool3d_grad_kernel<T><<<blocks_for(inputs(w)), kThreads, 0, stream>>>(dy, argmax, dx, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_avg_pool3d(const T* x, T* y, const Pool3DWindow& w, cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t n = outputs(w);
  if (n == 0) return cudaSuccess;
  avg_pool3d_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, w);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_avg_pool3d_grad(const T* dy, T* dx, const Pool3DWindow& w, cudaStream_t stream) {
  if (!valid(w)) return cudaErrorInvalidValue;
  const std::int64_t n = inputs(w);
  if (n == 0) return cudaSuccess;
  avg_pool3d_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(dy, dx, w);
  return cudaGetLastError();
}

#define TOWER_INSTANTIATE(T)                                                                                   \
  template cudaError_t launch_max_pool3d<T>(const T*, T*, const Pool3DWindow&, cudaStream_t);                 \
  template cudaError_t launch_max_pool3d_grad<T>(const T*, const T*, const T*, T*, std::int64_t*,             \
                                                 const Pool3DWindow&, cudaStream_t);                          \
  template cudaError_t launch_avg_pool3d<T>(const T*, T*, const Pool3DWindow&, cudaStream_t);                 \
  template cudaError_t launch_avg_pool3d_grad<T>(const T*, T*, const Pool3DWindow&, cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
