// CPU kernels of the optimizer updates: one fused elementwise loop per optimizer, Keras 3's rules
// (keras/src/optimizers/{sgd,rmsprop,adam,adagrad,adadelta}.py) evaluated in the variable's dtype.
#include <algorithm>
#include <cmath>

#include "tower/backends/cpu/kernels.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// The value of a one-element tensor (lr, iteration) in the variable's type.
template <typename T>
T scalar_of(const Tensor& t) {
  return t.data<T>()[0];
}

// Inputs: var, grad, lr, [momentum]. Keras SGD:
//   no momentum: var -= lr * g
//   momentum:    m = momentum * m - lr * g; var += m   (nesterov: var += momentum * m - lr * g)
void apply_sgd_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const bool has_m = ctx.attrs().get_bool("has_momentum");
  const bool nesterov = ctx.attrs().get_bool("nesterov");
  const double momentum = ctx.attrs().get_float("momentum");
  dispatch_floating(var.dtype(), op_names::apply_sgd, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    T* m = has_m ? ctx.inputs[3].data<T>() : nullptr;
    const T mu = static_cast<T>(momentum);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      if (!m) {
        for (auto i = b; i < e; ++i) w[i] -= g[i] * lr;
      } else if (nesterov) {
        for (auto i = b; i < e; ++i) {
          m[i] = m[i] * mu - g[i] * lr;
          w[i] += m[i] * mu - g[i] * lr;
        }
      } else {
        for (auto i = b; i < e; ++i) {
          m[i] = m[i] * mu - g[i] * lr;
          w[i] += m[i];
        }
      }
    });
  });
}

// Inputs: var, grad, lr, velocity, [momentum], [average_grad]. Keras RMSprop:
//   velocity = rho * velocity + (1 - rho) * g^2
//   centered: average_grad = rho * average_grad + (1 - rho) * g; denom = velocity - average_grad^2 + eps
//   else:     denom = velocity + eps
//   increment = lr * g / sqrt(denom)
//   momentum: mom = momentum * mom + increment; var -= mom   else: var -= increment
void apply_rmsprop_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const bool has_m = ctx.attrs().get_bool("has_momentum");
  const bool centered = ctx.attrs().get_bool("has_average_grad");
  const double rho = ctx.attrs().get_float("rho"), momentum = ctx.attrs().get_float("momentum");
  const double epsilon = ctx.attrs().get_float("epsilon");
  dispatch_floating(var.dtype(), op_names::apply_rmsprop, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    T* vel = ctx.inputs[3].data<T>();
    std::size_t next = 4;
    T* mom = has_m ? ctx.inputs[next++].data<T>() : nullptr;
    T* avg = centered ? ctx.inputs[next++].data<T>() : nullptr;
    const T r = static_cast<T>(rho), one_minus_r = static_cast<T>(1 - rho);
    const T mu = static_cast<T>(momentum), eps = static_cast<T>(epsilon);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) {
        const T gi = g[i];
        vel[i] = r * vel[i] + one_minus_r * (gi * gi);
        T denom;
        if (avg) {
          avg[i] = r * avg[i] + one_minus_r * gi;
          denom = vel[i] - avg[i] * avg[i] + eps;
        } else {
          denom = vel[i] + eps;
        }
        const T increment = lr * gi / std::sqrt(denom);
        if (mom) {
          mom[i] = mu * mom[i] + increment;
          w[i] -= mom[i];
        } else {
          w[i] -= increment;
        }
      }
    });
  });
}

