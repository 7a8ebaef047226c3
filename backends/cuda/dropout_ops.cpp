// The CUDA kernel table entries of dropout, (x[, row offset]) -> {y = x * mask, mask}, and of
// random_uniform / random_normal, (x[, row offset]) -> y; a fresh counter per run (in a recorded step,
// read by the kernel from the feed block, where the plan writes each replay's: core/step_graph.h).
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/dropout_launchers.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/op_names.h"
#include "tower/core/step_graph.h"

namespace tower::cuda {

namespace {

void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const double keep = 1.0 - ctx.attrs().get_float("rate");
  const auto seed = static_cast<std::uint64_t>(ctx.attrs().get_int("seed"));
  const std::uint64_t counter = ctx.node.next_random_counter();
  const std::uint64_t* counter_at = recorded_random_counter(ctx.node, counter);
  // The optional row offset stays on the GPU: the kernel reads it there.
  const bool offset = ctx.inputs.size() > 1 && x.shape().rank() > 0 && x.shape()[0] > 0;
  const std::int64_t* row_offset = offset ? ctx.inputs[1].data<std::int64_t>() : nullptr;
  const std::int64_t row_elements = offset ? x.num_elements() / x.shape()[0] : 0;
  dispatch_floating(x.dtype(), op_names::dropout, [&]<typename T>() {
    CUDA_CHECK(launch_dropout<T>(x.data<T>(), ctx.outputs[0].data<T>(), ctx.outputs[1].data<T>(), x.num_elements(),
                                 row_offset, row_elements, keep, seed, counter, counter_at, gpu.stream()));
  });
}

// normal: random_normal (mean + stddev z), else random_uniform (minval + (maxval - minval) u).
void random_kernel(KernelContext& ctx, bool normal) {
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const Attrs& attrs = ctx.attrs();
  const double lo = normal ? attrs.get_float("mean") : attrs.get_float("minval");
  const double width = normal ? attrs.get_float("stddev") : attrs.get_float("maxval") - lo;
  const auto seed = static_cast<std::uint64_t>(attrs.get_int("seed"));
  const std::uint64_t counter = ctx.node.next_random_counter();
  const std::uint64_t* counter_at = recorded_random_counter(ctx.node, counter);
  const bool offset = ctx.inputs.size() > 1 && y.shape().rank() > 0 && y.shape()[0] > 0;
  const std::int64_t* row_offset = offset ? ctx.inputs[1].data<std::int64_t>() : nullptr;
  const std::int64_t row_elements = offset ? y.num_elements() / y.shape()[0] : 0;
  dispatch_floating(y.dtype(), normal ? op_names::random_normal : op_names::random_uniform, [&]<typename T>() {
    CUDA_CHECK(launch_random<T>(y.data<T>(), y.num_elements(), row_offset, row_elements, normal, lo, width, seed,
                                counter, counter_at, gpu.stream()));
  });
}

void random_uniform_kernel(KernelContext& ctx) { random_kernel(ctx, false); }
void random_normal_kernel(KernelContext& ctx) { random_kernel(ctx, true); }

}  // namespace

void register_dropout_kernels() {
  register_kernel(op_names::dropout, DeviceKind::cuda, dropout_kernel);
  register_kernel(op_names::random_uniform, DeviceKind::cuda, random_uniform_kernel);
  register_kernel(op_names::random_normal, DeviceKind::cuda, random_normal_kernel);
}

}  // namespace tower::cuda
