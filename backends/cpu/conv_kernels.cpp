// CPU conv2d kernels (NHWC): im2col + BLAS GEMM in cache-sized row blocks split over the device
// pool; also register_nn_kernels, which registers the conv, pooling, batch-norm and dropout kernels.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/nn_kernels.h"

namespace tower::cpu {

namespace {

// c (m, n) = op(a) * op(b) + beta * c, row-major; op(a) is (m, k), op(b) is (k, n).
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
          const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const double* a, std::int64_t lda,
          const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

// One im2col block holds about this many elements (256 KiB of float32): it is written and then
// read by the GEMM while still in L2, instead of materialising the whole (rows, kk) matrix.
constexpr std::int64_t kColBlockElements = 1 << 16;
// Below about this many FLOPs a conv runs on one thread: waking the pool would cost more.
constexpr std::int64_t kParallelFlops = 1 << 20;

// A thread's im2col buffer, reused across calls; at most max(kColBlockElements, 16 * kk) elements.
template <typename T>
T* scratch(std::int64_t elements) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < static_cast<std::size_t>(elements)) buffer.resize(static_cast<std::size_t>(elements));
  return buffer.data();
}

// The GEMM view of a convolution: im2col(x) (rows, kk) x kernel (kk, filters) = y (rows, filters).
struct ConvGemm {
  Window2D w;
  std::int64_t kk;       // kernel_h * kernel_w * in_channels: one im2col row
  std::int64_t filters;  // out channels
  std::int64_t rows;     // batch * out_h * out_w
  std::int64_t block;    // im2col rows per block
  bool direct;           // 1x1 kernel, stride 1: x itself is the im2col matrix
};

// x: (batch, h, w, c_in), kernel: (kh, kw, c_in, c_out), y: (batch, out_h, out_w, c_out).
ConvGemm conv_gemm(const KernelContext& ctx, const Shape& x, const Shape& kernel, const Shape& y) {
  ConvGemm g{.w = make_window(ctx, x, kernel[0], kernel[1], y[1], y[2]),
             .kk = kernel[0] * kernel[1] * kernel[2],
             .filters = kernel[3],
             .rows = y[0] * y[1] * y[2],
             .block = 0,
             .direct = false};
  static const std::int64_t blk = getenv("TOWER_CONV_BLOCK") ? atoll(getenv("TOWER_CONV_BLOCK")) : kColBlockElements;
  g.block = std::max<std::int64_t>(16, blk / std::max<std::int64_t>(g.kk, 1));
  g.direct = kernel[0] == 1 && kernel[1] == 1 && g.w.stride_h == 1 && g.w.stride_w == 1;
  return g;
}

// Rows per parallel chunk so that a chunk is worth a thread.
std::int64_t row_grain(const ConvGemm& g) {
  return std::max<std::int64_t>(1, kParallelFlops / std::max<std::int64_t>(1, 2 * g.kk * g.filters));
}

// col (r1 - r0, kk): rows r0..r1 of the im2col matrix of x (batch, in_h, in_w, c); row r is output
// position (n, oy, ox) and holds the window's taps in (i, j, c) order, zeros where it hangs over the padding.
template <typename T>
void im2col(const T* x, const Window2D& w, std::int64_t r0, std::int64_t r1, T* col) {
  const std::int64_t c = w.channels, row_len = w.kernel_w * c, kk = w.kernel_h * row_len;
  const std::int64_t plane = w.out_h * w.out_w;
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t n = r / plane, oy = (r % plane) / w.out_w, ox = r % w.out_w;
    const T* image = x + n * w.in_h * w.in_w * c;
    const std::int64_t iy0 = oy * w.stride_h - w.pad_top, ix0 = ox * w.stride_w - w.pad_left;
    // Undilated windows inside the row are one contiguous run of kernel_w * c elements.
    const bool contiguous = w.dilation_w == 1 && ix0 >= 0 && ix0 + w.kernel_w <= w.in_w;
    T* dst = col + (r - r0) * kk;
    for (std::int64_t i = 0; i < w.kernel_h; ++i, dst += row_len) {
      const std::int64_t iy = iy0 + i * w.dilation_h;
      if (iy < 0 || iy >= w.in_h) {
        std::fill(dst, dst + row_len, T(0));
        continue;
      }
      const T* src = image + iy * w.in_w * c;
      if (contiguous) {
        std::memcpy(dst, src + ix0 * c, static_cast<std::size_t>(row_len) * sizeof(T));
        continue;
      }
      for (std::int64_t j = 0; j < w.kernel_w; ++j) {
        const std::int64_t ix = ix0 + j * w.dilation_w;
        if (ix < 0 || ix >= w.in_w) std::fill(dst + j * c, dst + (j + 1) * c, T(0));
        else std::memcpy(dst + j * c, src + ix * c, static_cast<std::size_t>(c) * sizeof(T));
      }
    }
  }
}