// Inputs: var, grad, lr, iteration (1-based), m, v, [v_hat]. Keras Adam (AdamW with weight_decay):
//   weight decay first (base_optimizer._apply_weight_decay): var -= var * wd * lr
//   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
//   m += (g - m) * (1 - beta_1); v += (g^2 - v) * (1 - beta_2)
//   amsgrad: v_hat = max(v_hat, v), used in place of v
//   var -= alpha * m / (sqrt(v) + eps)
void apply_adam_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const bool amsgrad = ctx.attrs().get_bool("has_v_hat");
  const double beta_1 = ctx.attrs().get_float("beta_1"), beta_2 = ctx.attrs().get_float("beta_2");
  const double epsilon = ctx.attrs().get_float("epsilon"), weight_decay = ctx.attrs().get_float("weight_decay");
  dispatch_floating(var.dtype(), op_names::apply_adam, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    const T t = scalar_of<T>(ctx.inputs[3]);
    T* m = ctx.inputs[4].data<T>();
    T* v = ctx.inputs[5].data<T>();
    T* v_hat = amsgrad ? ctx.inputs[6].data<T>() : nullptr;
    // Keras computes these in the variable's dtype.
    const T b1_power = std::pow(static_cast<T>(beta_1), t), b2_power = std::pow(static_cast<T>(beta_2), t);
    const T alpha = lr * std::sqrt(T(1) - b2_power) / (T(1) - b1_power);
    const T one_minus_b1 = static_cast<T>(1 - beta_1), one_minus_b2 = static_cast<T>(1 - beta_2);
    const T eps = static_cast<T>(epsilon), wd = static_cast<T>(weight_decay);
    const bool decay = weight_decay != 0;
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) {
        if (decay) w[i] = w[i] - w[i] * wd * lr;
        const T gi = g[i];
        m[i] += (gi - m[i]) * one_minus_b1;
        v[i] += (gi * gi - v[i]) * one_minus_b2;
        T vi = v[i];
        if (v_hat) vi = v_hat[i] = std::max(v_hat[i], vi);
        w[i] -= (m[i] * alpha) / (std::sqrt(vi) + eps);
      }
    });
  });
}

// Inputs: var, grad, lr, accumulator. Keras Adagrad: accumulator += g^2; var -= lr * g / sqrt(accumulator + eps)
void apply_adagrad_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const double epsilon = ctx.attrs().get_float("epsilon");
  dispatch_floating(var.dtype(), op_names::apply_adagrad, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    T* acc = ctx.inputs[3].data<T>();
    const T eps = static_cast<T>(epsilon);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) {
        acc[i] += g[i] * g[i];
        w[i] -= lr * g[i] / std::sqrt(acc[i] + eps);
      }
    });
  });
}

// Inputs: var, grad, lr, accumulated_grad, accumulated_delta. Keras Adadelta:
//   accumulated_grad = rho * accumulated_grad + (1 - rho) * g^2
//   delta = -sqrt(accumulated_delta + eps) * g / sqrt(accumulated_grad + eps)
//   accumulated_delta = rho * accumulated_delta + (1 - rho) * delta^2
//   var += lr * delta
void apply_adadelta_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const double rho = ctx.attrs().get_float("rho"), epsilon = ctx.attrs().get_float("epsilon");
  dispatch_floating(var.dtype(), op_names::apply_adadelta, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    T* acc_g = ctx.inputs[3].data<T>();
    T* acc_d = ctx.inputs[4].data<T>();
    const T r = static_cast<T>(rho), one_minus_r = static_cast<T>(1 - rho), eps = static_cast<T>(epsilon);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) {
        const T gi = g[i];
        acc_g[i] = r * acc_g[i] + one_minus_r * (gi * gi);
        const T delta = -(std::sqrt(acc_d[i] + eps) * gi / std::sqrt(acc_g[i] + eps));
        acc_d[i] = r * acc_d[i] + one_minus_r * (delta * delta);
        w[i] += lr * delta;
      }
    });
  });
}

}  // namespace

void register_optimizer_kernels() {
  register_kernel(op_names::apply_sgd, DeviceKind::cpu, apply_sgd_kernel);
  register_kernel(op_names::apply_rmsprop, DeviceKind::cpu, apply_rmsprop_kernel);
  register_kernel(op_names::apply_adam, DeviceKind::cpu, apply_adam_kernel);
  register_kernel(op_names::apply_adagrad, DeviceKind::cpu, apply_adagrad_kernel);
  register_kernel(op_names::apply_adadelta, DeviceKind::cpu, apply_adadelta_kernel);
}

}  // namespace tower::cpu
