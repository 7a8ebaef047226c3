// CPU kernels of the optimizer updates: one fused elementwise loop per optimizer, Keras 3's rules
// (keras/src/optimizers/{sgd,rmsprop,adam,adagrad,adadelta,adamax,nadam,lion,ftrl}.py, and
// base_optimizer.py's weight decay and EMA) evaluated in the variable's dtype.
#include <algorithm>
#include <cmath>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/vector_math.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/optimizer_math.h"

namespace tower::cpu {

namespace {

// The value of a one-element tensor (lr, iteration) in the variable's type.
template <typename T>
T scalar_of(const Tensor& t) {
  return t.data<T>()[0];
}

// Keras 3's base_optimizer._apply_weight_decay, before the update: var -= var * wd * lr, over one
// chunk [b, e) ahead of the update loop, which keeps that loop free of branches so it vectorizes.
template <typename T>
struct Decay {
  T wd, lr;
  bool on;
  Decay(const KernelContext& ctx, T learning_rate)
      : wd(static_cast<T>(ctx.attrs().has("weight_decay") ? ctx.attrs().get_float("weight_decay") : 0.0)),
        lr(learning_rate),
        on(wd != T(0)) {}
  void operator()(T* w, std::int64_t b, std::int64_t e) const {
    if (on)
      for (auto i = b; i < e; ++i) w[i] -= w[i] * wd * lr;
  }
};

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
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    T* m = has_m ? ctx.inputs[3].data<T>() : nullptr;
    const T mu = static_cast<T>(momentum);
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
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
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    T* vel = ctx.inputs[3].data<T>();
    std::size_t next = 4;
    T* mom = has_m ? ctx.inputs[next++].data<T>() : nullptr;
    T* avg = centered ? ctx.inputs[next++].data<T>() : nullptr;
    const T r = static_cast<T>(rho), one_minus_r = static_cast<T>(1 - rho);
    const T mu = static_cast<T>(momentum), eps = static_cast<T>(epsilon);
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
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
  const double epsilon = ctx.attrs().get_float("epsilon");
  dispatch_floating(var.dtype(), op_names::apply_adam, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    const T t = scalar_of<T>(ctx.inputs[3]);
    T* m = ctx.inputs[4].data<T>();
    T* v = ctx.inputs[5].data<T>();
    T* v_hat = amsgrad ? ctx.inputs[6].data<T>() : nullptr;
    // Keras computes these in the variable's dtype.
    const T b1_power = std::pow(static_cast<T>(beta_1), t), b2_power = std::pow(static_cast<T>(beta_2), t);
    const T alpha = lr * std::sqrt(T(1) - b2_power) / (T(1) - b1_power);
    const T one_minus_b1 = static_cast<T>(1 - beta_1), one_minus_b2 = static_cast<T>(1 - beta_2);
    const T eps = static_cast<T>(epsilon);
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
      for (auto i = b; i < e; ++i) {
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
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    T* acc = ctx.inputs[3].data<T>();
    const T eps = static_cast<T>(epsilon);
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
      for (auto i = b; i < e; ++i) {
        acc[i] += g[i] * g[i];
        w[i] -= lr * g[i] / std::sqrt(acc[i] + eps);
      }
    });
  });
}

// Adadelta's update of elements [b, e) (below). Two square roots and a division per element: on
// baseline x86-64's 4-wide SSE2 the loop is bound by them, so it is compiled for AVX2 and AVX-512 too
// (TOWER_CPU_CLONES). fp-contract is off for it, as GCC would fuse its multiplies and adds into FMAs in
// the AVX2 and AVX-512 clones: each operation rounds once in every clone, so all give the same bits.
template <typename T>
TOWER_CPU_CLONES __attribute__((optimize("fp-contract=off"))) void adadelta_update(T* __restrict w, const T* __restrict g, T* __restrict acc_g, T* __restrict acc_d,
                                      T r, T one_minus_r, T eps, T lr, std::int64_t b, std::int64_t e) {
  for (auto i = b; i < e; ++i) {
    const T gi = g[i];
    acc_g[i] = r * acc_g[i] + one_minus_r * (gi * gi);
    const T delta = -(std::sqrt(acc_d[i] + eps) * gi / std::sqrt(acc_g[i] + eps));
    acc_d[i] = r * acc_d[i] + one_minus_r * (delta * delta);
    w[i] += lr * delta;
  }
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
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    T* acc_g = ctx.inputs[3].data<T>();
    T* acc_d = ctx.inputs[4].data<T>();
    const T r = static_cast<T>(rho), one_minus_r = static_cast<T>(1 - rho), eps = static_cast<T>(epsilon);
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
      adadelta_update(w, g, acc_g, acc_d, r, one_minus_r, eps, lr, b, e);
    });
  });
}

