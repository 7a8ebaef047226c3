// CPU 2-D max (with its argmax too) and average pooling (NHWC) and their gradients; windows follow TF's "same"/"valid" rule.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/backends/cpu/vector_math.h"
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

constexpr std::uint8_t kNoArgmax = 255;  // max_pool2d_with_argmax's mark for a NaN window

// max_pool2d_with_argmax's rule, one element at a time: a later element v wins over the max so far
// if greater or NaN (as max_pool2d takes it). The elements before the winner are all smaller (or -0/+0
// equal to it), so the winner is the first element equal to y, where max_pool2d_grad routes dy; where
// y is NaN it routes nothing (no element equals NaN): kNoArgmax.
template <typename T>
inline void take_max(T v, std::int32_t p, T& m, std::int32_t& at) {
  const bool take = v > m || v != v;
  m = take ? v : m;
  at = take ? p : at;
}

template <typename T>
inline std::uint8_t argmax_of(T m, std::int32_t at) {
  return m != m ? kNoArgmax : static_cast<std::uint8_t>(at);
}

// A row of ow 2x2 windows at stride 2 inside x (mnist_cnn's pooling): window ox reads columns 2 ox and
// 2 ox + 1 of the rows `upper` and `lower` (c channels each), positions 0, 1 (upper), 2, 3 (lower).
template <typename T>
TOWER_CPU_CLONES void max_row_2x2(const T* __restrict upper, const T* __restrict lower, std::int64_t ow,
                                  std::int64_t c, T* __restrict y, std::uint8_t* __restrict argmax) {
  for (std::int64_t ox = 0; ox < ow; ++ox) {
    const T* __restrict u = upper + 2 * ox * c;
    const T* __restrict l = lower + 2 * ox * c;
    T* __restrict out = y + ox * c;
    std::uint8_t* __restrict a = argmax + ox * c;
    for (std::int64_t e = 0; e < c; ++e) {
      T m = u[e];
      std::int32_t at = 0;
      take_max(u[c + e], 1, m, at);
      take_max(l[e], 2, m, at);
      take_max(l[c + e], 3, m, at);
      out[e] = m;
      a[e] = argmax_of(m, at);
    }
  }
}

// One position (index p) of any window over c channels, after the first (y = x, best = p).
template <typename T>
TOWER_CPU_CLONES void max_step(const T* __restrict x, std::int32_t p, T* __restrict y, std::int32_t* __restrict best,
                               std::int64_t c) {
  for (std::int64_t e = 0; e < c; ++e) take_max(x[e], p, y[e], best[e]);
}

// x: (batch, h, w, c) -> {y, argmax} (batch, out_h, out_w, c): max_pool2d's y, and where each max is.
void max_pool2d_with_argmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const Window2D w = pool_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::max_pool2d_with_argmax, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    std::uint8_t* pa = ctx.outputs[1].data<std::uint8_t>();
    const std::int64_t c = w.channels;
    // 2x2 windows at stride 2 from the corner: the windows that lie inside x take max_row_2x2; the
    // others (a "same" padding's last row or column, other windows) one position at a time.
    const bool two_by_two = w.kernel_h == 2 && w.kernel_w == 2 && w.stride_h == 2 && w.stride_w == 2 &&
                            w.pad_top == 0 && w.pad_left == 0;
    const std::int64_t inside_w = two_by_two ? std::min(w.out_w, w.in_w / 2) : 0;
    parallel_for(ctx, w.batch * w.out_h, row_grain(w), [&](std::int64_t lo, std::int64_t hi) {
      std::vector<std::int32_t> best(static_cast<std::size_t>(c));
      for (std::int64_t row = lo; row < hi; ++row) {
        const std::int64_t n = row / w.out_h, oy = row % w.out_h;
        const T* image = px + n * w.in_h * w.in_w * c;
        std::int64_t ox = 0;
        if (two_by_two && 2 * oy + 1 < w.in_h) {
          const T* upper = image + 2 * oy * w.in_w * c;
          max_row_2x2(upper, upper + w.in_w * c, inside_w, c, py + row * w.out_w * c, pa + row * w.out_w * c);
          ox = inside_w;
        }
        for (; ox < w.out_w; ++ox) {
          const Span s = window_span(w, oy, ox);
          const std::int64_t top = oy * w.stride_h - w.pad_top, left = ox * w.stride_w - w.pad_left;
          const std::int64_t o = (row * w.out_w + ox) * c;
          bool first = true;
          for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
            for (std::int64_t ix = s.x0; ix < s.x1; ++ix) {
              const T* in = image + (iy * w.in_w + ix) * c;
              const auto p = static_cast<std::int32_t>((iy - top) * w.kernel_w + (ix - left));
              if (first) {
                std::copy(in, in + c, py + o);
                std::fill(best.begin(), best.end(), p);
                first = false;
              } else {
                max_step(in, p, py + o, best.data(), c);
              }
            }
          for (std::int64_t e = 0; e < c; ++e) pa[o + e] = argmax_of(py[o + e], best[static_cast<std::size_t>(e)]);
        }
      }
    });
  });
}

// One window of max_pool2d_with_argmax_grad over c channels: out[k] (the window's positions, index
// pos[k]) = 0 + dy where the argmax names pos[k], else 0, or that added to out[k] (kAdd: windows that
// overlap).
template <bool kAdd, typename T>
TOWER_CPU_CLONES void route_argmax(const T* __restrict grad, const std::uint8_t* __restrict at, T* const* out,
                                   const std::uint8_t* pos, std::int64_t count, std::int64_t c) {
  for (std::int64_t k = 0; k < count; ++k) {
    T* __restrict o = out[k];
    const std::uint8_t p = pos[k];
    for (std::int64_t e = 0; e < c; ++e) o[e] = (kAdd ? o[e] : T(0)) + (at[e] == p ? grad[e] : T(0));
  }
}

