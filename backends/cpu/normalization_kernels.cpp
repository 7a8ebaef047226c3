// CPU normalization: batch normalization over every axis but the last (channels_last), training
// forward with batch statistics and its gradient, inference with moving statistics and its fused
// gradient; layer normalization over the last axis and its gradient.
#include <algorithm>
#include <cmath>
#include <vector>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/backends/cpu/vector_math.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// x (..., c) seen as (rows, c).
struct RowsView {
  std::int64_t rows, c;
};

RowsView rows_view(const Tensor& x) {
  const std::int64_t c = x.shape().dim(-1);
  return {c == 0 ? 0 : x.num_elements() / c, c};
}

std::int64_t row_grain(const RowsView& v) {
  return std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, v.c));
}

// Per-channel sums over all rows: each of up to pool-size parts adds fn(r0, r1, acc) into its own
// acc (width doubles; double keeps float32 sums of large batches accurate); returns their total
// (width doubles in the calling thread's scratch: read them before the next sum_rows).
template <typename F>
const double* sum_rows(KernelContext& ctx, const RowsView& v, std::int64_t width, F&& fn) {
  const std::int64_t parts = std::clamp<std::int64_t>(v.rows / row_grain(v), 1, cpu_pool(ctx).size());
  double* acc = scratch<double>(parts * width);  // (parts, width)
  std::fill_n(acc, parts * width, 0.0);
  parallel_for(ctx, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) fn(v.rows * p / parts, v.rows * (p + 1) / parts, acc + p * width);
  });
  for (std::int64_t p = 1; p < parts; ++p)
    for (std::int64_t e = 0; e < width; ++e) acc[e] += acc[p * width + e];
  return acc;
}

// (x, gamma, beta) -> {y, mean, variance (biased), inv_std}; two passes over x for an accurate variance.
void batch_norm_training_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const double eps = ctx.attrs().get_float("epsilon");
  const RowsView v = rows_view(x);
  dispatch_floating(x.dtype(), op_names::batch_norm_training, [&]<typename T>() {
    const T* px = x.data<T>();
    const T* gamma = ctx.inputs[1].data<T>();
    const T* beta = ctx.inputs[2].data<T>();
    T* py = ctx.outputs[0].data<T>();
    T* mean = ctx.outputs[1].data<T>();
    T* var = ctx.outputs[2].data<T>();
    T* inv_std = ctx.outputs[3].data<T>();
    const std::int64_t c = v.c;
    const double count = static_cast<double>(std::max<std::int64_t>(v.rows, 1));
    auto sums = sum_rows(ctx, v, c, [&](std::int64_t r0, std::int64_t r1, double* acc) {
      for (auto r = r0; r < r1; ++r)
        for (std::int64_t e = 0; e < c; ++e) acc[e] += px[r * c + e];
    });
    std::vector<double> m(static_cast<std::size_t>(c));  // (c,)
    for (std::int64_t e = 0; e < c; ++e) m[e] = sums[e] / count;
    auto squares = sum_rows(ctx, v, c, [&](std::int64_t r0, std::int64_t r1, double* acc) {
      for (auto r = r0; r < r1; ++r)
        for (std::int64_t e = 0; e < c; ++e) {
          const double d = px[r * c + e] - m[e];
          acc[e] += d * d;
        }
    });
    std::vector<T> scale(static_cast<std::size_t>(c)),
        shift(static_cast<std::size_t>(c));  // (c,): y = x * scale + shift
    for (std::int64_t e = 0; e < c; ++e) {
      const double variance = squares[e] / count, inv = 1.0 / std::sqrt(variance + eps);
      mean[e] = static_cast<T>(m[e]);
      var[e] = static_cast<T>(variance);
      inv_std[e] = static_cast<T>(inv);
      scale[e] = static_cast<T>(gamma[e] * inv);
      shift[e] = static_cast<T>(beta[e] - m[e] * gamma[e] * inv);
    }
    parallel_for(ctx, v.rows, row_grain(v), [&](std::int64_t r0, std::int64_t r1) {
      for (auto r = r0; r < r1; ++r)
        for (std::int64_t e = 0; e < c; ++e) py[r * c + e] = px[r * c + e] * scale[e] + shift[e];
    });
  });
}

