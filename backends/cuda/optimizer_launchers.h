// Launcher of the optimizer update CUDA kernels: one fused elementwise kernel per optimizer over a
// list of variables (every variable of a model in one launch), Keras 3's rules as in
// backends/cpu/optimizer_kernels.cpp. lr and iteration stay on the GPU (one-element tensors read by
// every thread), so a step never waits for the host.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

enum class UpdateRule { sgd, rmsprop, adam, adagrad, adadelta, adamax, nadam, lion, ftrl, ema };

// What every variable of one update shares: lr, iteration and the optimizer's constants (unused
// ones 0): momentum (also the EMA's), rho, beta_1, beta_2, epsilon, weight decay, nesterov, and
// Ftrl's learning_rate_power, l1, l2, l2_shrinkage and beta.
template <typename T>
struct UpdateConstants {
  const T* lr = nullptr;         // one element (null for ema, which has none)
  const T* iteration = nullptr;  // one element, 1-based (bias corrections, Nadam's schedule, EMA's first step)
  T momentum = 0, rho = 0, beta_1 = 0, beta_2 = 0, epsilon = 0, weight_decay = 0;
  T lr_power = 0, l1 = 0, l2 = 0, l2_shrinkage = 0, beta = 0;
  bool nesterov = false;
};

// Up to kMaxVariables variables with their gradients and slots, passed to the kernel by value
// (about 3 KB of kernel parameters). Slots a configuration does not use are null:
//   sgd      slot 0 momentum (or null)
//   rmsprop  slot 0 velocity, 1 momentum (or null), 2 average_grad (null: not centered)
//   adam     slot 0 m, 1 v, 2 v_hat (null: no amsgrad)
//   adagrad  slot 0 accumulator
//   adadelta slot 0 accumulated_grad, 1 accumulated_delta
//   adamax   slot 0 m, 1 u;  nadam slot 0 m, 1 v;  lion slot 0 m;  ftrl slot 0 accumulator, 1 linear
//   ema      var is the average (written), grad the model variable (read); no slots
template <typename T>
struct UpdateList {
  static constexpr int kMaxVariables = 48;
  int count = 0;
  T* var[kMaxVariables] = {};
  const T* grad[kMaxVariables] = {};
  T* slot[3][kMaxVariables] = {};
  std::int64_t n[kMaxVariables] = {};
};

// Updates every variable of the list in one launch (blocks are shared out over the variables by
// their sizes).
template <typename T>
cudaError_t launch_update(UpdateRule rule, const UpdateConstants<T>& constants, const UpdateList<T>& list,
                          cudaStream_t stream);

}  // namespace tower::cuda
