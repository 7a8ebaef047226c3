// CPU 3-D max and average pooling (NDHWC) and their gradients, with the 2-D kernels' rules
// (pool_kernels.cpp): windows follow TF's "same"/"valid" rule, padding is never read or counted.
#include <algorithm>
#include <limits>
#include <vector>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// The node's pooling windows over x (batch, d, h, w, c) giving (batch, od, oh, ow, c).
Window3D pool_window(const KernelContext& ctx, const Shape& x, const Shape& y) {
  const auto& pool = ctx.attrs().get_ints("pool_size");
  return make_window3d(ctx, x, pool.data(), y);
}

// The valid part of output (oz, oy, ox)'s window, axis by axis.
struct Box {
  window::Range r[3];
  std::int64_t count() const { return r[0].size() * r[1].size() * r[2].size(); }
};

Box window_box(const Window3D& w, std::int64_t oz, std::int64_t oy, std::int64_t ox) {
  const std::int64_t o[3] = {oz, oy, ox};
  Box b;
  for (int a = 0; a < 3; ++a) b.r[a] = window::window_inside(o[a], w.kernel[a], w.stride[a], w.pad[a], w.in[a]);
  return b;
}

// Calls fn(offset of voxel (iz, iy, ix) in its image) for the box's positions in (d, h, w) order;
// stops when fn returns false.
template <typename F>
void for_each_voxel(const Window3D& w, const Box& b, F&& fn) {
  for (std::int64_t iz = b.r[0].lo; iz < b.r[0].hi; ++iz)
    for (std::int64_t iy = b.r[1].lo; iy < b.r[1].hi; ++iy)
      for (std::int64_t ix = b.r[2].lo; ix < b.r[2].hi; ++ix)
        if (!fn(((iz * w.in[1] + iy) * w.in[2] + ix) * w.channels)) return;
}

std::int64_t image_size(const Window3D& w) { return w.in[0] * w.in[1] * w.in[2] * w.channels; }
std::int64_t out_plane(const Window3D& w) { return w.out[0] * w.out[1] * w.out[2]; }

// Images per chunk so that a chunk reads at least kElementwiseGrain elements.
std::int64_t image_grain(const Window3D& w) {
  const std::int64_t per_image =
      out_plane(w) * w.kernel[0] * w.kernel[1] * w.kernel[2] * std::max<std::int64_t>(1, w.channels);
  return std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, per_image));
}

// Calls fn(n, output voxel index within the batch, box) for every output voxel of images n0..n1.
template <typename F>
void for_each_output(const Window3D& w, std::int64_t n0, std::int64_t n1, F&& fn) {
  for (std::int64_t n = n0; n < n1; ++n)
    for (std::int64_t oz = 0; oz < w.out[0]; ++oz)
      for (std::int64_t oy = 0; oy < w.out[1]; ++oy)
        for (std::int64_t ox = 0; ox < w.out[2]; ++ox)
          fn(n, ((n * w.out[0] + oz) * w.out[1] + oy) * w.out[2] + ox, window_box(w, oz, oy, ox));
}

// x: (batch, d, h, w, c) -> y: the max over the valid part of each window (NaN propagates).
void max_pool3d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const Window3D w = pool_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::max_pool3d, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const std::int64_t c = w.channels;
    parallel_for(ctx, w.batch, image_grain(w), [&](std::int64_t n0, std::int64_t n1) {
      for_each_output(w, n0, n1, [&](std::int64_t n, std::int64_t o, const Box& b) {
        T* out = py + o * c;
        std::fill(out, out + c, -std::numeric_limits<T>::infinity());
        const T* image = px + n * image_size(w);
        for_each_voxel(w, b, [&](std::int64_t at) {
          for (std::int64_t e = 0; e < c; ++e) out[e] = image[at + e] > out[e] || image[at + e] != image[at + e] ? image[at + e] : out[e];
          return true;
        });
      });
    });
  });
}

// (dy, x, y) -> dx: each dy goes to the first position of its window (in (d, h, w) order) holding the max.
void max_pool3d_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& x = ctx.inputs[1];
  const Tensor& y = ctx.inputs[2];
  Tensor& dx = ctx.outputs[0];
  const Window3D w = pool_window(ctx, x.shape(), dy.shape());
  dispatch_floating(x.dtype(), op_names::max_pool3d_grad, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* pdx = dx.data<T>();
    const std::int64_t c = w.channels, image = image_size(w);
    parallel_for(ctx, w.batch, image_grain(w), [&](std::int64_t n0, std::int64_t n1) {
      std::fill(pdx + n0 * image, pdx + n1 * image, T(0));
      std::vector<T> done(static_cast<std::size_t>(c));  // (c,): 1 where the window's max was routed already
      for_each_output(w, n0, n1, [&](std::int64_t n, std::int64_t o, const Box& b) {
        std::fill(done.begin(), done.end(), T(0));
        for_each_voxel(w, b, [&](std::int64_t at) {
          route_max(px + n * image + at, py + o * c, pdy + o * c, pdx + n * image + at, done.data(), c);
          return true;
        });
      });
    });
  });
}

// x: (batch, d, h, w, c) -> y: the mean over the valid part of each window (padding not counted).
void avg_pool3d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const Window3D w = pool_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::avg_pool3d, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const std::int64_t c = w.channels;
    parallel_for(ctx, w.batch, image_grain(w), [&](std::int64_t n0, std::int64_t n1) {
      for_each_output(w, n0, n1, [&](std::int64_t n, std::int64_t o, const Box& b) {
        T* out = py + o * c;
        std::fill(out, out + c, T(0));
        const T* image = px + n * image_size(w);
        for_each_voxel(w, b, [&](std::int64_t at) {
          for (std::int64_t e = 0; e < c; ++e) out[e] += image[at + e];
          return true;
        });
        const T inv = T(1) / static_cast<T>(b.count());
        for (std::int64_t e = 0; e < c; ++e) out[e] *= inv;
      });
    });
  });
}

// (dy, x) -> dx: each dy spread evenly over the valid part of its window.
void avg_pool3d_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  const Window3D w = pool_window(ctx, dx.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::avg_pool3d_grad, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    const std::int64_t c = w.channels, image = image_size(w);
    parallel_for(ctx, w.batch, image_grain(w), [&](std::int64_t n0, std::int64_t n1) {
      std::fill(pdx + n0 * image, pdx + n1 * image, T(0));
      for_each_output(w, n0, n1, [&](std::int64_t n, std::int64_t o, const Box& b) {
        const T* g = pdy + o * c;
        const T inv = T(1) / static_cast<T>(b.count());
        for_each_voxel(w, b, [&](std::int64_t at) {
          T* d = pdx + n * image + at;
          for (std::int64_t e = 0; e < c; ++e) d[e] += g[e] * inv;
          return true;
        });
      });
    });
  });
}

}  // namespace

void register_pool3d_kernels() {
  register_kernel(op_names::max_pool3d, DeviceKind::cpu, max_pool3d_kernel);
  register_kernel(op_names::max_pool3d_grad, DeviceKind::cpu, max_pool3d_grad_kernel);
  register_kernel(op_names::avg_pool3d, DeviceKind::cpu, avg_pool3d_kernel);
  register_kernel(op_names::avg_pool3d_grad, DeviceKind::cpu, avg_pool3d_grad_kernel);
}

}  // namespace tower::cpu