// Inputs: var, grad, lr, iteration, m, u. Keras Adamax:
//   m += (g - m) * (1 - beta_1); u = max(beta_2 * u, |g|)
//   var -= lr * m / ((1 - beta_1^t) * (u + eps))
void apply_adamax_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const double beta_1 = ctx.attrs().get_float("beta_1"), beta_2 = ctx.attrs().get_float("beta_2");
  const double epsilon = ctx.attrs().get_float("epsilon");
  dispatch_floating(var.dtype(), op_names::apply_adamax, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    const T t = scalar_of<T>(ctx.inputs[3]);
    T* m = ctx.inputs[4].data<T>();
    T* u = ctx.inputs[5].data<T>();
    const T one_minus_b1_power = T(1) - std::pow(static_cast<T>(beta_1), t);
    const T one_minus_b1 = static_cast<T>(1 - beta_1), b2 = static_cast<T>(beta_2), eps = static_cast<T>(epsilon);
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
      for (auto i = b; i < e; ++i) {
        const T gi = g[i];
        m[i] += (gi - m[i]) * one_minus_b1;
        u[i] = std::max(b2 * u[i], std::abs(gi));
        w[i] -= (lr * m[i]) / (one_minus_b1_power * (u[i] + eps));
      }
    });
  });
}

// Inputs: var, grad, lr, iteration, m, v. Keras Nadam (u_t = beta_1 (1 - 0.5 * 0.96^t), u_product
// the product of u_s for s <= t, from nadam_u_product):
//   m += (g - m)(1 - beta_1); v += (g^2 - v)(1 - beta_2)
//   m_hat = u_{t+1} m / (1 - u_product u_{t+1}) + (1 - u_t) g / (1 - u_product)
//   var -= m_hat lr / (sqrt(v / (1 - beta_2^t)) + eps)
void apply_nadam_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const double beta_1 = ctx.attrs().get_float("beta_1"), beta_2 = ctx.attrs().get_float("beta_2");
  const double epsilon = ctx.attrs().get_float("epsilon");
  dispatch_floating(var.dtype(), op_names::apply_nadam, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    const T t = scalar_of<T>(ctx.inputs[3]);
    T* m = ctx.inputs[4].data<T>();
    T* v = ctx.inputs[5].data<T>();
    const T b1 = static_cast<T>(beta_1), b2 = static_cast<T>(beta_2), eps = static_cast<T>(epsilon);
    const T u_t = b1 * (T(1) - T(0.5) * std::pow(T(0.96), t));
    const T u_t_1 = b1 * (T(1) - T(0.5) * std::pow(T(0.96), t + T(1)));
    const T u_product_t = nadam_u_product<T>(b1, t);
    const T u_product_t_1 = u_product_t * u_t_1;
    const T one_minus_b2_power = T(1) - std::pow(b2, t);
    const T one_minus_b1 = static_cast<T>(1 - beta_1), one_minus_b2 = static_cast<T>(1 - beta_2);
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
      for (auto i = b; i < e; ++i) {
        const T gi = g[i];
        m[i] += (gi - m[i]) * one_minus_b1;
        v[i] += (gi * gi - v[i]) * one_minus_b2;
        const T m_hat = (u_t_1 * m[i]) / (T(1) - u_product_t_1) + ((T(1) - u_t) * gi) / (T(1) - u_product_t);
        const T v_hat = v[i] / one_minus_b2_power;
        w[i] -= (m_hat * lr) / (std::sqrt(v_hat) + eps);
      }
    });
  });
}

