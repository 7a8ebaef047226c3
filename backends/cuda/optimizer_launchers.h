// Launchers of the optimizer update CUDA kernels: one fused elementwise kernel per optimizer and
// variable, Keras 3's rules as in backends/cpu/optimizer_kernels.cpp. lr and iteration stay on the
// GPU (one-element tensors read by every thread), so a step never waits for the host.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// Pointers a configuration does not use are null.
template <typename T>
struct UpdateArgs {
  T* var = nullptr;
  const T* grad = nullptr;
  const T* lr = nullptr;         // one element
  const T* iteration = nullptr;  // one element, 1-based (Adam's bias correction)
  T* slot[3] = {nullptr, nullptr, nullptr};
  std::int64_t n = 0;
  // The optimizer's constants (unused ones 0): momentum/rho/beta_1, beta_2, epsilon, weight decay.
  T momentum = 0, rho = 0, beta_1 = 0, beta_2 = 0, epsilon = 0, weight_decay = 0;
  bool nesterov = false;
};

// slot[0] momentum (may be null).
template <typename T>
cudaError_t launch_sgd(const UpdateArgs<T>& args, cudaStream_t stream);
// slot[0] velocity, slot[1] momentum (may be null), slot[2] average_grad (may be null: not centered).
template <typename T>
cudaError_t launch_rmsprop(const UpdateArgs<T>& args, cudaStream_t stream);
// slot[0] m, slot[1] v, slot[2] v_hat (may be null: no amsgrad).
template <typename T>
cudaError_t launch_adam(const UpdateArgs<T>& args, cudaStream_t stream);
// slot[0] accumulator.
template <typename T>
cudaError_t launch_adagrad(const UpdateArgs<T>& args, cudaStream_t stream);
// slot[0] accumulated_grad, slot[1] accumulated_delta.
template <typename T>
cudaError_t launch_adadelta(const UpdateArgs<T>& args, cudaStream_t stream);

}  // namespace tower::cuda
