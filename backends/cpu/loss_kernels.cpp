// CPU kernels of the loss ops: (sparse) softmax cross-entropy with its fused gradient, mean
// squared / absolute error and their gradient ops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tower/backends/cpu/kernels.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// Rows per parallel chunk when each row costs about `row_cost` element operations.
std::int64_t row_grain(std::int64_t row_cost) {
  return std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, row_cost));
}

// Writes softmax(x) of one row of n logits into p and returns log(sum(exp(x))); shifted by the
// max so that exp never overflows, and one exp per element.
template <typename T>
T softmax_row(const T* x, T* p, std::int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (std::int64_t j = 0; j < n; ++j) m = std::max(m, x[j]);
  T sum = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    p[j] = std::exp(x[j] - m);
    sum += p[j];
  }
  T inv = T(1) / sum;
  for (std::int64_t j = 0; j < n; ++j) p[j] *= inv;
  return m + std::log(sum);
}

// loss[b] = sum_j labels[b, j] (lse(logits[b]) - logits[b, j]); backprop = softmax(logits) - labels.
void softmax_cross_entropy_kernel(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];  // (batch, classes)
  const Tensor& labels = ctx.inputs[1];  // (batch, classes)
  Tensor& loss = ctx.outputs[0];         // (batch,)
  Tensor& backprop = ctx.outputs[1];     // (batch, classes)
  std::int64_t batch = logits.shape()[0], classes = logits.shape()[1];
  dispatch_floating(logits.dtype(), op_names::softmax_cross_entropy, [&]<typename T>() {
    const T* x = logits.data<T>();
    const T* t = labels.data<T>();
    T* l = loss.data<T>();
    T* bp = backprop.data<T>();
    parallel_for(ctx, batch, row_grain(4 * classes), [&](std::int64_t b, std::int64_t e) {
      for (auto r = b; r < e; ++r) {
        const T* xr = x + r * classes;
        const T* tr = t + r * classes;
        T* br = bp + r * classes;
        T lse = softmax_row(xr, br, classes);
        T acc = 0;
        for (std::int64_t j = 0; j < classes; ++j) {
          // A zero label contributes nothing, even where the logit is -inf.
          if (tr[j] != T(0)) acc += tr[j] * (lse - xr[j]);
          br[j] -= tr[j];
        }
        l[r] = acc;
      }
    });
  });
}

// As softmax_cross_entropy with one-hot labels given as class indices.
void sparse_softmax_cross_entropy_kernel(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];  // (batch, classes)
  const Tensor& labels = ctx.inputs[1];  // (batch,) integer
  Tensor& loss = ctx.outputs[0];         // (batch,)
  Tensor& backprop = ctx.outputs[1];     // (batch, classes)
  std::int64_t batch = logits.shape()[0], classes = logits.shape()[1];
  dispatch_integer(labels.dtype(), op_names::sparse_softmax_cross_entropy, [&]<typename I>() {
    const I* y = labels.data<I>();
    // Checked before the parallel loop: pool workers must not throw.
    for (std::int64_t r = 0; r < batch; ++r) {
      auto label = static_cast<std::int64_t>(y[r]);
      if (label < 0 || label >= classes)
        raise<ValueError>(
            "sparse_softmax_cross_entropy \"{}\": label {} in row {} is out of range for {} classes (labels "
            "must lie in [0, {}); check the number of output units)",
            ctx.node.name(), label, r, classes, classes);
    }
    dispatch_floating(logits.dtype(), op_names::sparse_softmax_cross_entropy, [&]<typename T>() {
      const T* x = logits.data<T>();
      T* l = loss.data<T>();
      T* bp = backprop.data<T>();
      parallel_for(ctx, batch, row_grain(3 * classes), [&](std::int64_t b, std::int64_t e) {
        for (auto r = b; r < e; ++r) {
          const T* xr = x + r * classes;
          T* br = bp + r * classes;
          auto label = static_cast<std::int64_t>(y[r]);
          T lse = softmax_row(xr, br, classes);
          br[label] -= T(1);
          l[r] = lse - xr[label];
        }
      });
    });
  });
}

// dlogits[b, :] = dloss[b] * backprop[b, :].
void softmax_cross_entropy_grad_kernel(KernelContext& ctx) {
  const Tensor& dloss = ctx.inputs[0];     // (batch,)
  const Tensor& backprop = ctx.inputs[1];  // (batch, classes)
  Tensor& dlogits = ctx.outputs[0];        // (batch, classes)
  std::int64_t batch = backprop.shape()[0], classes = backprop.shape()[1];
  dispatch_floating(backprop.dtype(), op_names::softmax_cross_entropy_grad, [&]<typename T>() {
    const T* d = dloss.data<T>();
    const T* bp = backprop.data<T>();
    T* out = dlogits.data<T>();
    parallel_for(ctx, batch, row_grain(classes), [&](std::int64_t b, std::int64_t e) {
      for (auto r = b; r < e; ++r)
        for (std::int64_t j = 0; j < classes; ++j) out[r * classes + j] = d[r] * bp[r * classes + j];
    });
  });
}

