// CPU 2-D max and average pooling (NHWC) and their gradients; windows follow TF's "same"/"valid" rule.
#include <algorithm>
#include <limits>
#include <vector>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// The pooling window of the node over x (batch, h, w, c) giving (batch, out_h, out_w, c).
Window2D pool_window(const KernelContext& ctx, const Shape& x, const Shape& y) {
  const auto& pool = ctx.attrs().get_ints("pool_size");
  return make_window(ctx, x, pool[0], pool[1], y[1], y[2]);
}

// The valid part [y0, y1) x [x0, x1) of the window of output (oy, ox): padding is never read.
struct Span {
  std::int64_t y0, y1, x0, x1;
  std::int64_t count() const { return (y1 - y0) * (x1 - x0); }
};

Span window_span(const Window2D& w, std::int64_t oy, std::int64_t ox) {
  const window::Range ry = window::window_inside(oy, w.kernel_h, w.stride_h, w.pad_top, w.in_h);
  const window::Range rx = window::window_inside(ox, w.kernel_w, w.stride_w, w.pad_left, w.in_w);
  return {ry.lo, ry.hi, rx.lo, rx.hi};
}

// Output rows (n, oy) per chunk so that a chunk reads at least kElementwiseGrain elements.
std::int64_t row_grain(const Window2D& w) {
  return std::max<std::int64_t>(
      1, kElementwiseGrain / std::max<std::int64_t>(1, w.out_w * w.kernel_h * w.kernel_w * w.channels));
}

// Images per chunk for the gradients, which split over images so windows of two chunks never overlap.
std::int64_t image_grain(const Window2D& w) {
  return std::max<std::int64_t>(1, row_grain(w) / std::max<std::int64_t>(1, w.out_h));
}

// x: (batch, h, w, c) -> y: (batch, out_h, out_w, c); max over the valid part of each window.
void max_pool2d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const Window2D w = pool_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::max_pool2d, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const std::int64_t c = w.channels;
    parallel_for(ctx, w.batch * w.out_h, row_grain(w), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t row = lo; row < hi; ++row) {
        const std::int64_t n = row / w.out_h, oy = row % w.out_h;
        const T* image = px + n * w.in_h * w.in_w * c;
        for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
          T* out = py + (row * w.out_w + ox) * c;
          std::fill(out, out + c, -std::numeric_limits<T>::infinity());
          const Span s = window_span(w, oy, ox);
          for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
            for (std::int64_t ix = s.x0; ix < s.x1; ++ix) {
              const T* in = image + (iy * w.in_w + ix) * c;
              for (std::int64_t e = 0; e < c; ++e) out[e] = in[e] > out[e] || in[e] != in[e] ? in[e] : out[e];
            }
        }
      }
    });
  });
}