// (dy, x, gamma, mean, inv_std) -> {dx, dgamma, dbeta} with x_hat = (x - mean) * inv_std:
// dbeta = sum dy, dgamma = sum dy x_hat, dx = gamma inv_std / n (n dy - dbeta - x_hat dgamma).
void batch_norm_training_grad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[1];
  const RowsView v = rows_view(x);
  dispatch_floating(x.dtype(), op_names::batch_norm_training_grad, [&]<typename T>() {
    const T* pdy = ctx.inputs[0].data<T>();
    const T* px = x.data<T>();
    const T* gamma = ctx.inputs[2].data<T>();
    const T* mean = ctx.inputs[3].data<T>();
    const T* inv_std = ctx.inputs[4].data<T>();
    T* pdx = ctx.outputs[0].data<T>();
    T* dgamma = ctx.outputs[1].data<T>();
    T* dbeta = ctx.outputs[2].data<T>();
    const std::int64_t c = v.c;
    auto sums = sum_rows(ctx, v, 2 * c, [&](std::int64_t r0, std::int64_t r1, double* acc) {  // (sum dy, sum dy x_hat)
      for (auto r = r0; r < r1; ++r)
        for (std::int64_t e = 0; e < c; ++e) {
          const double g = pdy[r * c + e];
          acc[e] += g;
          acc[c + e] += g * (px[r * c + e] - mean[e]) * inv_std[e];
        }
    });
    const double n = static_cast<double>(std::max<std::int64_t>(v.rows, 1));
    // dx = a dy + b x + d per channel, the formula above expanded.
    std::vector<T> a(static_cast<std::size_t>(c)), b(static_cast<std::size_t>(c)), d(static_cast<std::size_t>(c));
    for (std::int64_t e = 0; e < c; ++e) {
      dbeta[e] = static_cast<T>(sums[e]);
      dgamma[e] = static_cast<T>(sums[c + e]);
      const double k = static_cast<double>(gamma[e]) * inv_std[e];
      a[e] = static_cast<T>(k);
      b[e] = static_cast<T>(-k * sums[c + e] * inv_std[e] / n);
      d[e] = static_cast<T>(-k * sums[e] / n + k * sums[c + e] * inv_std[e] * mean[e] / n);
    }
    parallel_for(ctx, v.rows, row_grain(v), [&](std::int64_t r0, std::int64_t r1) {
      for (auto r = r0; r < r1; ++r)
        for (std::int64_t e = 0; e < c; ++e) pdx[r * c + e] = a[e] * pdy[r * c + e] + b[e] * px[r * c + e] + d[e];
    });
  });
}

// (dmean, dvariance, dinv_std, x, mean, inv_std) -> dx through the statistics outputs:
// dvariance' = dvariance - inv_std^3 / 2 * dinv_std; dx = (dmean + 2 (x - mean) dvariance') / n.
void batch_norm_stats_grad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[3];
  const RowsView v = rows_view(x);
  dispatch_floating(x.dtype(), op_names::batch_norm_stats_grad, [&]<typename T>() {
    const T* dmean = ctx.inputs[0].data<T>();
    const T* dvar = ctx.inputs[1].data<T>();
    const T* dinv = ctx.inputs[2].data<T>();
    const T* px = x.data<T>();
    const T* mean = ctx.inputs[4].data<T>();
    const T* inv_std = ctx.inputs[5].data<T>();
    T* pdx = ctx.outputs[0].data<T>();
    const std::int64_t c = v.c;
    const double n = static_cast<double>(std::max<std::int64_t>(v.rows, 1));
    std::vector<T> slope(static_cast<std::size_t>(c)), offset(static_cast<std::size_t>(c));  // dx = x slope + offset
    for (std::int64_t e = 0; e < c; ++e) {
      const double inv = inv_std[e];
      const double dv = dvar[e] - 0.5 * inv * inv * inv * dinv[e];
      slope[e] = static_cast<T>(2.0 * dv / n);
      offset[e] = static_cast<T>((dmean[e] - 2.0 * dv * mean[e]) / n);
    }
    parallel_for(ctx, v.rows, row_grain(v), [&](std::int64_t r0, std::int64_t r1) {
      for (auto r = r0; r < r1; ++r)
        for (std::int64_t e = 0; e < c; ++e) pdx[r * c + e] = px[r * c + e] * slope[e] + offset[e];
    });
  });
}

