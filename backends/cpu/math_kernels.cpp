// CPU kernels of the math ops: broadcasting binary arithmetic, scale, sum_to, broadcast_like,
// matmul and batch_matmul (OpenBLAS, split into row blocks over the device's pool) and bias_add.
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/onednn.h"
#include "tower/backends/cpu/strided.h"
#include "tower/core/checked.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cpu {

namespace {

// y = f(a, b) with NumPy broadcasting; a, b, y share one dtype.
template <typename F>
void binary_kernel(KernelContext& ctx, const char* op, F f) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  dispatch_any(y.dtype(), op, [&]<typename T>() {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    const std::int64_t n = y.num_elements();
    if (a.shape() == b.shape()) {
      parallel_for(ctx, n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
        for (auto i = lo; i < hi; ++i) py[i] = f(pa[i], pb[i]);
      });
      return;
    }
    if (b.num_elements() == 1 && a.num_elements() == n) {
      const T s = pb[0];
      parallel_for(ctx, n, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
        for (auto i = lo; i < hi; ++i) py[i] = f(pa[i], s);
      });
      return;
    }
    const Dims dims = y.shape().dims();
    const Dims sa = broadcast_strides(a.shape(), y.shape()), sb = broadcast_strides(b.shape(), y.shape());
    const std::int64_t row_len = dims.empty() ? 1 : dims.back();
    parallel_for(ctx, num_rows(dims), std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(row_len, 1)),
                 [&](std::int64_t lo, std::int64_t hi) {
                   const std::array<const Dims*, 2> strides{&sa, &sb};
                   std::int64_t out = lo * row_len;
                   for_each_row<2>(dims, strides, lo, hi, [&](const std::array<std::int64_t, 2>& off, std::int64_t len) {
                     const std::int64_t ia = sa.empty() ? 0 : sa.back(), ib = sb.empty() ? 0 : sb.back();
                     const T* ra = pa + off[0];
                     const T* rb = pb + off[1];
                     for (std::int64_t k = 0; k < len; ++k) py[out + k] = f(ra[k * ia], rb[k * ib]);
                     out += len;
                   });
                 });
  });
}

void add_kernel(KernelContext& ctx) {
  binary_kernel(ctx, op_names::add, [](auto a, auto b) { return a + b; });
}
void subtract_kernel(KernelContext& ctx) {
  binary_kernel(ctx, op_names::subtract, [](auto a, auto b) { return a - b; });
}
void multiply_kernel(KernelContext& ctx) {
  binary_kernel(ctx, op_names::multiply, [](auto a, auto b) { return a * b; });
}
void divide_kernel(KernelContext& ctx) {
  binary_kernel(ctx, op_names::divide, [](auto a, auto b) { return a / b; });
}
void maximum_kernel(KernelContext& ctx) {
  binary_kernel(ctx, op_names::maximum, [](auto a, auto b) { return a >= b ? a : b; });
}
void minimum_kernel(KernelContext& ctx) {
  binary_kernel(ctx, op_names::minimum, [](auto a, auto b) { return a <= b ? a : b; });
}
void compare_mask_kernel(KernelContext& ctx) {
  const std::string& mode = ctx.attrs().get_string("mode");
  auto run = [&](auto compare) {
    binary_kernel(ctx, op_names::compare_mask,
                  [compare](auto a, auto b) { return static_cast<decltype(a)>(compare(a, b) ? 1 : 0); });
  };
  if (mode == "ge") run([](auto a, auto b) { return a >= b; });
  else if (mode == "le") run([](auto a, auto b) { return a <= b; });
  else if (mode == "gt") run([](auto a, auto b) { return a > b; });
  else if (mode == "lt") run([](auto a, auto b) { return a < b; });
  else run([](auto a, auto b) { return a == b; });
}

void scale_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const double factor = ctx.attrs().get_float("factor");
  dispatch_floating(x.dtype(), op_names::scale, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const T f = static_cast<T>(factor);
    parallel_for(ctx, x.num_elements(), kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
      for (auto i = lo; i < hi; ++i) py[i] = px[i] * f;
    });
  });
}

// y (like's shape) = x summed over the axes along which like was broadcast.
void sum_to_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  sum_over_axes(ctx, x, sum_to_axes(x.shape(), ctx.outputs[0].shape()), ctx.outputs[0]);
}

void broadcast_like_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  dispatch_any(y.dtype(), op_names::broadcast_like, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const Dims dims = y.shape().dims();
    const Dims sx = broadcast_strides(x.shape(), y.shape());
    const std::int64_t row_len = dims.empty() ? 1 : dims.back();
    parallel_for(ctx, num_rows(dims), std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(row_len, 1)),
                 [&](std::int64_t lo, std::int64_t hi) {
                   std::int64_t out = lo * row_len;
                   for_each_row<1>(dims, {&sx}, lo, hi, [&](const std::array<std::int64_t, 1>& off, std::int64_t len) {
                     const std::int64_t step = sx.empty() ? 0 : sx.back();
                     for (std::int64_t k = 0; k < len; ++k) py[out + k] = px[off[0] + k * step];
                     out += len;
                   });
                 });
  });
}