// Inputs: var, grad, lr, m. Keras Lion: var -= lr sign(beta_1 m + (1 - beta_1) g);
// m = beta_2 m + (1 - beta_2) g.
void apply_lion_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const double beta_1 = ctx.attrs().get_float("beta_1"), beta_2 = ctx.attrs().get_float("beta_2");
  dispatch_floating(var.dtype(), op_names::apply_lion, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    T* m = ctx.inputs[3].data<T>();
    const T b1 = static_cast<T>(beta_1), b2 = static_cast<T>(beta_2);
    const T one_minus_b1 = T(1) - b1, one_minus_b2 = T(1) - b2;
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
      for (auto i = b; i < e; ++i) {
        const T gi = g[i];
        const T c = m[i] * b1 + gi * one_minus_b1;
        w[i] -= lr * static_cast<T>((c > T(0)) - (c < T(0)));
        m[i] = m[i] * b2 + gi * one_minus_b2;
      }
    });
  });
}

// Inputs: var, grad, lr, accumulator, linear. Keras Ftrl (p = learning_rate_power):
//   l2' = l2 + beta / (2 lr); g' = g + 2 l2_shrinkage var; n = accumulator + g^2
//   linear += g' - (n^-p - accumulator^-p) / lr * var
//   var = (clip(linear, -l1, l1) - linear) / (n^-p / lr + 2 l2'); accumulator = n
void apply_ftrl_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const Attrs& a = ctx.attrs();
  const double power = a.get_float("learning_rate_power"), l1 = a.get_float("l1"), l2 = a.get_float("l2");
  const double shrinkage = a.get_float("l2_shrinkage"), beta = a.get_float("beta");
  dispatch_floating(var.dtype(), op_names::apply_ftrl, [&]<typename T>() {
    T* w = var.data<T>();
    const T* g = ctx.inputs[1].data<T>();
    const T lr = scalar_of<T>(ctx.inputs[2]);
    if (std::isnan(lr)) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
    T* acc = ctx.inputs[3].data<T>();
    T* lin = ctx.inputs[4].data<T>();
    const T l2_reg = static_cast<T>(l2) + static_cast<T>(beta) / (T(2) * lr);
    const T two_shrink = static_cast<T>(2 * shrinkage), minus_p = static_cast<T>(-power), l1_t = static_cast<T>(l1);
    const Decay<T> decay(ctx, lr);
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      decay(w, b, e);
      for (auto i = b; i < e; ++i) {
        const T gi = g[i];
        const T grad_to_use = gi + two_shrink * w[i];
        const T new_acc = acc[i] + gi * gi;
        const T new_acc_pow = std::pow(new_acc, minus_p);
        lin[i] += grad_to_use - ((new_acc_pow - std::pow(acc[i], minus_p)) / lr) * w[i];
        const T quadratic = new_acc_pow / lr + T(2) * l2_reg;
        const T clipped = std::min(std::max(lin[i], -l1_t), l1_t);
        w[i] = (clipped - lin[i]) / quadratic;
        acc[i] = new_acc;
      }
    });
  });
}

// Inputs: average, var, iteration. Keras's _update_model_variables_moving_average:
//   m = momentum (0 at iteration 1: the first step copies); average = m average + (1 - m) var
void apply_ema_kernel(KernelContext& ctx) {
  Tensor& average = ctx.inputs[0];
  const double momentum = ctx.attrs().get_float("momentum");
  dispatch_floating(average.dtype(), op_names::apply_ema, [&]<typename T>() {
    T* avg = average.data<T>();
    const T* w = ctx.inputs[1].data<T>();
    const T t = scalar_of<T>(ctx.inputs[2]);
    const T m = t != T(1) ? static_cast<T>(momentum) : T(0), one_minus_m = T(1) - m;
    parallel_for(ctx, average.num_elements(), kElementwiseGrain, [=](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) avg[i] = m * avg[i] + one_minus_m * w[i];
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
  register_kernel(op_names::apply_adamax, DeviceKind::cpu, apply_adamax_kernel);
  register_kernel(op_names::apply_nadam, DeviceKind::cpu, apply_nadam_kernel);
  register_kernel(op_names::apply_lion, DeviceKind::cpu, apply_lion_kernel);
  register_kernel(op_names::apply_ftrl, DeviceKind::cpu, apply_ftrl_kernel);
  register_kernel(op_names::apply_ema, DeviceKind::cpu, apply_ema_kernel);
}

}  // namespace tower::cpu