// (x, gamma, beta, mean, variance) -> y = gamma (x - mean) / sqrt(variance + eps) + beta.
void batch_norm_inference_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const double eps = ctx.attrs().get_float("epsilon");
  const RowsView v = rows_view(x);
  dispatch_floating(x.dtype(), op_names::batch_norm_inference, [&]<typename T>() {
    const T* px = x.data<T>();
    const T* gamma = ctx.inputs[1].data<T>();
    const T* beta = ctx.inputs[2].data<T>();
    const T* mean = ctx.inputs[3].data<T>();
    const T* var = ctx.inputs[4].data<T>();
    T* py = ctx.outputs[0].data<T>();
    const std::int64_t c = v.c;
    std::vector<T> scale(static_cast<std::size_t>(c)), shift(static_cast<std::size_t>(c));  // (c,)
    for (std::int64_t e = 0; e < c; ++e) {
      const double s = gamma[e] / std::sqrt(static_cast<double>(var[e]) + eps);
      scale[e] = static_cast<T>(s);
      shift[e] = static_cast<T>(beta[e] - mean[e] * s);
    }
    parallel_for(ctx, v.rows, row_grain(v), [&](std::int64_t r0, std::int64_t r1) {
      for (auto r = r0; r < r1; ++r)
        for (std::int64_t e = 0; e < c; ++e) py[r * c + e] = px[r * c + e] * scale[e] + shift[e];
    });
  });
}

// (dy, x, gamma, mean, variance) -> {dx, dgamma, dbeta, dmean, dvariance} of batch_norm_inference,
// with inv = 1 / sqrt(variance + eps): dx = dy gamma inv, dgamma = sum dy (x - mean) inv,
// dbeta = sum dy, dmean = -gamma inv dbeta, dvariance = -gamma inv^2 dgamma / 2.
void batch_norm_inference_grad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[1];
  const double eps = ctx.attrs().get_float("epsilon");
  const RowsView v = rows_view(x);
  dispatch_floating(x.dtype(), op_names::batch_norm_inference_grad, [&]<typename T>() {
    const T* pdy = ctx.inputs[0].data<T>();
    const T* px = x.data<T>();
    const T* gamma = ctx.inputs[2].data<T>();
    const T* mean = ctx.inputs[3].data<T>();
    const T* var = ctx.inputs[4].data<T>();
    T* pdx = ctx.outputs[0].data<T>();
    T* dgamma = ctx.outputs[1].data<T>();
    T* dbeta = ctx.outputs[2].data<T>();
    T* dmean = ctx.outputs[3].data<T>();
    T* dvar = ctx.outputs[4].data<T>();
    const std::int64_t c = v.c;
    std::vector<double> inv(static_cast<std::size_t>(c));  // (c,)
    std::vector<T> scale(static_cast<std::size_t>(c));     // (c,)
    for (std::int64_t e = 0; e < c; ++e) {
      inv[e] = 1.0 / std::sqrt(static_cast<double>(var[e]) + eps);
      scale[e] = static_cast<T>(gamma[e] * inv[e]);
    }
    auto sums =
        sum_rows(ctx, v, 2 * c, [&](std::int64_t r0, std::int64_t r1, double* acc) {  // (sum dy, sum dy (x - mean))
          for (auto r = r0; r < r1; ++r)
            for (std::int64_t e = 0; e < c; ++e) {
              const double g = pdy[r * c + e];
              acc[e] += g;
              acc[c + e] += g * (px[r * c + e] - mean[e]);
            }
        });
    for (std::int64_t e = 0; e < c; ++e) {
      dbeta[e] = static_cast<T>(sums[e]);
      dgamma[e] = static_cast<T>(sums[c + e] * inv[e]);
      dmean[e] = static_cast<T>(-gamma[e] * inv[e] * sums[e]);
      dvar[e] = static_cast<T>(-0.5 * gamma[e] * inv[e] * inv[e] * inv[e] * sums[c + e]);
    }
    parallel_for(ctx, v.rows, row_grain(v), [&](std::int64_t r0, std::int64_t r1) {
      for (auto r = r0; r < r1; ++r)
        for (std::int64_t e = 0; e < c; ++e) pdx[r * c + e] = pdy[r * c + e] * scale[e];
    });
  });
}