// loss[r] = mean_j f(y_pred[r, j] - y_true[r, j]) over the last axis (d elements).
template <typename F>
void mean_error_kernel(KernelContext& ctx, const char* op, F f) {
  const Tensor& y_true = ctx.inputs[0];  // (..., d)
  const Tensor& y_pred = ctx.inputs[1];  // (..., d)
  Tensor& loss = ctx.outputs[0];         // (...)
  std::int64_t d = y_pred.shape().dim(-1), rows = loss.num_elements();
  dispatch_floating(y_pred.dtype(), op, [&]<typename T>() {
    const T* t = y_true.data<T>();
    const T* p = y_pred.data<T>();
    T* l = loss.data<T>();
    if (d == 0) {  // the mean of nothing, as NumPy
      for (std::int64_t r = 0; r < rows; ++r) l[r] = std::numeric_limits<T>::quiet_NaN();
      return;
    }
    T inv_d = T(1) / static_cast<T>(d);
    parallel_for(ctx, rows, row_grain(d), [&](std::int64_t b, std::int64_t e) {
      for (auto r = b; r < e; ++r) {
        T acc = 0;
        for (std::int64_t j = 0; j < d; ++j) acc += f(p[r * d + j] - t[r * d + j]);
        l[r] = acc * inv_d;
      }
    });
  });
}

// d_pred[r, j] = dloss[r] * c * f(y_pred[r, j] - y_true[r, j]) / d.
template <typename F>
void mean_error_grad_kernel(KernelContext& ctx, const char* op, double c, F f) {
  const Tensor& dloss = ctx.inputs[0];   // (...)
  const Tensor& y_true = ctx.inputs[1];  // (..., d)
  const Tensor& y_pred = ctx.inputs[2];  // (..., d)
  Tensor& d_pred = ctx.outputs[0];       // (..., d)
  std::int64_t d = y_pred.shape().dim(-1), rows = dloss.num_elements();
  if (d == 0) return;
  dispatch_floating(y_pred.dtype(), op, [&]<typename T>() {
    const T* g = dloss.data<T>();
    const T* t = y_true.data<T>();
    const T* p = y_pred.data<T>();
    T* out = d_pred.data<T>();
    T k = static_cast<T>(c) / static_cast<T>(d);
    parallel_for(ctx, rows, row_grain(d), [&](std::int64_t b, std::int64_t e) {
      for (auto r = b; r < e; ++r) {
        T gr = g[r] * k;
        for (std::int64_t j = 0; j < d; ++j) out[r * d + j] = gr * f(p[r * d + j] - t[r * d + j]);
      }
    });
  });
}

void mean_squared_error_kernel(KernelContext& ctx) {
  mean_error_kernel(ctx, op_names::mean_squared_error, [](auto diff) { return diff * diff; });
}
void mean_absolute_error_kernel(KernelContext& ctx) {
  mean_error_kernel(ctx, op_names::mean_absolute_error, [](auto diff) { return std::abs(diff); });
}
void mean_squared_error_grad_kernel(KernelContext& ctx) {
  mean_error_grad_kernel(ctx, op_names::mean_squared_error_grad, 2.0, [](auto diff) { return diff; });
}
void mean_absolute_error_grad_kernel(KernelContext& ctx) {
  // sign(0) = 0, as TF: equal values pull neither way.
  mean_error_grad_kernel(ctx, op_names::mean_absolute_error_grad, 1.0, [](auto diff) {
    using T = decltype(diff);
    return static_cast<T>((T(0) < diff) - (diff < T(0)));
  });
}

}  // namespace

void register_loss_kernels() {
  const DeviceKind cpu = DeviceKind::cpu;
  register_kernel(op_names::softmax_cross_entropy, cpu, softmax_cross_entropy_kernel);
  register_kernel(op_names::sparse_softmax_cross_entropy, cpu, sparse_softmax_cross_entropy_kernel);
  register_kernel(op_names::softmax_cross_entropy_grad, cpu, softmax_cross_entropy_grad_kernel);
  register_kernel(op_names::mean_squared_error, cpu, mean_squared_error_kernel);
  register_kernel(op_names::mean_absolute_error, cpu, mean_absolute_error_kernel);
  register_kernel(op_names::mean_squared_error_grad, cpu, mean_squared_error_grad_kernel);
  register_kernel(op_names::mean_absolute_error_grad, cpu, mean_absolute_error_grad_kernel);
}

}  // namespace tower::cpu