// y (m, n) = op(a) (m, k) x op(b) (k, n), then finish(rows lo..hi of y) while they are in cache. Row
// blocks of y run on the pool's threads; OpenBLAS itself is single-threaded so that every CPU device
// owns exactly its pool's threads.
template <typename T, typename Finish>
void gemm_rows(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& y, bool ta, bool tb, Finish finish) {
  const auto m = y.shape()[0], n = y.shape()[1];
  const auto k = a.shape()[ta ? 0 : 1];
  // OpenBLAS takes 32-bit sizes; a larger one would wrap (checked here, before any parallel work).
  for (std::int64_t size : {m, n, k, a.shape()[1], b.shape()[1]})
    (void)checked_int(size, "matmul on the CPU: a dimension of its operands",
                      "OpenBLAS takes at most 2147483647: use a smaller batch or layer");
  const int lda = static_cast<int>(a.shape()[1]), ldb = static_cast<int>(b.shape()[1]);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* py = y.data<T>();
  // Few rows and a long k (a weight gradient: m and n the kernel's sizes, k the batch's rows): row
  // blocks would pack all of op(b) on every thread for a small product each. Each thread multiplies
  // a slice of k into its own (m, n) partial instead, and the partials are added.
  const int threads = cpu_pool(ctx).size();
  if (threads > 1 && k >= 8 * std::max(m, n) && m * n * k >= (1 << 20)) {
    T* partials = scratch<T>((threads - 1) * m * n);  // threads 1.. (thread 0: y), on the caller's buffer
    parallel_for(ctx, threads, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t t = lo; t < hi; ++t) {
        const std::int64_t k0 = k * t / threads, k1 = k * (t + 1) / threads;
        const T* a_part = ta ? pa + k0 * lda : pa + k0;  // op(a)'s columns k0..k1
        const T* b_part = tb ? pb + k0 : pb + k0 * ldb;  // op(b)'s rows k0..k1
        T* c = t == 0 ? py : partials + (t - 1) * m * n;
        gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k1 - k0), a_part, lda, b_part, ldb, c,
             static_cast<int>(n));
      }
    });
    for (int t = 1; t < threads; ++t) {
      const T* c = partials + (t - 1) * m * n;
      for (std::int64_t i = 0; i < m * n; ++i) py[i] += c[i];
    }
    finish(py, 0, m);
    return;
  }
  // About 1 MFLOP per block at least; fewer, larger blocks keep OpenBLAS efficient.
  const std::int64_t grain = std::max<std::int64_t>(16, (1 << 20) / std::max<std::int64_t>(1, 2 * n * k));
  parallel_for(ctx, m, grain, [&](std::int64_t lo, std::int64_t hi) {
    if (k == 0) {
      std::fill(py + lo * n, py + hi * n, T(0));
    } else {
      const T* a_rows = ta ? pa + lo : pa + lo * lda;  // op(a) rows lo..hi are a's columns when transposed
      gemm(ta, tb, static_cast<int>(hi - lo), static_cast<int>(n), static_cast<int>(k), a_rows, lda, pb, ldb,
           py + lo * n, static_cast<int>(n));
    }
    finish(py, lo, hi);
  });
}

void matmul_kernel(KernelContext& ctx) {
  const bool ta = ctx.attrs().get_bool("transpose_a"), tb = ctx.attrs().get_bool("transpose_b");
  dispatch_floating(ctx.outputs[0].dtype(), op_names::matmul, [&]<typename T>() {
    gemm_rows<T>(ctx, ctx.inputs[0], ctx.inputs[1], ctx.outputs[0], ta, tb, [](T*, std::int64_t, std::int64_t) {});
  });
}

// y (B, m, n) = op(a) (B, m, k) x op(b) (B, k, n) for each of the B batch items (the leading axes
// folded). The B·m rows of y are split into blocks over the pool's threads, as gemm_rows does, so that
// few large items and many small ones both keep every thread busy; a block spanning several items
// runs one GEMM per item it touches.
void batch_matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const bool ta = ctx.attrs().get_bool("transpose_a"), tb = ctx.attrs().get_bool("transpose_b");
  const int r = y.shape().rank();
  const std::int64_t m = y.shape()[r - 2], n = y.shape()[r - 1];
  const std::int64_t k = a.shape()[ta ? r - 2 : r - 1];
  const std::int64_t lda = a.shape()[r - 1], ldb = b.shape()[r - 1];
  for (std::int64_t size : {m, n, k, lda, ldb})
    (void)checked_int(size, "batch_matmul on the CPU: a dimension of its operands",
                      "OpenBLAS takes at most 2147483647: use a smaller batch or layer");
  const std::int64_t batch = m == 0 ? 0 : y.num_elements() / std::max<std::int64_t>(1, m * n);
  const std::int64_t a_step = m * k, b_step = k * n, y_step = m * n;  // elements per batch item
  dispatch_floating(y.dtype(), op_names::batch_matmul, [&]<typename T>() {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    if (n == 0) return;
    const std::int64_t grain = std::max<std::int64_t>(16, (1 << 20) / std::max<std::int64_t>(1, 2 * n * k));
    parallel_for(ctx, batch * m, grain, [&](std::int64_t lo, std::int64_t hi) {
      while (lo < hi) {
        const std::int64_t item = lo / m, row = lo % m;
        const std::int64_t rows = std::min(hi - lo, m - row);  // this item's rows in the block
        T* y_rows = py + item * y_step + row * n;
        if (k == 0) {
          std::fill(y_rows, y_rows + rows * n, T(0));
        } else {
          const T* a_item = pa + item * a_step;
          const T* a_rows = ta ? a_item + row : a_item + row * lda;  // op(a)'s rows are a's columns when transposed
          gemm(ta, tb, static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k), a_rows, static_cast<int>(lda),
               pb + item * b_step, static_cast<int>(ldb), y_rows, static_cast<int>(n));
        }
        lo += rows;
      }
    });
  });
}

