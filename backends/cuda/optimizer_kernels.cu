// CUDA kernels of the optimizer updates and the EMA of use_ema (Keras 3's rules, as
// backends/cpu/optimizer_kernels.cpp), each over a list of variables in one launch.
#include <algorithm>

#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/optimizer_launchers.h"
#include "tower/core/ops/optimizer_math.h"

namespace tower::cuda {

namespace {

// Elements one block updates; a variable takes ceil(n / kChunk) blocks.
constexpr std::int64_t kChunk = 16 * kThreads;

// The list and the first block of each variable (first_block[count] = the grid's size).
template <typename T>
struct BlockedList {
  UpdateList<T> list;
  int first_block[UpdateList<T>::kMaxVariables + 1] = {};
};

// What a step's rule computes once from lr and the iteration: Adam's alpha; Adamax's 1 - beta_1^t
// (in a); Nadam's u_t, u_{t+1}, u_product, 1 - beta_2^t (a, b, c, d); the EMA's momentum (a).
template <typename T>
struct StepScalars {
  T alpha = 0, a = 0, b = 0, c = 0, d = 0;
};

// One element of one variable: var, grad and slots at index i.
template <UpdateRule rule, typename T>
__device__ void update_element(const UpdateConstants<T>& c, T lr, const StepScalars<T>& k, T* var, const T* grad, T* s0,
                               T* s1, T* s2, std::int64_t i) {
  const T g = grad[i];
  // Keras 3's weight decay first (base_optimizer._apply_weight_decay).
  if constexpr (rule != UpdateRule::ema)
    if (c.weight_decay != T(0)) var[i] = var[i] - var[i] * c.weight_decay * lr;
  if constexpr (rule == UpdateRule::sgd) {
    if (!s0) {
      var[i] -= g * lr;
    } else {
      s0[i] = s0[i] * c.momentum - g * lr;
      var[i] += c.nesterov ? s0[i] * c.momentum - g * lr : s0[i];
    }
  } else if constexpr (rule == UpdateRule::rmsprop) {
    const T one_minus_r = T(1) - c.rho;
    s0[i] = c.rho * s0[i] + one_minus_r * (g * g);
    T denom;
    if (s2) {
      s2[i] = c.rho * s2[i] + one_minus_r * g;
      denom = s0[i] - s2[i] * s2[i] + c.epsilon;
    } else {
      denom = s0[i] + c.epsilon;
    }
    const T increment = lr * g / sqrt(denom);
    if (s1) {
      s1[i] = c.momentum * s1[i] + increment;
      var[i] -= s1[i];
    } else {
      var[i] -= increment;
    }
  } else if constexpr (rule == UpdateRule::adam) {
    s0[i] += (g - s0[i]) * (T(1) - c.beta_1);
    s1[i] += (g * g - s1[i]) * (T(1) - c.beta_2);
    T v = s1[i];
    if (s2) v = s2[i] = s2[i] > v ? s2[i] : v;
    var[i] -= (s0[i] * k.alpha) / (sqrt(v) + c.epsilon);
  } else if constexpr (rule == UpdateRule::adamax) {
    s0[i] += (g - s0[i]) * (T(1) - c.beta_1);
    const T scaled = c.beta_2 * s1[i], magnitude = g < T(0) ? -g : g;
    s1[i] = scaled > magnitude ? scaled : magnitude;
    var[i] -= (lr * s0[i]) / (k.a * (s1[i] + c.epsilon));
  } else if constexpr (rule == UpdateRule::nadam) {
    s0[i] += (g - s0[i]) * (T(1) - c.beta_1);
    s1[i] += (g * g - s1[i]) * (T(1) - c.beta_2);
    const T m_hat = (k.b * s0[i]) / (T(1) - k.c * k.b) + ((T(1) - k.a) * g) / (T(1) - k.c);
    var[i] -= (m_hat * lr) / (sqrt(s1[i] / k.d) + c.epsilon);
  } else if constexpr (rule == UpdateRule::lion) {
    const T interpolated = s0[i] * c.beta_1 + g * (T(1) - c.beta_1);
    var[i] -= lr * static_cast<T>((interpolated > T(0)) - (interpolated < T(0)));
    s0[i] = s0[i] * c.beta_2 + g * (T(1) - c.beta_2);
  } else if constexpr (rule == UpdateRule::ftrl) {
    const T l2_reg = c.l2 + c.beta / (T(2) * lr);
    const T grad_to_use = g + T(2) * c.l2_shrinkage * var[i];
    const T new_acc = s0[i] + g * g;
    const T new_acc_pow = pow(new_acc, -c.lr_power);
    s1[i] += grad_to_use - ((new_acc_pow - pow(s0[i], -c.lr_power)) / lr) * var[i];
    const T quadratic = new_acc_pow / lr + T(2) * l2_reg;
    const T clipped = s1[i] < -c.l1 ? -c.l1 : (s1[i] > c.l1 ? c.l1 : s1[i]);
    var[i] = (clipped - s1[i]) / quadratic;
    s0[i] = new_acc;
  } else if constexpr (rule == UpdateRule::ema) {
    var[i] = k.a * var[i] + (T(1) - k.a) * g;  // var: the average; grad: the model variable
  } else if constexpr (rule == UpdateRule::adagrad) {
    s0[i] += g * g;
    var[i] -= lr * g / sqrt(s0[i] + c.epsilon);
  } else {  // adadelta
    const T one_minus_r = T(1) - c.rho;
    s0[i] = c.rho * s0[i] + one_minus_r * (g * g);
    const T delta = -(sqrt(s1[i] + c.epsilon) * g / sqrt(s0[i] + c.epsilon));
    s1[i] = c.rho * s1[i] + one_minus_r * (delta * delta);
    var[i] += lr * delta;
  }
}

// Block b updates chunk (b - first_block[k]) of the variable k whose blocks hold b.
template <UpdateRule rule, typename T>
__global__ void update_kernel(UpdateConstants<T> c, BlockedList<T> blocked) {
  const UpdateList<T>& l = blocked.list;
  int v = 0;  // the variable
  while (v + 1 < l.count && blocked.first_block[v + 1] <= static_cast<int>(blockIdx.x)) ++v;
  const T lr = c.lr ? *c.lr : T(0);
  if (c.lr && lr != lr) return;  // a NaN learning rate: a step LossScaleOptimizer skips (inf/NaN gradients)
  StepScalars<T> k;
  if constexpr (rule == UpdateRule::adam) {
    const T t = *c.iteration;
    k.alpha = lr * sqrt(T(1) - pow(c.beta_2, t)) / (T(1) - pow(c.beta_1, t));
  } else if constexpr (rule == UpdateRule::adamax) {
    k.a = T(1) - pow(c.beta_1, *c.iteration);
  } else if constexpr (rule == UpdateRule::nadam) {
    const T t = *c.iteration;
    k.a = c.beta_1 * (T(1) - T(0.5) * pow(T(0.96), t));
    k.b = c.beta_1 * (T(1) - T(0.5) * pow(T(0.96), t + T(1)));
    k.c = nadam_u_product<T>(c.beta_1, t);
    k.d = T(1) - pow(c.beta_2, t);
  } else if constexpr (rule == UpdateRule::ema) {
    k.a = *c.iteration != T(1) ? c.momentum : T(0);
  }
  const std::int64_t begin = (static_cast<std::int64_t>(blockIdx.x) - blocked.first_block[v]) * kChunk;
  const std::int64_t end = begin + kChunk < l.n[v] ? begin + kChunk : l.n[v];
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    update_element<rule, T>(c, lr, k, l.var[v], l.grad[v], l.slot[0][v], l.slot[1][v], l.slot[2][v], i);
}

}  // namespace

template <typename T>
cudaError_t launch_update(UpdateRule rule, const UpdateConstants<T>& constants, const UpdateList<T>& list,
                          cudaStream_t stream) {
  BlockedList<T> blocked{list};
  int blocks = 0;
  for (int k = 0; k < list.count; ++k) {
    blocked.first_block[k] = blocks;
    blocks += static_cast<int>((list.n[k] + kChunk - 1) / kChunk);
  }
  blocked.first_block[list.count] = blocks;
  if (blocks == 0) return cudaSuccess;
  switch (rule) {
    case UpdateRule::sgd: update_kernel<UpdateRule::sgd, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::rmsprop: update_kernel<UpdateRule::rmsprop, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::adam: update_kernel<UpdateRule::adam, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::adagrad: update_kernel<UpdateRule::adagrad, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::adadelta: update_kernel<UpdateRule::adadelta, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::adamax: update_kernel<UpdateRule::adamax, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::nadam: update_kernel<UpdateRule::nadam, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::lion: update_kernel<UpdateRule::lion, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::ftrl: update_kernel<UpdateRule::ftrl, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
    case UpdateRule::ema: update_kernel<UpdateRule::ema, T><<<blocks, kThreads, 0, stream>>>(constants, blocked); break;
  }
  return cudaGetLastError();
}

template cudaError_t launch_update<float>(UpdateRule, const UpdateConstants<float>&, const UpdateList<float>&,
                                          cudaStream_t);
template cudaError_t launch_update<double>(UpdateRule, const UpdateConstants<double>&, const UpdateList<double>&,
                                           cudaStream_t);

}  // namespace tower::cuda
