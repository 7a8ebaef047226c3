// The CUDA kernel table entry of dropout: x -> {y = x * mask, mask}, a fresh counter per run.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dropout_launchers.h"
#include "backends/cuda/kernel_context.h"
#include "backends/cuda/kernels.h"

namespace tower::cuda {

namespace {

void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const double keep = 1.0 - ctx.attrs().get_float("rate");
  const auto seed = static_cast<std::uint64_t>(ctx.attrs().get_int("seed"));
  const std::uint64_t counter = ctx.node.next_random_counter();
  dispatch_floating(x.dtype(), "dropout", [&]<typename T>() {
    CUDA_CHECK(launch_dropout<T>(x.data<T>(), ctx.outputs[0].data<T>(), ctx.outputs[1].data<T>(), x.num_elements(),
                                 keep, seed, counter, gpu.stream()));
  });
}

}  // namespace

void register_dropout_kernels() { register_kernel("dropout", DeviceKind::cuda, dropout_kernel); }

}  // namespace tower::cuda
