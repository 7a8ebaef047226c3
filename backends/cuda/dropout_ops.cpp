// The CUDA kernel table entry of dropout: (x[, row offset]) -> {y = x * mask, mask}, a fresh counter per run.
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/dropout_launchers.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const double keep = 1.0 - ctx.attrs().get_float("rate");
  const auto seed = static_cast<std::uint64_t>(ctx.attrs().get_int("seed"));
  const std::uint64_t counter = ctx.node.next_random_counter();
  // The optional row offset stays on the GPU: the kernel reads it there.
  const bool offset = ctx.inputs.size() > 1 && x.shape().rank() > 0 && x.shape()[0] > 0;
  const std::int64_t* row_offset = offset ? ctx.inputs[1].data<std::int64_t>() : nullptr;
  const std::int64_t row_elements = offset ? x.num_elements() / x.shape()[0] : 0;
  dispatch_floating(x.dtype(), op_names::dropout, [&]<typename T>() {
    CUDA_CHECK(launch_dropout<T>(x.data<T>(), ctx.outputs[0].data<T>(), ctx.outputs[1].data<T>(), x.num_elements(),
                                 row_offset, row_elements, keep, seed, counter, gpu.stream()));
  });
}

}  // namespace

void register_dropout_kernels() { register_kernel(op_names::dropout, DeviceKind::cuda, dropout_kernel); }

}  // namespace tower::cuda
