// CPU conv3d kernels (NDHWC): 3-D im2col + GEMM (OpenBLAS) in cache-sized row blocks split over the
// device pool, group by group; conv3d_transpose is conv3d_backward_data with x in dy's place.
#include <algorithm>
#include <vector>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/core/checked.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// One im2col block holds about this many elements (512 KiB of float32), written and read while in L2.
constexpr std::int64_t kColBlockElements = 1 << 17;

// The GEMM view: per group, im2col(x's group channels) (rows, kk) x the group's weights (kk, group_filters).
struct Conv3DGemm {
  Window3D w;                  // w.channels: x's channels (the distance between neighbouring voxels)
  std::int64_t cg;             // input channels per group
  std::int64_t groups;
  std::int64_t kk;             // kd * kh * kw * cg: one im2col row, taps in (i, j, l, c) order
  std::int64_t filters;        // out channels (all groups)
  std::int64_t group_filters;  // filters / groups
  std::int64_t rows;           // batch * od * oh * ow
  std::int64_t plane;          // od * oh * ow: the rows of one image
  std::int64_t block;          // im2col rows per block
};

// x: (batch, d, h, w, c_in), kernel: (kd, kh, kw, c_in / groups, c_out), y: (batch, od, oh, ow, c_out).
Conv3DGemm conv_gemm(const KernelContext& ctx, const Shape& x, const Shape& kernel, const Shape& y) {
  const std::int64_t window[3] = {kernel[0], kernel[1], kernel[2]};
  Conv3DGemm g{.w = make_window3d(ctx, x, window, y),
               .cg = kernel[3],
               .groups = ctx.attrs().get_int("groups", 1),
               .kk = kernel[0] * kernel[1] * kernel[2] * kernel[3],
               .filters = kernel[4],
               .group_filters = 0,
               .rows = 0,
               .plane = y[1] * y[2] * y[3],
               .block = 0};
  g.group_filters = g.filters / g.groups;
  g.rows = g.w.batch * g.plane;
  g.block = std::max<std::int64_t>(16, kColBlockElements / std::max<std::int64_t>(g.kk, 1));
  for (std::int64_t size : {g.kk, g.filters, g.rows, g.w.channels})
    (void)checked_int(size, "conv3d on the CPU: a size of its GEMM (kernel_d * kernel_h * kernel_w * channels, "
                      "filters or batch * out_d * out_h * out_w)", "OpenBLAS takes at most 2147483647: use a smaller "
                      "batch or layer");
  return g;
}

std::int64_t row_grain(const Conv3DGemm& g) {
  return std::max<std::int64_t>(1, kParallelFlops / std::max<std::int64_t>(1, 2 * g.kk * g.filters));
}

// Calls fn(dst offset in a row, x voxel offset or -1 for padding) for every tap of im2col row r.
template <typename F>
inline void for_each_tap(const Conv3DGemm& g, std::int64_t r, F&& fn) {
  const Window3D& w = g.w;
  const std::int64_t n = r / g.plane, p = r % g.plane;
  const std::int64_t o[3] = {p / (w.out[1] * w.out[2]), (p / w.out[2]) % w.out[1], p % w.out[2]};
  std::int64_t s[3];
  for (int a = 0; a < 3; ++a) s[a] = window::window_start(o[a], w.stride[a], w.pad[a]);
  const std::int64_t image = n * w.in[0] * w.in[1] * w.in[2];
  std::int64_t t = 0;
  for (std::int64_t i = 0; i < w.kernel[0]; ++i) {
    const std::int64_t iz = s[0] + i * w.dilation[0];
    for (std::int64_t j = 0; j < w.kernel[1]; ++j) {
      const std::int64_t iy = s[1] + j * w.dilation[1];
      for (std::int64_t l = 0; l < w.kernel[2]; ++l, t += g.cg) {
        const std::int64_t ix = s[2] + l * w.dilation[2];
        const bool inside = iz >= 0 && iz < w.in[0] && iy >= 0 && iy < w.in[1] && ix >= 0 && ix < w.in[2];
        fn(t, inside ? ((image + (iz * w.in[1] + iy) * w.in[2] + ix) * w.channels) : std::int64_t{-1});
      }
    }
  }
}

// col (r1 - r0, kk): im2col rows r0..r1 of x's group channels (xg points at the group's first one).
template <typename T>
void im2col(const Conv3DGemm& g, const T* xg, std::int64_t r0, std::int64_t r1, T* col) {
  for (std::int64_t r = r0; r < r1; ++r) {
    T* dst = col + (r - r0) * g.kk;
    for_each_tap(g, r, [&](std::int64_t t, std::int64_t at) {
      if (at < 0)
        std::fill(dst + t, dst + t + g.cg, T(0));
      else
        std::copy(xg + at, xg + at + g.cg, dst + t);
    });
  }
}

// The adjoint of im2col: adds each tap of col to the x position it was copied from (dxg: group channels).
template <typename T>
void col2im_add(const Conv3DGemm& g, const T* col, std::int64_t r0, std::int64_t r1, T* dxg) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const T* src = col + (r - r0) * g.kk;
    for_each_tap(g, r, [&](std::int64_t t, std::int64_t at) {
      if (at < 0) return;
      for (std::int64_t e = 0; e < g.cg; ++e) dxg[at + e] += src[t + e];
    });
  }
}