// y = activation(x kernel + bias): the bias and ReLU added to each block of rows right after its GEMM.
void dense_kernel(KernelContext& ctx) {
  const Tensor& bias = ctx.inputs[2];
  const bool relu = ctx.attrs().get_string("activation") == "relu";
  const std::int64_t n = bias.num_elements();
  dispatch_floating(ctx.outputs[0].dtype(), op_names::dense, [&]<typename T>() {
    const T* pb = bias.data<T>();
    gemm_rows<T>(ctx, ctx.inputs[0], ctx.inputs[1], ctx.outputs[0], false, false, [&](T* py, std::int64_t lo, std::int64_t hi) {
      for (auto r = lo; r < hi; ++r) {
        T* row = py + r * n;
        for (std::int64_t j = 0; j < n; ++j) row[j] += pb[j];
        if (relu)
          for (std::int64_t j = 0; j < n; ++j) row[j] = row[j] < T(0) ? T(0) : row[j];  // as the relu op
      }
    });
  });
}

void bias_add_kernel(KernelContext& ctx) {
  add_bias(ctx, ctx.inputs[0], ctx.inputs[1], ctx.attrs().get_string("activation") == "relu", ctx.outputs[0]);
}

void bias_add_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  std::vector<int> axes;
  for (int d = 0; d + 1 < dy.shape().rank(); ++d) axes.push_back(d);
  sum_over_axes(ctx, dy, axes, ctx.outputs[0]);
}

}  // namespace

void add_bias(KernelContext& ctx, const Tensor& x, const Tensor& bias, bool relu, Tensor& y) {
  dispatch_floating(x.dtype(), op_names::bias_add, [&]<typename T>() {
    const T* px = x.data<T>();
    const T* pb = bias.data<T>();
    T* py = y.data<T>();
    const std::int64_t c = bias.num_elements(), rows = x.num_elements() / std::max<std::int64_t>(c, 1);
    parallel_for(ctx, rows, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(c, 1)),
                 [=](std::int64_t lo, std::int64_t hi) {
                   for (auto r = lo; r < hi; ++r)
                     for (std::int64_t j = 0; j < c; ++j) {
                       const T v = px[r * c + j] + pb[j];
                       py[r * c + j] = relu && v < T(0) ? T(0) : v;  // as the relu op
                     }
                 });
  });
}

void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
          float beta) {
  if (onednn::sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)) return;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
              ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb, double* c, int ldc,
          double beta) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b,
              ldb, beta, c, ldc);
}

void register_math_kernels() {
  openblas_set_num_threads(1);  // parallelism comes from each CPU device's pool
  register_kernel(op_names::add, DeviceKind::cpu, add_kernel);
  register_kernel(op_names::subtract, DeviceKind::cpu, subtract_kernel);
  register_kernel(op_names::multiply, DeviceKind::cpu, multiply_kernel);
  register_kernel(op_names::divide, DeviceKind::cpu, divide_kernel);
  register_kernel(op_names::maximum, DeviceKind::cpu, maximum_kernel);
  register_kernel(op_names::minimum, DeviceKind::cpu, minimum_kernel);
  register_kernel(op_names::compare_mask, DeviceKind::cpu, compare_mask_kernel);
  register_kernel(op_names::scale, DeviceKind::cpu, scale_kernel);
  register_kernel(op_names::sum_to, DeviceKind::cpu, sum_to_kernel);
  register_kernel(op_names::broadcast_like, DeviceKind::cpu, broadcast_like_kernel);
  register_kernel(op_names::matmul, DeviceKind::cpu, matmul_kernel);
  register_kernel(op_names::batch_matmul, DeviceKind::cpu, batch_matmul_kernel);
  register_kernel(op_names::dense, DeviceKind::cpu, dense_kernel);
  register_kernel(op_names::bias_add, DeviceKind::cpu, bias_add_kernel);
  register_kernel(op_names::bias_add_grad, DeviceKind::cpu, bias_add_grad_kernel);
}

}  // namespace tower::cpu
