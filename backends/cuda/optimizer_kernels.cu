// CUDA kernels of the optimizer updates (Keras 3's rules, as backends/cpu/optimizer_kernels.cpp).
#include <algorithm>

#include "backends/cuda/optimizer_launchers.h"
#include "backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

template <typename T>
__global__ void sgd_kernel(UpdateArgs<T> a) {
  const T lr = *a.lr;
  T* m = a.slot[0];
  TOWER_GRID_STRIDE(i, a.n) {
    const T g = a.grad[i];
    if (!m) {
      a.var[i] -= g * lr;
    } else {
      m[i] = m[i] * a.momentum - g * lr;
      a.var[i] += a.nesterov ? m[i] * a.momentum - g * lr : m[i];
    }
  }
}

template <typename T>
__global__ void rmsprop_kernel(UpdateArgs<T> a) {
  const T lr = *a.lr, r = a.rho, one_minus_r = T(1) - a.rho;
  T *vel = a.slot[0], *mom = a.slot[1], *avg = a.slot[2];
  TOWER_GRID_STRIDE(i, a.n) {
    const T g = a.grad[i];
    vel[i] = r * vel[i] + one_minus_r * (g * g);
    T denom;
    if (avg) {
      avg[i] = r * avg[i] + one_minus_r * g;
      denom = vel[i] - avg[i] * avg[i] + a.epsilon;
    } else {
      denom = vel[i] + a.epsilon;
    }
    const T increment = lr * g / sqrt(denom);
    if (mom) {
      mom[i] = a.momentum * mom[i] + increment;
      a.var[i] -= mom[i];
    } else {
      a.var[i] -= increment;
    }
  }
}

template <typename T>
__global__ void adam_kernel(UpdateArgs<T> a) {
  const T lr = *a.lr, t = *a.iteration;
  const T alpha = lr * sqrt(T(1) - pow(a.beta_2, t)) / (T(1) - pow(a.beta_1, t));
  const T one_minus_b1 = T(1) - a.beta_1, one_minus_b2 = T(1) - a.beta_2;
  T *m = a.slot[0], *v = a.slot[1], *v_hat = a.slot[2];
  TOWER_GRID_STRIDE(i, a.n) {
    if (a.weight_decay != T(0)) a.var[i] = a.var[i] - a.var[i] * a.weight_decay * lr;
    const T g = a.grad[i];
    m[i] += (g - m[i]) * one_minus_b1;
    v[i] += (g * g - v[i]) * one_minus_b2;
    T vi = v[i];
    if (v_hat) vi = v_hat[i] = v_hat[i] > vi ? v_hat[i] : vi;
    a.var[i] -= (m[i] * alpha) / (sqrt(vi) + a.epsilon);
  }
}

template <typename T>
__global__ void adagrad_kernel(UpdateArgs<T> a) {
  const T lr = *a.lr;
  T* acc = a.slot[0];
  TOWER_GRID_STRIDE(i, a.n) {
    const T g = a.grad[i];
    acc[i] += g * g;
    a.var[i] -= lr * g / sqrt(acc[i] + a.epsilon);
  }
}

template <typename T>
__global__ void adadelta_kernel(UpdateArgs<T> a) {
  const T lr = *a.lr, r = a.rho, one_minus_r = T(1) - a.rho;
  T *acc_g = a.slot[0], *acc_d = a.slot[1];
  TOWER_GRID_STRIDE(i, a.n) {
    const T g = a.grad[i];
    acc_g[i] = r * acc_g[i] + one_minus_r * (g * g);
    const T delta = -(sqrt(acc_d[i] + a.epsilon) * g / sqrt(acc_g[i] + a.epsilon));
    acc_d[i] = r * acc_d[i] + one_minus_r * (delta * delta);
    a.var[i] += lr * delta;
  }
}

}  // namespace

#define TOWER_LAUNCHER(name)                                                      \
  template <typename T>                                                           \
  cudaError_t launch_##name(const UpdateArgs<T>& args, cudaStream_t stream) {     \
    if (args.n == 0) return cudaSuccess;                                          \
    name##_kernel<T><<<blocks_for(args.n), kThreads, 0, stream>>>(args);         \
    return cudaGetLastError();                                                    \
  }                                                                               \
  template cudaError_t launch_##name<float>(const UpdateArgs<float>&, cudaStream_t); \
  template cudaError_t launch_##name<double>(const UpdateArgs<double>&, cudaStream_t);
TOWER_LAUNCHER(sgd)
TOWER_LAUNCHER(rmsprop)
TOWER_LAUNCHER(adam)
TOWER_LAUNCHER(adagrad)
TOWER_LAUNCHER(adadelta)
#undef TOWER_LAUNCHER

}  // namespace tower::cuda