// y = conv3d(x, kernel). x: (batch, d, h, w, c_in), kernel: (kd, kh, kw, c_in / groups, c_out) -> y.
void conv3d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const Conv3DGemm g = conv_gemm(ctx, x.shape(), kernel.shape(), y.shape());
  dispatch_floating(y.dtype(), op_names::conv3d, [&]<typename T>() {
    const T* px = x.data<T>();
    const T* pk = kernel.data<T>();
    T* py = y.data<T>();
    if (g.rows == 0 || g.filters == 0) return;
    if (g.kk == 0) return std::fill(py, py + g.rows * g.filters, T(0));
    const std::int64_t gf = g.group_filters;
    parallel_for(ctx, g.rows, row_grain(g), [&](std::int64_t lo, std::int64_t hi) {
      T* col = scratch<T>(g.block * g.kk);  // (block, kk)
      for (std::int64_t r0 = lo; r0 < hi; r0 += g.block) {
        const std::int64_t r1 = std::min(hi, r0 + g.block);
        for (std::int64_t group = 0; group < g.groups; ++group) {
          im2col(g, px + group * g.cg, r0, r1, col);
          gemm_conv(false, false, r1 - r0, gf, g.kk, col, g.kk, pk + group * gf, g.filters, T(0),
               py + r0 * g.filters + group * gf, g.filters);
        }
      }
    });
  });
}

// dkernel = im2col(x)^T dy per group. (x, dy, kernel) -> dkernel: (kd, kh, kw, c_in / groups, c_out). Each
// part of the rows accumulates its own partial sum (part 0 straight into the output), added at the end.
void conv3d_backward_filter_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dk = ctx.outputs[0];
  const Conv3DGemm g = conv_gemm(ctx, x.shape(), dk.shape(), dy.shape());
  dispatch_floating(dk.dtype(), op_names::conv3d_backward_filter, [&]<typename T>() {
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    T* pdk = dk.data<T>();
    const std::int64_t size = g.kk * g.filters, gf = g.group_filters;
    if (size == 0) return;
    const std::int64_t parts = std::clamp<std::int64_t>(g.rows / row_grain(g), 1, cpu_pool(ctx).size());
    std::vector<T> partials(static_cast<std::size_t>((parts - 1) * size));  // (parts - 1, kk, c_out)
    parallel_for(ctx, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t lo = g.rows * p / parts, hi = g.rows * (p + 1) / parts;
        T* acc = p == 0 ? pdk : partials.data() + (p - 1) * size;
        if (lo == hi) std::fill(acc, acc + size, T(0));
        T* col = scratch<T>(g.block * g.kk);  // (block, kk)
        for (std::int64_t r0 = lo; r0 < hi; r0 += g.block) {
          const std::int64_t r1 = std::min(hi, r0 + g.block);
          for (std::int64_t group = 0; group < g.groups; ++group) {
            im2col(g, px + group * g.cg, r0, r1, col);
            gemm_conv(true, false, g.kk, gf, r1 - r0, col, g.kk, pdy + r0 * g.filters + group * gf, g.filters,
                 T(r0 == lo ? 0 : 1), acc + group * gf, g.filters);
          }
        }
      }
    });
    for (std::int64_t p = 1; p < parts; ++p) {
      const T* part = partials.data() + (p - 1) * size;
      for (std::int64_t e = 0; e < size; ++e) pdk[e] += part[e];
    }
  });
}

// dx = col2im(dy kernel^T) per group. (dy, kernel[, x]) -> dx: the node's output shape (conv3d's x for
// conv3d_backward_data, the transposed convolution's output for conv3d_transpose).
void conv3d_backward_data_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  const Conv3DGemm g = conv_gemm(ctx, dx.shape(), kernel.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::conv3d_backward_data, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    const T* pk = kernel.data<T>();
    T* pdx = dx.data<T>();
    const std::int64_t gf = g.group_filters;
    if (g.kk == 0) return;  // no input channels: dx is empty
    if (g.filters == 0 || g.rows == 0) return std::fill(pdx, pdx + dx.num_elements(), T(0));
    // Split over images, whose windows never overlap, so no two threads add to the same dx element.
    const std::int64_t image = g.w.in[0] * g.w.in[1] * g.w.in[2] * g.w.channels;
    const std::int64_t grain = std::max<std::int64_t>(1, row_grain(g) / std::max<std::int64_t>(g.plane, 1));
    parallel_for(ctx, g.w.batch, grain, [&](std::int64_t n0, std::int64_t n1) {
      std::fill(pdx + n0 * image, pdx + n1 * image, T(0));
      T* dcol = scratch<T>(g.block * g.kk);  // (block, kk)
      for (std::int64_t r0 = n0 * g.plane; r0 < n1 * g.plane; r0 += g.block) {
        const std::int64_t r1 = std::min(n1 * g.plane, r0 + g.block);
        for (std::int64_t group = 0; group < g.groups; ++group) {
          gemm_conv(false, true, r1 - r0, g.kk, gf, pdy + r0 * g.filters + group * gf, g.filters, pk + group * gf,
               g.filters, T(0), dcol, g.kk);
          col2im_add(g, dcol, r0, r1, pdx + group * g.cg);
        }
      }
    });
  });
}

}  // namespace

void register_conv3d_kernels() {
  register_kernel(op_names::conv3d, DeviceKind::cpu, conv3d_kernel);
  register_kernel(op_names::conv3d_backward_data, DeviceKind::cpu, conv3d_backward_data_kernel);
  register_kernel(op_names::conv3d_backward_filter, DeviceKind::cpu, conv3d_backward_filter_kernel);
  register_kernel(op_names::conv3d_transpose, DeviceKind::cpu, conv3d_backward_data_kernel);
}

}  // namespace tower::cpu
