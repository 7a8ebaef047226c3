// CPU conv2d kernels (NHWC): im2col + GEMM in cache-sized row blocks split over the device pool
// (OpenBLAS, or small-K loops where BLAS is inefficient); also register_nn_kernels, which registers
// the conv, pooling, normalization, dropout and image kernels.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/backends/cpu/onednn.h"
#include "tower/core/checked.h"
#include "tower/core/op_names.h"

// The small-K loops get an AVX2/FMA (x86-64-v3) clone chosen at load time by CPU features; the
// build itself targets baseline x86-64. Not under ThreadSanitizer: its instrumented ifunc resolvers
// would run before it is initialised.
#if defined(__x86_64__) && defined(__linux__) && !defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11 && \
    !defined(__SANITIZE_THREAD__)
#define TOWER_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TOWER_SIMD_CLONES
#endif

namespace tower::cpu {

namespace {

// ---- small-K products ------------------------------------------------------------------------------
// With an inner dimension this small (a 3x3 kernel on one or three channels) BLAS spends its time
// packing and scaling C; plain loops that keep accumulators in registers are several times faster.
constexpr std::int64_t kSmallK = 32;

// 32-byte vectors (GCC/Clang vector extension): one AVX register, or two SSE registers in the
// baseline clone. Loaded and stored by memcpy, which both compilers turn into one unaligned move
// (clang drops `aligned` from a vector typedef that depends on a template parameter, so a cast pointer
// got aligned moves that fault on our pointers). The helpers are always inlined, so the -Wpsabi
// warning on returning a 32-byte vector is moot. `x - V{}` broadcasts x (unlike x + 0, x - 0 is
// exactly x, so the compiler emits a bare broadcast).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <typename T>
struct Simd {
  typedef T Vec __attribute__((vector_size(32)));
  static constexpr std::int64_t lanes = 32 / sizeof(T);
  static inline __attribute__((always_inline)) Vec load(const T* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static inline __attribute__((always_inline)) void store(T* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }
};

// c (m, n) = a (m, k) b (k, n). Two rows at a time, four vectors of each in registers: eight
// independent FMA chains keep both FMA units busy, and each load of b serves two rows.
template <typename T>
inline __attribute__((always_inline)) void small_nn_body(std::int64_t m, std::int64_t n, std::int64_t k,
                                                         const T* __restrict a, const T* __restrict b,
                                                         T* __restrict c) {
  using S = Simd<T>;
  using V = typename S::Vec;
  constexpr std::int64_t L = S::lanes;
  std::int64_t r = 0;
  for (; r + 2 <= m; r += 2) {
    const T* a0 = a + r * k;
    const T* a1 = a0 + k;
    T* c0r = c + r * n;
    T* c1r = c0r + n;
    std::int64_t j = 0;
    for (; j + 4 * L <= n; j += 4 * L) {
      V x0{}, x1{}, x2{}, x3{}, y0{}, y1{}, y2{}, y3{};
      for (std::int64_t p = 0; p < k; ++p) {
        const V s = a0[p] - V{}, t = a1[p] - V{};
        const T* bp = b + p * n + j;
        const V b0 = S::load(bp), b1 = S::load(bp + L), b2 = S::load(bp + 2 * L), b3 = S::load(bp + 3 * L);
        x0 += s * b0, x1 += s * b1, x2 += s * b2, x3 += s * b3;
        y0 += t * b0, y1 += t * b1, y2 += t * b2, y3 += t * b3;
      }
      S::store(c0r + j, x0), S::store(c0r + j + L, x1), S::store(c0r + j + 2 * L, x2), S::store(c0r + j + 3 * L, x3);
      S::store(c1r + j, y0), S::store(c1r + j + L, y1), S::store(c1r + j + 2 * L, y2), S::store(c1r + j + 3 * L, y3);
    }
    for (; j + L <= n; j += L) {
      V x0{}, y0{};
      for (std::int64_t p = 0; p < k; ++p) {
        const V bv = S::load(b + p * n + j);
        x0 += (a0[p] - V{}) * bv;
        y0 += (a1[p] - V{}) * bv;
      }
      S::store(c0r + j, x0), S::store(c1r + j, y0);
    }
    for (; j < n; ++j) {
      T x = 0, y = 0;
      for (std::int64_t p = 0; p < k; ++p) x += a0[p] * b[p * n + j], y += a1[p] * b[p * n + j];
      c0r[j] = x, c1r[j] = y;
    }
  }
  for (; r < m; ++r)  // the odd row
    for (std::int64_t j = 0; j < n; ++j) {
      T x = 0;
      for (std::int64_t p = 0; p < k; ++p) x += a[r * k + p] * b[p * n + j];
      c[r * n + j] = x;
    }
}

// c (k, n) += a (m, k)^T b (m, n). For each row of c, four vectors accumulate in two sets (even and
// odd rows of a: eight FMA chains) while a chunk of 64 rows of a and b (in L1) streams past.
template <typename T>
inline __attribute__((always_inline)) void small_tn_body(std::int64_t m, std::int64_t n, std::int64_t k,
                                                         const T* __restrict a, const T* __restrict b,
                                                         T* __restrict c) {
  using S = Simd<T>;
  using V = typename S::Vec;
  constexpr std::int64_t L = S::lanes;
  for (std::int64_t r0 = 0; r0 < m; r0 += 64) {
    const std::int64_t r1 = std::min(m, r0 + 64);
    for (std::int64_t p = 0; p < k; ++p) {
      T* cp = c + p * n;
      std::int64_t j = 0;
      for (; j + 4 * L <= n; j += 4 * L) {
        V x0 = S::load(cp + j), x1 = S::load(cp + j + L), x2 = S::load(cp + j + 2 * L), x3 = S::load(cp + j + 3 * L);
        V y0{}, y1{}, y2{}, y3{};
        std::int64_t r = r0;
        for (; r + 2 <= r1; r += 2) {
          const V s = a[r * k + p] - V{}, t = a[(r + 1) * k + p] - V{};
          const T* br = b + r * n + j;
          x0 += s * S::load(br), x1 += s * S::load(br + L);
          x2 += s * S::load(br + 2 * L), x3 += s * S::load(br + 3 * L);
          br += n;
          y0 += t * S::load(br), y1 += t * S::load(br + L);
          y2 += t * S::load(br + 2 * L), y3 += t * S::load(br + 3 * L);
        }
        if (r < r1) {
          const V s = a[r * k + p] - V{};
          const T* br = b + r * n + j;
          x0 += s * S::load(br), x1 += s * S::load(br + L);
          x2 += s * S::load(br + 2 * L), x3 += s * S::load(br + 3 * L);
        }
        S::store(cp + j, x0 + y0), S::store(cp + j + L, x1 + y1);
        S::store(cp + j + 2 * L, x2 + y2), S::store(cp + j + 3 * L, x3 + y3);
      }
      for (; j + L <= n; j += L) {
        V x0 = S::load(cp + j);
        for (std::int64_t r = r0; r < r1; ++r) x0 += (a[r * k + p] - V{}) * S::load(b + r * n + j);
        S::store(cp + j, x0);
      }
      for (; j < n; ++j) {
        T x = cp[j];
        for (std::int64_t r = r0; r < r1; ++r) x += a[r * k + p] * b[r * n + j];
        cp[j] = x;
      }
    }
  }
}

TOWER_SIMD_CLONES void small_nn(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b,
                                float* c) {
  small_nn_body(m, n, k, a, b, c);
}
TOWER_SIMD_CLONES void small_nn(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
                                double* c) {
  small_nn_body(m, n, k, a, b, c);
}
TOWER_SIMD_CLONES void small_tn(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* b,
                                float* c) {
  small_tn_body(m, n, k, a, b, c);
}
TOWER_SIMD_CLONES void small_tn(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
                                double* c) {
  small_tn_body(m, n, k, a, b, c);
}

#pragma GCC diagnostic pop

// ---- im2col -------------------------------------------------------------------------------------------

// One im2col block holds about this many elements (512 KiB of float32): it is written and then
// read by the GEMM while still in L2, instead of materialising the whole (rows, kk) matrix.
constexpr std::int64_t kColBlockElements = 1 << 17;

// Copies n elements. Runs in im2col are often a few elements (kernel_w * channels with one
// channel); fixed-size copies for those avoid a library call or a vectorized loop's set-up per run.
template <typename T>
inline void copy_run(T* dst, const T* src, std::int64_t n) {
  // clang-format off
  switch (n) {
    case 1: std::memcpy(dst, src, 1 * sizeof(T)); return;
    case 2: std::memcpy(dst, src, 2 * sizeof(T)); return;
    case 3: std::memcpy(dst, src, 3 * sizeof(T)); return;
    case 4: std::memcpy(dst, src, 4 * sizeof(T)); return;
    case 5: std::memcpy(dst, src, 5 * sizeof(T)); return;
    case 6: std::memcpy(dst, src, 6 * sizeof(T)); return;
    case 7: std::memcpy(dst, src, 7 * sizeof(T)); return;
    case 8: std::memcpy(dst, src, 8 * sizeof(T)); return;
    case 9: std::memcpy(dst, src, 9 * sizeof(T)); return;
    default: std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(T));
  }
  // clang-format on
}

// col (r1 - r0, kk): rows r0..r1 of the im2col matrix of x (batch, in_h, in_w, pixel) read w.channels
// at a time (a group's channels: x points at the group's first one); row r is output position (n, oy,
// ox) and holds the window's taps in (i, j, c) order, zeros where it hangs over the padding.
template <typename T>
void im2col(const T* x, const Window2D& w, std::int64_t pixel, std::int64_t r0, std::int64_t r1, T* col) {
  const std::int64_t c = w.channels, row_len = w.kernel_w * c, kk = w.kernel_h * row_len;
  const std::int64_t plane = w.out_h * w.out_w;
  std::int64_t n = r0 / plane, oy = (r0 % plane) / w.out_w, ox = r0 % w.out_w;
  for (std::int64_t r = r0; r < r1; ++r) {
    const T* image = x + n * w.in_h * w.in_w * pixel;
    const std::int64_t iy0 = window::window_start(oy, w.stride_h, w.pad_top),
                       ix0 = window::window_start(ox, w.stride_w, w.pad_left);
    // Undilated windows inside the row are one contiguous run of kernel_w * c elements.
    const bool contiguous = pixel == c && w.dilation_w == 1 && ix0 >= 0 && ix0 + w.kernel_w <= w.in_w;
    T* dst = col + (r - r0) * kk;
    for (std::int64_t i = 0; i < w.kernel_h; ++i, dst += row_len) {
      const std::int64_t iy = iy0 + i * w.dilation_h;
      if (iy < 0 || iy >= w.in_h) {
        std::fill(dst, dst + row_len, T(0));
        continue;
      }
      const T* src = image + iy * w.in_w * pixel;
      if (contiguous) {
        copy_run(dst, src + ix0 * c, row_len);
        continue;
      }
      for (std::int64_t j = 0; j < w.kernel_w; ++j) {
        const std::int64_t ix = ix0 + j * w.dilation_w;
        if (ix < 0 || ix >= w.in_w)
          std::fill(dst + j * c, dst + (j + 1) * c, T(0));
        else
          copy_run(dst + j * c, src + ix * pixel, c);
      }
    }
    if (++ox == w.out_w) {
      ox = 0;
      if (++oy == w.out_h) oy = 0, ++n;
    }
  }
}

// The adjoint of im2col: adds each tap of col (r1 - r0, kk) to the x position it was copied from (dx).
template <typename T>
void col2im_add(const T* col, const Window2D& w, std::int64_t pixel, std::int64_t r0, std::int64_t r1, T* dx) {
  const std::int64_t c = w.channels, row_len = w.kernel_w * c, kk = w.kernel_h * row_len;
  const std::int64_t plane = w.out_h * w.out_w;
  std::int64_t n = r0 / plane, oy = (r0 % plane) / w.out_w, ox = r0 % w.out_w;
  for (std::int64_t r = r0; r < r1; ++r) {
    T* image = dx + n * w.in_h * w.in_w * pixel;
    const std::int64_t iy0 = window::window_start(oy, w.stride_h, w.pad_top),
                       ix0 = window::window_start(ox, w.stride_w, w.pad_left);
    const bool contiguous = pixel == c && w.dilation_w == 1 && ix0 >= 0 && ix0 + w.kernel_w <= w.in_w;
    const T* src = col + (r - r0) * kk;
    for (std::int64_t i = 0; i < w.kernel_h; ++i, src += row_len) {
      const std::int64_t iy = iy0 + i * w.dilation_h;
      if (iy < 0 || iy >= w.in_h) continue;
      T* dst = image + iy * w.in_w * pixel;
      if (contiguous) {
        T* d = dst + ix0 * c;
        for (std::int64_t e = 0; e < row_len; ++e) d[e] += src[e];
        continue;
      }
      for (std::int64_t j = 0; j < w.kernel_w; ++j) {
        const std::int64_t ix = ix0 + j * w.dilation_w;
        if (ix < 0 || ix >= w.in_w) continue;
        T* d = dst + ix * pixel;
        const T* s = src + j * c;
        for (std::int64_t e = 0; e < c; ++e) d[e] += s[e];
      }
    }
    if (++ox == w.out_w) {
      ox = 0;
      if (++oy == w.out_h) oy = 0, ++n;
    }
  }
}

// ---- the GEMM view of a convolution -------------------------------------------------------------------

// Per group: im2col(x's group channels) (rows, kk) x the group's weights (kk, group_filters) = the
// group's columns of y (rows, filters), for the window w over x. One group is the usual convolution.
struct ConvGemm {
  Window2D w;                  // w.channels: input channels per group
  std::int64_t pixel;          // x's channels: the distance between neighbouring pixels
  std::int64_t groups;
  std::int64_t kk;             // kernel_h * kernel_w * w.channels: one im2col row
  std::int64_t filters;        // out channels (all groups)
  std::int64_t group_filters;  // filters / groups
  std::int64_t rows;           // batch * out_h * out_w
  std::int64_t block;          // im2col rows per block
  bool direct;                 // 1x1 kernel, stride 1, no padding: x itself is the im2col matrix
  bool small;                  // one group and kk <= kSmallK: the small-K loops instead of BLAS
  bool depthwise;              // several groups of one input channel: depthwise_kernels.cpp's loops, no GEMM
};

// w: the window over x with all its channels; kernel: (kh, kw, channels / groups, filters).
ConvGemm conv_gemm(Window2D w, const Shape& kernel, std::int64_t groups) {
  const std::int64_t pixel = w.channels;
  w.channels = kernel[2];
  ConvGemm g{.w = w,
             .pixel = pixel,
             .groups = groups,
             .kk = w.kernel_h * w.kernel_w * w.channels,
             .filters = kernel[3],
             .group_filters = kernel[3] / groups,
             .rows = w.batch * w.out_h * w.out_w,
             .block = 0,
             .direct = false,
             .small = false,
             .depthwise = groups > 1 && kernel[2] == 1};
  g.block = std::max<std::int64_t>(16, kColBlockElements / std::max<std::int64_t>(g.kk, 1));
  g.direct = w.kernel_h == 1 && w.kernel_w == 1 && w.stride_h == 1 && w.stride_w == 1 && w.pad_top == 0 &&
             w.pad_left == 0 && w.out_h == w.in_h && w.out_w == w.in_w;
  g.small = groups == 1 && g.kk <= kSmallK;
  // OpenBLAS takes 32-bit sizes; a larger one would wrap (checked here, before any parallel work).
  for (std::int64_t size : {g.kk, g.filters, g.rows, g.pixel})
    (void)checked_int(size, "conv2d on the CPU: a size of its GEMM (kernel_h * kernel_w * channels, filters or "
                      "batch * out_h * out_w)", "OpenBLAS takes at most 2147483647: use a smaller batch or layer");
  return g;
}

// x: (batch, h, w, c_in), kernel: (kh, kw, c_in / groups, c_out), y: (batch, out_h, out_w, c_out).
ConvGemm conv_gemm(const KernelContext& ctx, const Shape& x, const Shape& kernel, const Shape& y) {
  return conv_gemm(make_window(ctx, x, kernel[0], kernel[1], y[1], y[2]), kernel, ctx.attrs().get_int("groups", 1));
}

// The window over x with all its channels, as the depthwise loops (depthwise_kernels.cpp) take it.
Window2D depthwise_window(const ConvGemm& g) {
  Window2D w = g.w;
  w.channels = g.pixel;
  return w;
}

// Whether oneDNN runs the float32 convolution g (its shape in *s): one group, a window wider than 1x1
// (a 1x1 convolution is one GEMM already), and what onednn::conv2d_shape accepts.
bool use_onednn(const ConvGemm& g, onednn::Conv2DShape* s) {
  return !g.direct && onednn::conv2d_shape(g.w, g.filters, g.groups, s);
}

// Rows per parallel chunk so that a chunk is worth a thread.
std::int64_t row_grain(const ConvGemm& g) {
  return std::max<std::int64_t>(1, kParallelFlops / std::max<std::int64_t>(1, 2 * g.kk * g.filters));
}

// The im2col rows r0..r1 of group `group` (in col), or x itself when the convolution is direct;
// its leading dimension in *ld.
template <typename T>
const T* im2col_rows(const ConvGemm& g, const T* x, std::int64_t group, std::int64_t r0, std::int64_t r1, T* col,
                     std::int64_t* ld) {
  const T* xg = x + group * g.w.channels;
  if (g.direct) {
    *ld = g.pixel;
    return xg + r0 * g.pixel;
  }
  im2col(xg, g.w, g.pixel, r0, r1, col);
  *ld = g.kk;
  return col;
}

// y (rows, filters) = im2col(x) weights, rows split over the pool, each chunk in cache-sized blocks;
// then, when bias (filters,) is not null, y + bias (and max(·, 0) when relu) over each block while it
// is in cache, the same numbers as add_bias.
template <typename T>
void conv_forward(KernelContext& ctx, const ConvGemm& g, const T* x, const T* weights, T* y, const T* bias = nullptr,
                  bool relu = false) {
  if (g.rows == 0 || g.filters == 0) return;  // nothing to write (and BLAS rejects empty leading dimensions)
  if (g.kk == 0) {
    std::fill(y, y + g.rows * g.filters, T(0));
    return;
  }
  const std::int64_t gf = g.group_filters;
  parallel_for(ctx, g.rows, row_grain(g), [&](std::int64_t lo, std::int64_t hi) {
    T* col = g.direct ? nullptr : scratch<T>(g.block * g.kk);  // (block, kk)
    for (std::int64_t r0 = lo; r0 < hi; r0 += g.block) {
      const std::int64_t r1 = std::min(hi, r0 + g.block);
      for (std::int64_t group = 0; group < g.groups; ++group) {
        std::int64_t lda = 0;
        const T* a = im2col_rows(g, x, group, r0, r1, col, &lda);
        T* c = y + r0 * g.filters + group * gf;
        if (g.small)
          small_nn(r1 - r0, g.filters, g.kk, a, weights, c);
        else
          gemm_conv(false, false, r1 - r0, gf, g.kk, a, lda, weights + group * gf, g.filters, T(0), c, g.filters);
      }
      if (bias != nullptr)
        for (T* row = y + r0 * g.filters; row < y + r1 * g.filters; row += g.filters)
          for (std::int64_t j = 0; j < g.filters; ++j) {
            const T v = row[j] + bias[j];
            row[j] = relu && v < T(0) ? T(0) : v;
          }
    }
  });
}

// y = conv2d(x, kernel). x: (batch, h, w, c_in), kernel: (kh, kw, c_in / groups, c_out) -> y: (batch, oh, ow, c_out).
void conv2d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const ConvGemm g = conv_gemm(ctx, x.shape(), kernel.shape(), y.shape());
  dispatch_floating(y.dtype(), op_names::conv2d, [&]<typename T>() {
    if constexpr (std::is_same_v<T, float>) {
      onednn::Conv2DShape s;
      if (use_onednn(g, &s) && onednn::conv2d_forward(ctx, s, x.data<T>(), kernel.data<T>(), y.data<T>())) return;
    }
    if (g.depthwise && y.num_elements() > 0)
      depthwise_conv2d(ctx, depthwise_window(g), g.group_filters, x.data<T>(), kernel.data<T>(), y.data<T>());
    else
      conv_forward(ctx, g, x.data<T>(), kernel.data<T>(), y.data<T>());
  });
}

// y = activation(conv2d(x, kernel) + bias). (x, kernel, bias (c_out,)) -> y as conv2d's. In float32 oneDNN
// adds the bias and ReLU as it writes y; the im2col loops add them block by block after the GEMM; a
// depthwise convolution (or one without input channels) runs, then add_bias in place.
void conv2d_bias_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  const Tensor& bias = ctx.inputs[2];
  Tensor& y = ctx.outputs[0];
  const bool relu = ctx.attrs().get_string("activation") == "relu";
  const ConvGemm g = conv_gemm(ctx, x.shape(), kernel.shape(), y.shape());
  if (g.depthwise || g.kk == 0) {
    conv2d_kernel(ctx);
    return add_bias(ctx, y, bias, relu, y);
  }
  dispatch_floating(y.dtype(), op_names::conv2d_bias, [&]<typename T>() {
    if constexpr (std::is_same_v<T, float>) {
      onednn::Conv2DShape s;
      if (use_onednn(g, &s) &&
          onednn::conv2d_forward(ctx, s, x.data<T>(), kernel.data<T>(), y.data<T>(), bias.data<T>(), relu))
        return;
    }
    conv_forward(ctx, g, x.data<T>(), kernel.data<T>(), y.data<T>(), bias.data<T>(), relu);
  });
}