// ---- layer normalization ----------------------------------------------------------------------------
// Each row of n is normalized on its own: the rows are split between threads; the weight gradients
// are per-thread sums over rows (sum_rows). The row loops keep 16 partial sums and are compiled for
// AVX2 and AVX-512 too (TOWER_CPU_CLONES).

constexpr std::int64_t kLanes = 16;

template <typename T>
struct RowMoments {
  T mean, inv_std;  // inv_std = 1 / sqrt(biased variance + epsilon)
};

// Two passes over the row: the mean, then the mean squared deviation from it.
template <typename T>
TOWER_CPU_CLONES RowMoments<T> row_moments(const T* __restrict x, std::int64_t n, double eps) {
  T lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::int64_t j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
  T sum = 0;
  for (std::int64_t j = 0; j < kLanes; ++j) sum += lanes[j];
  for (; i < n; ++i) sum += x[i];
  const T mean = sum / static_cast<T>(n);
  T squares[kLanes] = {};
  for (i = 0; i + kLanes <= n; i += kLanes)
    for (std::int64_t j = 0; j < kLanes; ++j) squares[j] += (x[i + j] - mean) * (x[i + j] - mean);
  T deviation = 0;
  for (std::int64_t j = 0; j < kLanes; ++j) deviation += squares[j];
  for (; i < n; ++i) deviation += (x[i] - mean) * (x[i] - mean);
  return {mean, static_cast<T>(1.0 / std::sqrt(static_cast<double>(deviation) / static_cast<double>(n) + eps))};
}

// Keras's y = x * inv + (beta - mean * inv), inv = inv_std * gamma, rounded where Keras rounds.
template <typename T>
TOWER_CPU_CLONES void layer_norm_row(const T* __restrict x, const T* __restrict gamma, const T* __restrict beta,
                                     RowMoments<T> m, T* __restrict y, std::int64_t n) {
  for (std::int64_t e = 0; e < n; ++e) {
    const T inv = m.inv_std * gamma[e];
    y[e] = x[e] * inv + (beta[e] - m.mean * inv);
  }
}