// A row of ow 2x2 windows at stride 2 inside dx, as max_row_2x2: dx's rows `upper` and `lower` get
// 0 + dy where the argmax names the position, else 0.
template <typename T>
TOWER_CPU_CLONES void route_row_2x2(const T* __restrict grad, const std::uint8_t* __restrict at, std::int64_t ow,
                                    std::int64_t c, T* __restrict upper, T* __restrict lower) {
  for (std::int64_t ox = 0; ox < ow; ++ox) {
    const T* __restrict g = grad + ox * c;
    const std::uint8_t* __restrict a = at + ox * c;
    T* __restrict u = upper + 2 * ox * c;
    T* __restrict l = lower + 2 * ox * c;
    for (std::int64_t e = 0; e < c; ++e) {
      const T v = g[e];
      const std::uint8_t p = a[e];
      u[e] = T(0) + (p == 0 ? v : T(0));
      u[c + e] = T(0) + (p == 1 ? v : T(0));
      l[e] = T(0) + (p == 2 ? v : T(0));
      l[c + e] = T(0) + (p == 3 ? v : T(0));
    }
  }
}

// (dy, argmax) -> dx (batch, input_hw, c): each dy added to its argmax's position, windows in output
// order over a zeroed dx; windows that tile x (stride = pool size) write the positions they cover once
// (0 + the routed dy, as max_pool2d_grad) and only the rest is zeroed.
void max_pool2d_with_argmax_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const std::uint8_t* pa = ctx.inputs[1].data<std::uint8_t>();
  Tensor& dx = ctx.outputs[0];
  const Window2D w = pool_window(ctx, dx.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::max_pool2d_with_argmax_grad, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    const std::int64_t c = w.channels, image = w.in_h * w.in_w * c;
    const bool tiles = w.stride_h == w.kernel_h && w.stride_w == w.kernel_w;
    const std::int64_t covered_h = std::clamp<std::int64_t>(w.out_h * w.stride_h - w.pad_top, 0, w.in_h);
    const std::int64_t covered_w = std::clamp<std::int64_t>(w.out_w * w.stride_w - w.pad_left, 0, w.in_w);
    // 2x2 windows at stride 2 inside dx: a row at a time (route_row_2x2), as the forward kernel.
    const bool two_by_two = w.kernel_h == 2 && w.kernel_w == 2 && w.stride_h == 2 && w.stride_w == 2 &&
                            w.pad_top == 0 && w.pad_left == 0;
    const std::int64_t inside_w = two_by_two ? std::min(w.out_w, w.in_w / 2) : 0;
    parallel_for(ctx, w.batch, image_grain(w), [&](std::int64_t n0, std::int64_t n1) {
      if (!tiles) std::fill(pdx + n0 * image, pdx + n1 * image, T(0));
      std::vector<T*> out(static_cast<std::size_t>(w.kernel_h * w.kernel_w));
      std::vector<std::uint8_t> pos(out.size());
      for (std::int64_t n = n0; n < n1; ++n) {
        if (tiles) {
          T* d = pdx + n * image;
          for (std::int64_t iy = 0; iy < covered_h; ++iy)
            std::fill(d + (iy * w.in_w + covered_w) * c, d + (iy + 1) * w.in_w * c, T(0));
          std::fill(d + covered_h * w.in_w * c, d + image, T(0));
        }
        for (std::int64_t oy = 0; oy < w.out_h; ++oy) {
          std::int64_t ox = 0;
          if (two_by_two && 2 * oy + 1 < w.in_h) {
            const std::int64_t o = (n * w.out_h + oy) * w.out_w * c;
            T* upper = pdx + n * image + 2 * oy * w.in_w * c;
            route_row_2x2(pdy + o, pa + o, inside_w, c, upper, upper + w.in_w * c);
            ox = inside_w;
          }
          for (; ox < w.out_w; ++ox) {
            const std::int64_t o = ((n * w.out_h + oy) * w.out_w + ox) * c;
            const Span s = window_span(w, oy, ox);
            const std::int64_t top = oy * w.stride_h - w.pad_top, left = ox * w.stride_w - w.pad_left;
            std::int64_t count = 0;
            for (std::int64_t iy = s.y0; iy < s.y1; ++iy)
              for (std::int64_t ix = s.x0; ix < s.x1; ++ix, ++count) {
                out[static_cast<std::size_t>(count)] = pdx + n * image + (iy * w.in_w + ix) * c;
                pos[static_cast<std::size_t>(count)] = static_cast<std::uint8_t>((iy - top) * w.kernel_w + (ix - left));
              }
            if (tiles)
              route_argmax<false>(pdy + o, pa + o, out.data(), pos.data(), count, c);
            else
              route_argmax<true>(pdy + o, pa + o, out.data(), pos.data(), count, c);
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
  register_kernel(op_names::max_pool2d_with_argmax, DeviceKind::cpu, max_pool2d_with_argmax_kernel);
  register_kernel(op_names::max_pool2d_with_argmax_grad, DeviceKind::cpu, max_pool2d_with_argmax_grad_kernel);
  register_kernel(op_names::avg_pool2d, DeviceKind::cpu, avg_pool2d_kernel);
  register_kernel(op_names::avg_pool2d_grad, DeviceKind::cpu, avg_pool2d_grad_kernel);
}

}  // namespace tower::cpu