// (dy, x, y) -> dx: each dy goes to the first position of its window (row-major) holding the max,
// as TF routes it.
void max_pool2d_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& x = ctx.inputs[1];
  const Tensor& y = ctx.inputs[2];
  Tensor& dx = ctx.outputs[0];
  const Window2D w = pool_window(ctx, x.shape(), dy.shape());
  dispatch_floating(x.dtype(), op_names::max_pool2d_grad, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* pdx = dx.data<T>();
    const std::int64_t c = w.channels, image = w.in_h * w.in_w * c;
    // Windows that tile x (stride = pool size, as by default) write each position they cover once;
    // only the rows and columns past the last window are zeroed. Others add into a zeroed dx.
    const bool tiles = w.stride_h == w.kernel_h && w.stride_w == w.kernel_w;
    const std::int64_t covered_h = std::clamp<std::int64_t>(w.out_h * w.stride_h - w.pad_top, 0, w.in_h);
    const std::int64_t covered_w = std::clamp<std::int64_t>(w.out_w * w.stride_w - w.pad_left, 0, w.in_w);
    parallel_for(ctx, w.batch, image_grain(w), [&](std::int64_t n0, std::int64_t n1) {
      if (!tiles) std::fill(pdx + n0 * image, pdx + n1 * image, T(0));
      std::vector<T> found(static_cast<std::size_t>(c));  // (c,): 1 where the window's max was routed already
      T* done = found.data();
      for (std::int64_t n = n0; n < n1; ++n) {
        if (tiles) {
          T* dx = pdx + n * image;
          for (std::int64_t iy = 0; iy < covered_h; ++iy)
            std::fill(dx + (iy * w.in_w + covered_w) * c, dx + (iy + 1) * w.in_w * c, T(0));
          std::fill(dx + covered_h * w.in_w * c, dx + image, T(0));
        }
        for (std::int64_t oy = 0; oy < w.out_h; ++oy)
          for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
            const std::int64_t o = ((n * w.out_h + oy) * w.out_w + ox) * c;
            const T* max = py + o;
            const T* grad = pdy + o;
            std::fill(done, done + c, T(0));
            const Span s = window_span(w, oy, ox);
            for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
              for (std::int64_t ix = s.x0; ix < s.x1; ++ix) {
                const std::int64_t i = n * image + (iy * w.in_w + ix) * c;
                if (tiles)
                  route_max<false>(px + i, max, grad, pdx + i, done, c);
                else
                  route_max(px + i, max, grad, pdx + i, done, c);
              }
          }
      }
    });
  });
}

// x: (batch, h, w, c) -> y: the mean over the valid part of each window (padding not counted).
void avg_pool2d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const Window2D w = pool_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::avg_pool2d, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const std::int64_t c = w.channels;
    parallel_for(ctx, w.batch * w.out_h, row_grain(w), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t row = lo; row < hi; ++row) {
        const std::int64_t n = row / w.out_h, oy = row % w.out_h;
        const T* image = px + n * w.in_h * w.in_w * c;
        for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
          T* out = py + (row * w.out_w + ox) * c;
          std::fill(out, out + c, T(0));
          const Span s = window_span(w, oy, ox);
          for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
            for (std::int64_t ix = s.x0; ix < s.x1; ++ix) {
              const T* in = image + (iy * w.in_w + ix) * c;
              for (std::int64_t e = 0; e < c; ++e) out[e] += in[e];
            }
          const T inv = T(1) / static_cast<T>(s.count());
          for (std::int64_t e = 0; e < c; ++e) out[e] *= inv;
        }
      }
    });
  });
}

// (dy, x) -> dx: each dy spread evenly over the valid part of its window.
void avg_pool2d_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  const Window2D w = pool_window(ctx, dx.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::avg_pool2d_grad, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    const std::int64_t c = w.channels, image = w.in_h * w.in_w * c;
    parallel_for(ctx, w.batch, image_grain(w), [&](std::int64_t n0, std::int64_t n1) {
      std::fill(pdx + n0 * image, pdx + n1 * image, T(0));
      for (std::int64_t n = n0; n < n1; ++n)
        for (std::int64_t oy = 0; oy < w.out_h; ++oy)
          for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
            const T* g = pdy + ((n * w.out_h + oy) * w.out_w + ox) * c;
            const Span s = window_span(w, oy, ox);
            const T inv = T(1) / static_cast<T>(s.count());
            for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
              for (std::int64_t ix = s.x0; ix < s.x1; ++ix) {
                T* d = pdx + n * image + (iy * w.in_w + ix) * c;
                for (std::int64_t e = 0; e < c; ++e) d[e] += g[e] * inv;
              }
          }
    });
  });
}

}  // namespace

void register_pool_kernels() {
  register_kernel(op_names::max_pool2d, DeviceKind::cpu, max_pool2d_kernel);
  register_kernel(op_names::max_pool2d_grad, DeviceKind::cpu, max_pool2d_grad_kernel);
  register_kernel(op_names::avg_pool2d, DeviceKind::cpu, avg_pool2d_kernel);
  register_kernel(op_names::avg_pool2d_grad, DeviceKind::cpu, avg_pool2d_grad_kernel);
}

}  // namespace tower::cpu