// With g = dy gamma and x_hat = (x - mean) inv_std: dx = inv_std (g - mean(g) - x_hat mean(g x_hat));
// adds dy x_hat to dgamma and dy to dbeta (double, over the rows of one thread).
template <typename T>
TOWER_CPU_CLONES void layer_norm_grad_row(const T* __restrict dy, const T* __restrict x, const T* __restrict gamma,
                                          RowMoments<T> m, T* __restrict dx, double* __restrict dgamma,
                                          double* __restrict dbeta, std::int64_t n) {
  T g_lanes[kLanes] = {}, gx_lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::int64_t j = 0; j < kLanes; ++j) {
      const T g = dy[i + j] * gamma[i + j];
      g_lanes[j] += g;
      gx_lanes[j] += g * (x[i + j] - m.mean);
    }
  T g_sum = 0, gx_sum = 0;
  for (std::int64_t j = 0; j < kLanes; ++j) g_sum += g_lanes[j], gx_sum += gx_lanes[j];
  for (; i < n; ++i) {
    const T g = dy[i] * gamma[i];
    g_sum += g;
    gx_sum += g * (x[i] - m.mean);
  }
  const T g_mean = g_sum / static_cast<T>(n), gx_mean = gx_sum * m.inv_std / static_cast<T>(n);
  for (std::int64_t e = 0; e < n; ++e) {
    const T x_hat = (x[e] - m.mean) * m.inv_std;
    dx[e] = m.inv_std * (dy[e] * gamma[e] - g_mean - x_hat * gx_mean);
    dgamma[e] += static_cast<double>(dy[e] * x_hat);
    dbeta[e] += static_cast<double>(dy[e]);
  }
}

// (x, gamma, beta) -> y, x (..., n).
void layer_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const double eps = ctx.attrs().get_float("epsilon");
  const RowsView v = rows_view(x);
  dispatch_floating(x.dtype(), op_names::layer_norm, [&]<typename T>() {
    const T* px = x.data<T>();
    const T* gamma = ctx.inputs[1].data<T>();
    const T* beta = ctx.inputs[2].data<T>();
    T* py = ctx.outputs[0].data<T>();
    parallel_for(ctx, v.rows, row_grain(v), [&](std::int64_t r0, std::int64_t r1) {
      for (auto r = r0; r < r1; ++r) {
        const T* row = px + r * v.c;
        layer_norm_row(row, gamma, beta, row_moments(row, v.c, eps), py + r * v.c, v.c);
      }
    });
  });
}

// (dy, x, gamma) -> {dx, dgamma, dbeta}; the row statistics are computed again from x.
void layer_norm_grad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[1];
  const double eps = ctx.attrs().get_float("epsilon");
  const RowsView v = rows_view(x);
  dispatch_floating(x.dtype(), op_names::layer_norm_grad, [&]<typename T>() {
    const T* pdy = ctx.inputs[0].data<T>();
    const T* px = x.data<T>();
    const T* gamma = ctx.inputs[2].data<T>();
    T* pdx = ctx.outputs[0].data<T>();
    const std::int64_t n = v.c;
    auto sums = sum_rows(ctx, v, 2 * n, [&](std::int64_t r0, std::int64_t r1, double* acc) {  // (dgamma, dbeta)
      for (auto r = r0; r < r1; ++r) {
        const T* row = px + r * n;
        layer_norm_grad_row(pdy + r * n, row, gamma, row_moments(row, n, eps), pdx + r * n, acc, acc + n, n);
      }
    });
    T* dgamma = ctx.outputs[1].data<T>();
    T* dbeta = ctx.outputs[2].data<T>();
    for (std::int64_t e = 0; e < n; ++e) {
      dgamma[e] = static_cast<T>(sums[e]);
      dbeta[e] = static_cast<T>(sums[n + e]);
    }
  });
}

}  // namespace

void register_normalization_kernels() {
  register_kernel(op_names::batch_norm_training, DeviceKind::cpu, batch_norm_training_kernel);
  register_kernel(op_names::batch_norm_training_grad, DeviceKind::cpu, batch_norm_training_grad_kernel);
  register_kernel(op_names::batch_norm_stats_grad, DeviceKind::cpu, batch_norm_stats_grad_kernel);
  register_kernel(op_names::batch_norm_inference, DeviceKind::cpu, batch_norm_inference_kernel);
  register_kernel(op_names::batch_norm_inference_grad, DeviceKind::cpu, batch_norm_inference_grad_kernel);
  register_kernel(op_names::layer_norm, DeviceKind::cpu, layer_norm_kernel);
  register_kernel(op_names::layer_norm_grad, DeviceKind::cpu, layer_norm_grad_kernel);
}

}  // namespace tower::cpu
