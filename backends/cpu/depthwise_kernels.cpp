// CPU depthwise convolutions (NHWC; conv2d with one input channel per group, Keras's DepthwiseConv2D)
// and their two backward products. With one input channel per group, im2col and a GEMM per group would
// copy every tap of every channel separately; these loops run over the filters instead (f = c·m + j
// reads channel c = f / m), contiguous and vectorized when each channel has one filter.
// x (batch, h, w, c), kernel (kh, kw, 1, c·m); conv_kernels.cpp's conv2d kernels call them.
#include <algorithm>
#include <vector>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"

namespace tower::cpu {

namespace {

// The window taps of output (oy, ox) inside x: f(i, j, iy, ix) for each.
template <typename F>
inline void for_each_tap(const Window2D& w, std::int64_t oy, std::int64_t ox, F&& f) {
  const std::int64_t iy0 = window::window_start(oy, w.stride_h, w.pad_top);
  const std::int64_t ix0 = window::window_start(ox, w.stride_w, w.pad_left);
  for (std::int64_t i = 0; i < w.kernel_h; ++i) {
    const std::int64_t iy = iy0 + i * w.dilation_h;
    if (iy < 0 || iy >= w.in_h) continue;
    for (std::int64_t j = 0; j < w.kernel_w; ++j) {
      const std::int64_t ix = ix0 + j * w.dilation_w;
      if (ix >= 0 && ix < w.in_w) f(i, j, iy, ix);
    }
  }
}

}  // namespace

// y = the depthwise convolution, rows (n, oy) split over the pool.
template <typename T>
void depthwise_conv2d(KernelContext& ctx, const Window2D& w, std::int64_t m, const T* x, const T* k, T* y) {
  const std::int64_t c = w.channels, filters = c * m, taps = w.kernel_h * w.kernel_w;
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelFlops / std::max<std::int64_t>(1, 2 * taps * filters * w.out_w));
  parallel_for(ctx, w.batch * w.out_h, grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const std::int64_t n = r / w.out_h, oy = r % w.out_h;
      for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
        T* out = y + (r * w.out_w + ox) * filters;
        std::fill(out, out + filters, T(0));
        for_each_tap(w, oy, ox, [&](std::int64_t i, std::int64_t j, std::int64_t iy, std::int64_t ix) {
          const T* xp = x + ((n * w.in_h + iy) * w.in_w + ix) * c;
          const T* kp = k + (i * w.kernel_w + j) * filters;
          if (m == 1)
            for (std::int64_t f = 0; f < filters; ++f) out[f] += xp[f] * kp[f];
          else
            for (std::int64_t f = 0; f < filters; ++f) out[f] += xp[f / m] * kp[f];
        });
      }
    }
  });
}

// dx: each dy scattered back through its taps; images split over the pool, so no two threads add to the
// same dx element.
template <typename T>
void depthwise_conv2d_backward_data(KernelContext& ctx, const Window2D& w, std::int64_t m, const T* dy, const T* k,
                                    T* dx) {
  const std::int64_t c = w.channels, filters = c * m, taps = w.kernel_h * w.kernel_w, image = w.in_h * w.in_w * c;
  const std::int64_t per_image = std::max<std::int64_t>(1, 2 * taps * filters * w.out_h * w.out_w);
  parallel_for(ctx, w.batch, std::max<std::int64_t>(1, kParallelFlops / per_image), [&](std::int64_t n0, std::int64_t n1) {
    std::fill(dx + n0 * image, dx + n1 * image, T(0));
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t oy = 0; oy < w.out_h; ++oy)
        for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
          const T* g_out = dy + ((n * w.out_h + oy) * w.out_w + ox) * filters;
          for_each_tap(w, oy, ox, [&](std::int64_t i, std::int64_t j, std::int64_t iy, std::int64_t ix) {
            T* dxp = dx + ((n * w.in_h + iy) * w.in_w + ix) * c;
            const T* kp = k + (i * w.kernel_w + j) * filters;
            if (m == 1)
              for (std::int64_t f = 0; f < filters; ++f) dxp[f] += g_out[f] * kp[f];
            else
              for (std::int64_t f = 0; f < filters; ++f) dxp[f / m] += g_out[f] * kp[f];
          });
        }
  });
}

// dkernel (kh, kw, 1, c·m) = the sum over outputs of x's tap times dy: each part of the rows (n, oy) sums
// into its own buffer (part 0 straight into the output), added at the end.
template <typename T>
void depthwise_conv2d_backward_filter(KernelContext& ctx, const Window2D& w, std::int64_t m, const T* x, const T* dy,
                                      T* dk) {
  const std::int64_t c = w.channels, filters = c * m, taps = w.kernel_h * w.kernel_w, size = taps * filters;
  const std::int64_t rows = w.batch * w.out_h;
  const std::int64_t row_flops = std::max<std::int64_t>(1, 2 * taps * filters * w.out_w);
  const std::int64_t parts = std::clamp<std::int64_t>(rows * row_flops / kParallelFlops, 1, cpu_pool(ctx).size());
  std::vector<T> partials(static_cast<std::size_t>((parts - 1) * size));
  parallel_for(ctx, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      T* acc = p == 0 ? dk : partials.data() + (p - 1) * size;
      std::fill(acc, acc + size, T(0));
      for (std::int64_t r = rows * p / parts; r < rows * (p + 1) / parts; ++r) {
        const std::int64_t n = r / w.out_h, oy = r % w.out_h;
        for (std::int64_t ox = 0; ox < w.out_w; ++ox) {
          const T* g_out = dy + ((r * w.out_w) + ox) * filters;
          for_each_tap(w, oy, ox, [&](std::int64_t i, std::int64_t j, std::int64_t iy, std::int64_t ix) {
            const T* xp = x + ((n * w.in_h + iy) * w.in_w + ix) * c;
            T* ap = acc + (i * w.kernel_w + j) * filters;
            if (m == 1)
              for (std::int64_t f = 0; f < filters; ++f) ap[f] += xp[f] * g_out[f];
            else
              for (std::int64_t f = 0; f < filters; ++f) ap[f] += xp[f / m] * g_out[f];
          });
        }
      }
    }
  });
  for (std::int64_t p = 1; p < parts; ++p) {
    const T* part = partials.data() + (p - 1) * size;
    for (std::int64_t e = 0; e < size; ++e) dk[e] += part[e];
  }
}

#define TOWER_INSTANTIATE(T)                                                                                    \
  template void depthwise_conv2d<T>(KernelContext&, const Window2D&, std::int64_t, const T*, const T*, T*);     \
  template void depthwise_conv2d_backward_data<T>(KernelContext&, const Window2D&, std::int64_t, const T*,     \
                                                  const T*, T*);                                                 \
  template void depthwise_conv2d_backward_filter<T>(KernelContext&, const Window2D&, std::int64_t, const T*,   \
                                                    const T*, T*);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cpu
