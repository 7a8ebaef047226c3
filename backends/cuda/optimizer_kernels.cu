// CUDA kernels of the optimizer updates (Keras 3's rules, as backends/cpu/optimizer_kernels.cpp),
// each over a list of variables in one launch.
#include <algorithm>

#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/optimizer_launchers.h"

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

// One element of one variable: var, grad and slots at index i.
template <UpdateRule rule, typename T>
__device__ void update_element(const UpdateConstants<T>& c, T lr, T alpha, T* var, const T* grad, T* s0, T* s1, T* s2,
                               std::int64_t i) {
  const T g = grad[i];
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
    if (c.weight_decay != T(0)) var[i] = var[i] - var[i] * c.weight_decay * lr;
    s0[i] += (g - s0[i]) * (T(1) - c.beta_1);
    s1[i] += (g * g - s1[i]) * (T(1) - c.beta_2);
    T v = s1[i];
    if (s2) v = s2[i] = s2[i] > v ? s2[i] : v;
    var[i] -= (s0[i] * alpha) / (sqrt(v) + c.epsilon);
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
  int k = 0;
  while (k + 1 < l.count && blocked.first_block[k + 1] <= static_cast<int>(blockIdx.x)) ++k;
  const T lr = *c.lr;
  T alpha = 0;  // Adam's bias-corrected step size
  if constexpr (rule == UpdateRule::adam) {
    const T t = *c.iteration;
    alpha = lr * sqrt(T(1) - pow(c.beta_2, t)) / (T(1) - pow(c.beta_1, t));
  }
  const std::int64_t begin = (static_cast<std::int64_t>(blockIdx.x) - blocked.first_block[k]) * kChunk;
  const std::int64_t end = begin + kChunk < l.n[k] ? begin + kChunk : l.n[k];
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    update_element<rule, T>(c, lr, alpha, l.var[k], l.grad[k], l.slot[0][k], l.slot[1][k], l.slot[2][k], i);
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
  }
  return cudaGetLastError();
}

template cudaError_t launch_update<float>(UpdateRule, const UpdateConstants<float>&, const UpdateList<float>&,
                                          cudaStream_t);
template cudaError_t launch_update<double>(UpdateRule, const UpdateConstants<double>&, const UpdateList<double>&,
                                           cudaStream_t);

}  // namespace tower::cuda