// The adjoint of im2col: adds each tap of col (r1 - r0, kk) to the x position it was copied from (dx).
template <typename T>
void col2im_add(const T* col, const Window2D& w, std::int64_t r0, std::int64_t r1, T* dx) {
  const std::int64_t c = w.channels, row_len = w.kernel_w * c, kk = w.kernel_h * row_len;
  const std::int64_t plane = w.out_h * w.out_w;
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t n = r / plane, oy = (r % plane) / w.out_w, ox = r % w.out_w;
    T* image = dx + n * w.in_h * w.in_w * c;
    const std::int64_t iy0 = oy * w.stride_h - w.pad_top, ix0 = ox * w.stride_w - w.pad_left;
    const bool contiguous = w.dilation_w == 1 && ix0 >= 0 && ix0 + w.kernel_w <= w.in_w;
    const T* src = col + (r - r0) * kk;
    for (std::int64_t i = 0; i < w.kernel_h; ++i, src += row_len) {
      const std::int64_t iy = iy0 + i * w.dilation_h;
      if (iy < 0 || iy >= w.in_h) continue;
      T* dst = image + iy * w.in_w * c;
      if (contiguous) {
        T* d = dst + ix0 * c;
        for (std::int64_t e = 0; e < row_len; ++e) d[e] += src[e];
        continue;
      }
      for (std::int64_t j = 0; j < w.kernel_w; ++j) {
        const std::int64_t ix = ix0 + j * w.dilation_w;
        if (ix < 0 || ix >= w.in_w) continue;
        T* d = dst + ix * c;
        const T* s = src + j * c;
        for (std::int64_t e = 0; e < c; ++e) d[e] += s[e];
      }
    }
  }
}

// y = conv2d(x, kernel). x: (batch, h, w, c_in), kernel: (kh, kw, c_in, c_out) -> y: (batch, oh, ow, c_out).
void conv2d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const ConvGemm g = conv_gemm(ctx, x.shape(), kernel.shape(), y.shape());
  dispatch_floating(y.dtype(), "conv2d", [&]<typename T>() {
    const T* px = x.data<T>();
    const T* pk = kernel.data<T>();
    T* py = y.data<T>();
    if (g.kk == 0) {
      std::fill(py, py + y.num_elements(), T(0));
      return;
    }
    parallel_for(ctx, g.rows, row_grain(g), [&](std::int64_t lo, std::int64_t hi) {
      if (g.direct) {
        gemm(false, false, hi - lo, g.filters, g.kk, px + lo * g.kk, g.kk, pk, g.filters, T(0), py + lo * g.filters,
             g.filters);
        return;
      }
      T* col = scratch<T>(g.block * g.kk);  // (block, kk)
      for (std::int64_t r0 = lo; r0 < hi; r0 += g.block) {
        const std::int64_t r1 = std::min(hi, r0 + g.block);
        im2col(px, g.w, r0, r1, col);
        gemm(false, false, r1 - r0, g.filters, g.kk, col, g.kk, pk, g.filters, T(0), py + r0 * g.filters, g.filters);
      }
    });
  });
}

