// CUDA resize kernels and their gradient, image_transform and rotation_transform (see image_launchers.h).
#include "tower/backends/cuda/image_launchers.h"
#include "tower/backends/cuda/launch.cuh"
#include "tower/core/image_transform.h"
#include "tower/core/resize.h"

namespace tower::cuda {

namespace {

__device__ inline resize::Taps taps(std::int64_t i, std::int64_t in, std::int64_t out, bool bilinear) {
  if (bilinear) return resize::bilinear_taps(i, in, out);
  const std::int64_t source = resize::nearest_source(i, in, out);
  return {source, source, 0.0f};
}

// The weight with which output i reads input `index` (0 when it does not).
__device__ inline float weight_of(const resize::Taps& t, std::int64_t index) {
  return (t.lower == index ? 1.0f - t.lerp : 0.0f) + (t.upper == index ? t.lerp : 0.0f);
}

// The outputs [first, last] that may read input `index`: those whose source lies within one input
// pixel of it, widened by two for rounding; the caller checks each exactly.
__device__ inline void candidates(std::int64_t index, std::int64_t in, std::int64_t out, std::int64_t* first,
                                  std::int64_t* last) {
  const double per_output = static_cast<double>(in) / static_cast<double>(out);
  const auto lo = static_cast<std::int64_t>(floor((index - 1.0) / per_output)) - 2;
  const auto hi = static_cast<std::int64_t>(ceil((index + 2.0) / per_output)) + 2;
  *first = lo < 0 ? 0 : lo;
  *last = hi > out - 1 ? out - 1 : hi;
}

template <typename T>
__global__ void resize_kernel(const T* x, T* y, ResizeGeometry g) {
  const std::int64_t n_out = g.batch * g.out_h * g.out_w * g.channels;
  TOWER_GRID_STRIDE(i, n_out) {
    const std::int64_t c = i % g.channels, ox = i / g.channels % g.out_w, oy = i / (g.channels * g.out_w) % g.out_h;
    const std::int64_t n = i / (g.channels * g.out_w * g.out_h);
    const resize::Taps ty = taps(oy, g.in_h, g.out_h, g.bilinear), tx = taps(ox, g.in_w, g.out_w, g.bilinear);
    const T* image = x + n * g.in_h * g.in_w * g.channels + c;
    const T tl = image[(ty.lower * g.in_w + tx.lower) * g.channels], tr = image[(ty.lower * g.in_w + tx.upper) * g.channels];
    const T bl = image[(ty.upper * g.in_w + tx.lower) * g.channels], br = image[(ty.upper * g.in_w + tx.upper) * g.channels];
    const T xl = static_cast<T>(tx.lerp), yl = static_cast<T>(ty.lerp);
    const T top = tl + (tr - tl) * xl, bottom = bl + (br - bl) * xl;
    y[i] = top + (bottom - top) * yl;
  }
}

template <typename T>
__global__ void resize_grad_kernel(const T* dy, T* dx, ResizeGeometry g) {
  const std::int64_t n_in = g.batch * g.in_h * g.in_w * g.channels;
  TOWER_GRID_STRIDE(i, n_in) {
    const std::int64_t c = i % g.channels, ix = i / g.channels % g.in_w, iy = i / (g.channels * g.in_w) % g.in_h;
    const std::int64_t n = i / (g.channels * g.in_w * g.in_h);
    std::int64_t oy0, oy1, ox0, ox1;
    candidates(iy, g.in_h, g.out_h, &oy0, &oy1);
    candidates(ix, g.in_w, g.out_w, &ox0, &ox1);
    T sum = 0;
    for (std::int64_t oy = oy0; oy <= oy1; ++oy) {
      const float wy = weight_of(taps(oy, g.in_h, g.out_h, g.bilinear), iy);
      if (wy == 0.0f) continue;
      const T* row = dy + ((n * g.out_h + oy) * g.out_w) * g.channels + c;
      for (std::int64_t ox = ox0; ox <= ox1; ++ox) {
        const float wx = weight_of(taps(ox, g.in_w, g.out_w, g.bilinear), ix);
        if (wx != 0.0f) sum += row[ox * g.channels] * static_cast<T>(wy) * static_cast<T>(wx);
      }
    }
    dx[i] = sum;
  }
}

template <typename T>
__global__ void image_transform_kernel(const T* x, const T* transforms, T* y, TransformGeometry g) {
  const std::int64_t n_out = g.batch * g.out_h * g.out_w * g.channels;
  TOWER_GRID_STRIDE(i, n_out) {
    const std::int64_t c = i % g.channels, ox = i / g.channels % g.out_w, oy = i / (g.channels * g.out_w) % g.out_h;
    const std::int64_t n = i / (g.channels * g.out_w * g.out_h);
    float t[8];
    for (int k = 0; k < 8; ++k) t[k] = static_cast<float>(transforms[n * 8 + k]);
    y[i] = static_cast<T>(image_transform::transformed_pixel(x + n * g.in_h * g.in_w * g.channels, g.in_h, g.in_w,
                                                             g.channels, c, t, ox, oy, g.bilinear,
                                                             static_cast<image_transform::FillMode>(g.fill_mode),
                                                             g.fill_value));
  }
}

template <typename T>
__global__ void rotation_transform_kernel(const T* angles, T* transforms, std::int64_t batch, std::int64_t height,
                                          std::int64_t width) {
  TOWER_GRID_STRIDE(n, batch) {
    float t[8];
    image_transform::rotation_matrix(static_cast<float>(angles[n]), height, width, t);
    for (int k = 0; k < 8; ++k) transforms[n * 8 + k] = static_cast<T>(t[k]);
  }
}

}  // namespace

template <typename T>
cudaError_t launch_image_transform(const T* x, const T* transforms, T* y, const TransformGeometry& g,
                                   cudaStream_t stream) {
  const std::int64_t n = g.batch * g.out_h * g.out_w * g.channels;
  if (n == 0) return cudaSuccess;
  image_transform_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, transforms, y, g);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_rotation_transform(const T* angles, T* transforms, std::int64_t batch, std::int64_t height,
                                      std::int64_t width, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  rotation_transform_kernel<T><<<blocks_for(batch), kThreads, 0, stream>>>(angles, transforms, batch, height, width);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_resize(const T* x, T* y, const ResizeGeometry& g, cudaStream_t stream) {
  const std::int64_t n = g.batch * g.out_h * g.out_w * g.channels;
  if (n == 0) return cudaSuccess;
  resize_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, g);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_resize_grad(const T* dy, T* dx, const ResizeGeometry& g, cudaStream_t stream) {
  const std::int64_t n = g.batch * g.in_h * g.in_w * g.channels;
  if (n == 0) return cudaSuccess;
  resize_grad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(dy, dx, g);
  return cudaGetLastError();
}

#define TOWER_INSTANTIATE(T)                                                                   \
  template cudaError_t launch_resize<T>(const T*, T*, const ResizeGeometry&, cudaStream_t); \
  template cudaError_t launch_resize_grad<T>(const T*, T*, const ResizeGeometry&, cudaStream_t);           \
  template cudaError_t launch_image_transform<T>(const T*, const T*, T*, const TransformGeometry&, cudaStream_t); \
  template cudaError_t launch_rotation_transform<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t, \
                                                    cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
