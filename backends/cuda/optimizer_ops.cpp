// The CUDA kernel table entries of the optimizer updates. Inputs as the ops' contracts (and the CPU
// kernels) have them: var, grad, lr, then the optimizer's iteration and slots.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_context.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/optimizer_launchers.h"

namespace tower::cuda {

namespace {

// var, grad and lr, and the slots from input `first_slot` on (`count` of them, as far as given).
template <typename T>
UpdateArgs<T> update_args(KernelContext& ctx, std::size_t first_slot, std::size_t count) {
  UpdateArgs<T> a;
  a.var = ctx.inputs[0].data<T>();
  a.grad = ctx.inputs[1].data<T>();
  a.lr = ctx.inputs[2].data<T>();
  a.n = ctx.inputs[0].num_elements();
  for (std::size_t k = 0; k < count && first_slot + k < ctx.inputs.size(); ++k) a.slot[k] = ctx.inputs[first_slot + k].data<T>();
  return a;
}

template <typename F>
void run_update(KernelContext& ctx, F launch) {
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_floating(ctx.inputs[0].dtype(), ctx.node.op().c_str(), [&]<typename T>() { CUDA_CHECK(launch.template operator()<T>(gpu.stream())); });
}

template <typename T>
T attr(const KernelContext& ctx, const char* name) {
  return static_cast<T>(ctx.attrs().get_float(name));
}

void apply_sgd_kernel(KernelContext& ctx) {
  run_update(ctx, [&]<typename T>(cudaStream_t stream) {
    auto a = update_args<T>(ctx, 3, ctx.attrs().get_bool("has_momentum") ? 1 : 0);
    a.momentum = attr<T>(ctx, "momentum");
    a.nesterov = ctx.attrs().get_bool("nesterov");
    return launch_sgd<T>(a, stream);
  });
}

void apply_rmsprop_kernel(KernelContext& ctx) {
  run_update(ctx, [&]<typename T>(cudaStream_t stream) {
    auto a = update_args<T>(ctx, 3, 1);  // velocity
    std::size_t next = 4;
    if (ctx.attrs().get_bool("has_momentum")) a.slot[1] = ctx.inputs[next++].data<T>();
    if (ctx.attrs().get_bool("has_average_grad")) a.slot[2] = ctx.inputs[next++].data<T>();
    a.rho = attr<T>(ctx, "rho");
    a.momentum = attr<T>(ctx, "momentum");
    a.epsilon = attr<T>(ctx, "epsilon");
    return launch_rmsprop<T>(a, stream);
  });
}

void apply_adam_kernel(KernelContext& ctx) {
  run_update(ctx, [&]<typename T>(cudaStream_t stream) {
    auto a = update_args<T>(ctx, 4, ctx.attrs().get_bool("has_v_hat") ? 3 : 2);  // m, v, [v_hat]
    a.iteration = ctx.inputs[3].data<T>();
    a.beta_1 = attr<T>(ctx, "beta_1");
    a.beta_2 = attr<T>(ctx, "beta_2");
    a.epsilon = attr<T>(ctx, "epsilon");
    a.weight_decay = attr<T>(ctx, "weight_decay");
    return launch_adam<T>(a, stream);
  });
}

void apply_adagrad_kernel(KernelContext& ctx) {
  run_update(ctx, [&]<typename T>(cudaStream_t stream) {
    auto a = update_args<T>(ctx, 3, 1);
    a.epsilon = attr<T>(ctx, "epsilon");
    return launch_adagrad<T>(a, stream);
  });
}

void apply_adadelta_kernel(KernelContext& ctx) {
  run_update(ctx, [&]<typename T>(cudaStream_t stream) {
    auto a = update_args<T>(ctx, 3, 2);
    a.rho = attr<T>(ctx, "rho");
    a.epsilon = attr<T>(ctx, "epsilon");
    return launch_adadelta<T>(a, stream);
  });
}

}  // namespace

void register_optimizer_kernels() {
  register_kernel("apply_sgd", DeviceKind::cuda, apply_sgd_kernel);
  register_kernel("apply_rmsprop", DeviceKind::cuda, apply_rmsprop_kernel);
  register_kernel("apply_adam", DeviceKind::cuda, apply_adam_kernel);
  register_kernel("apply_adagrad", DeviceKind::cuda, apply_adagrad_kernel);
  register_kernel("apply_adadelta", DeviceKind::cuda, apply_adadelta_kernel);
}

}  // namespace tower::cuda