// dkernel = im2col(x)^T dy. (x, dy, kernel) -> dkernel: (kh, kw, c_in, c_out). Each part of the rows
// accumulates its own partial sum (part 0 straight into the output); the parts are added at the end.
void conv2d_backward_filter_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dk = ctx.outputs[0];
  const ConvGemm g = conv_gemm(ctx, x.shape(), dk.shape(), dy.shape());
  dispatch_floating(dk.dtype(), "conv2d_backward_filter", [&]<typename T>() {
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    T* pdk = dk.data<T>();
    const std::int64_t size = g.kk * g.filters;
    if (size == 0) return;
    if (g.rows == 0) {
      std::fill(pdk, pdk + size, T(0));
      return;
    }
    const std::int64_t parts =
        std::clamp<std::int64_t>(g.rows / row_grain(g), 1, cpu_pool(ctx).size());
    std::vector<T> partials(static_cast<std::size_t>((parts - 1) * size));  // (parts - 1, kk, c_out)
    parallel_for(ctx, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t lo = g.rows * p / parts, hi = g.rows * (p + 1) / parts;
        T* acc = p == 0 ? pdk : partials.data() + (p - 1) * size;
        if (g.direct) {
          gemm(true, false, g.kk, g.filters, hi - lo, px + lo * g.kk, g.kk, pdy + lo * g.filters, g.filters, T(0),
               acc, g.filters);
          continue;
        }
        T* col = scratch<T>(g.block * g.kk);  // (block, kk)
        T beta = 0;
        for (std::int64_t r0 = lo; r0 < hi; r0 += g.block, beta = 1) {
          const std::int64_t r1 = std::min(hi, r0 + g.block);
          im2col(px, g.w, r0, r1, col);
          gemm(true, false, g.kk, g.filters, r1 - r0, col, g.kk, pdy + r0 * g.filters, g.filters, beta, acc,
               g.filters);
        }
      }
    });
    for (std::int64_t p = 1; p < parts; ++p) {
      const T* part = partials.data() + (p - 1) * size;
      for (std::int64_t e = 0; e < size; ++e) pdk[e] += part[e];
    }
  });
}

// dx = col2im(dy kernel^T). (dy, kernel, x) -> dx: x's shape. Split over images, whose windows
// never overlap, so no two threads add to the same dx element.
void conv2d_backward_data_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  const ConvGemm g = conv_gemm(ctx, dx.shape(), kernel.shape(), dy.shape());
  dispatch_floating(dx.dtype(), "conv2d_backward_data", [&]<typename T>() {
    const T* pdy = dy.data<T>();
    const T* pk = kernel.data<T>();
    T* pdx = dx.data<T>();
    if (g.filters == 0 || g.rows == 0) {
      std::fill(pdx, pdx + dx.num_elements(), T(0));
      return;
    }
    if (g.direct) {  // dx (rows, c_in) = dy (rows, c_out) x kernel^T
      parallel_for(ctx, g.rows, row_grain(g), [&](std::int64_t lo, std::int64_t hi) {
        gemm(false, true, hi - lo, g.kk, g.filters, pdy + lo * g.filters, g.filters, pk, g.filters, T(0),
             pdx + lo * g.kk, g.kk);
      });
      return;
    }
    const std::int64_t plane = g.w.out_h * g.w.out_w, image = g.w.in_h * g.w.in_w * g.w.channels;
    const std::int64_t grain = std::max<std::int64_t>(1, row_grain(g) / std::max<std::int64_t>(plane, 1));
    parallel_for(ctx, g.w.batch, grain, [&](std::int64_t n0, std::int64_t n1) {
      std::fill(pdx + n0 * image, pdx + n1 * image, T(0));
      T* dcol = scratch<T>(g.block * g.kk);  // (block, kk)
      for (std::int64_t r0 = n0 * plane; r0 < n1 * plane; r0 += g.block) {
        const std::int64_t r1 = std::min(n1 * plane, r0 + g.block);
        gemm(false, true, r1 - r0, g.kk, g.filters, pdy + r0 * g.filters, g.filters, pk, g.filters, T(0), dcol, g.kk);
        col2im_add(dcol, g.w, r0, r1, pdx);
      }
    });
  });
}

}  // namespace

void register_conv_kernels() {
  register_kernel("conv2d", DeviceKind::cpu, conv2d_kernel);
  register_kernel("conv2d_backward_data", DeviceKind::cpu, conv2d_backward_data_kernel);
  register_kernel("conv2d_backward_filter", DeviceKind::cpu, conv2d_backward_filter_kernel);
}

void register_nn_kernels() {
  register_conv_kernels();
  register_pool_kernels();
  register_batch_norm_kernels();
  register_dropout_kernels();
}

}  // namespace tower::cpu