// dkernel = im2col(x)^T dy per group. (x, dy, kernel) -> dkernel: (kh, kw, c_in / groups, c_out). Each
// part of the rows accumulates its own partial sum (part 0 straight into the output); the parts are
// added at the end.
void conv2d_backward_filter_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dk = ctx.outputs[0];
  const ConvGemm g = conv_gemm(ctx, x.shape(), dk.shape(), dy.shape());
  dispatch_floating(dk.dtype(), op_names::conv2d_backward_filter, [&]<typename T>() {
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    T* pdk = dk.data<T>();
    const std::int64_t size = g.kk * g.filters, gf = g.group_filters;
    if (size == 0) return;
    if (g.depthwise) return depthwise_conv2d_backward_filter(ctx, depthwise_window(g), gf, px, pdy, pdk);
    if constexpr (std::is_same_v<T, float>) {
      onednn::Conv2DShape s;
      if (use_onednn(g, &s) && onednn::conv2d_backward_filter(ctx, s, px, pdy, pdk)) return;
    }
    const std::int64_t parts = std::clamp<std::int64_t>(g.rows / row_grain(g), 1, cpu_pool(ctx).size());
    std::vector<T> partials(static_cast<std::size_t>((parts - 1) * size));  // (parts - 1, kk, c_out)
    parallel_for(ctx, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t lo = g.rows * p / parts, hi = g.rows * (p + 1) / parts;
        T* acc = p == 0 ? pdk : partials.data() + (p - 1) * size;
        if (g.small || lo == hi) std::fill(acc, acc + size, T(0));
        T* col = g.direct ? nullptr : scratch<T>(g.block * g.kk);  // (block, kk)
        for (std::int64_t r0 = lo; r0 < hi; r0 += g.block) {
          const std::int64_t r1 = std::min(hi, r0 + g.block);
          for (std::int64_t group = 0; group < g.groups; ++group) {
            std::int64_t lda = 0;
            const T* a = im2col_rows(g, px, group, r0, r1, col, &lda);
            const T* b = pdy + r0 * g.filters + group * gf;
            if (g.small)
              small_tn(r1 - r0, g.filters, g.kk, a, b, acc);
            else
              gemm_conv(true, false, g.kk, gf, r1 - r0, a, lda, b, g.filters, T(r0 == lo ? 0 : 1), acc + group * gf,
                   g.filters);
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

// dx = col2im(dy kernel^T) per group. (dy, kernel[, x]) -> dx: the node's output shape (conv2d's x for
// conv2d_backward_data, the transposed convolution's output for conv2d_transpose). (Measured slower
// on the mnist_cnn shapes: a stride-1 convolution of dy with the flipped kernel, and a per-dx-element
// gather for small windows.)
void conv2d_backward_data_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  const ConvGemm g = conv_gemm(ctx, dx.shape(), kernel.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::conv2d_backward_data, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    const T* pk = kernel.data<T>();
    T* pdx = dx.data<T>();
    const std::int64_t gf = g.group_filters, cg = g.w.channels;
    if (g.kk == 0) return;  // no input channels: dx is empty
    if (g.filters == 0 || g.rows == 0) {
      std::fill(pdx, pdx + dx.num_elements(), T(0));
      return;
    }
    if (g.depthwise) return depthwise_conv2d_backward_data(ctx, depthwise_window(g), gf, pdy, pk, pdx);
    if constexpr (std::is_same_v<T, float>) {
      onednn::Conv2DShape s;
      if (use_onednn(g, &s) && onednn::conv2d_backward_data(ctx, s, pdy, pk, pdx)) return;
    }
    if (g.direct) {  // dx (rows, c_in) = dy (rows, c_out) x kernel^T, group by group
      parallel_for(ctx, g.rows, row_grain(g), [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t group = 0; group < g.groups; ++group)
          gemm_conv(false, true, hi - lo, g.kk, gf, pdy + lo * g.filters + group * gf, g.filters, pk + group * gf,
               g.filters, T(0), pdx + lo * g.pixel + group * cg, g.pixel);
      });
      return;
    }
    // Split over images, whose windows never overlap, so no two threads add to the same dx element.
    const std::int64_t plane = g.w.out_h * g.w.out_w, image = g.w.in_h * g.w.in_w * g.pixel;
    const std::int64_t grain = std::max<std::int64_t>(1, row_grain(g) / std::max<std::int64_t>(plane, 1));
    parallel_for(ctx, g.w.batch, grain, [&](std::int64_t n0, std::int64_t n1) {
      std::fill(pdx + n0 * image, pdx + n1 * image, T(0));
      T* dcol = scratch<T>(g.block * g.kk);  // (block, kk)
      for (std::int64_t r0 = n0 * plane; r0 < n1 * plane; r0 += g.block) {
        const std::int64_t r1 = std::min(n1 * plane, r0 + g.block);
        for (std::int64_t group = 0; group < g.groups; ++group) {
          gemm_conv(false, true, r1 - r0, g.kk, gf, pdy + r0 * g.filters + group * gf, g.filters, pk + group * gf,
               g.filters, T(0), dcol, g.kk);
          col2im_add(dcol, g.w, g.pixel, r0, r1, pdx + group * cg);
        }
      }
    });
  });
}

}  // namespace

void register_conv_kernels() {
  register_kernel(op_names::conv2d, DeviceKind::cpu, conv2d_kernel);
  register_kernel(op_names::conv2d_bias, DeviceKind::cpu, conv2d_bias_kernel);
  register_kernel(op_names::conv2d_backward_data, DeviceKind::cpu, conv2d_backward_data_kernel);
  register_kernel(op_names::conv2d_backward_filter, DeviceKind::cpu, conv2d_backward_filter_kernel);
  register_kernel(op_names::conv2d_transpose, DeviceKind::cpu, conv2d_backward_data_kernel);
}

void register_nn_kernels() {
  register_conv_kernels();
  register_pool_kernels();
  register_conv3d_kernels();
  register_pool3d_kernels();
  register_normalization_kernels();
  register_dropout_kernels();
  register_image_kernels();
}

}  // namespace tower::cpu
