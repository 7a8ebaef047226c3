// float16 and bfloat16 on the GPU: the CUDA backend's half adapter (core/op_registry.h), which the plan
// calls for every CUDA step that reads or writes a half tensor.
//
// The GEMMs and convolutions take half operands themselves (math_ops.cpp, conv_ops.cpp: tensor cores,
// float32 accumulation, one rounding of each output), and cast converts between every pair of dtypes.
// Every other op runs its float32 kernel on widened copies, as on the CPU (backends/cpu/half_kernels.cpp):
// each half operand is widened into a float32 buffer, the kernel runs, and each half output (and each
// half input updated in place) is rounded back once, to nearest even. The conversions are the cast
// kernels (core/half.h's functions on the device: the CPU's bits), and the buffers come from the
// device's caching allocator, stream-ordered like a convolution's workspace (from the plan's capture pool
// while a CUDA graph is recorded).
#include <algorithm>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/elementwise_launchers.h"
#include "tower/backends/cuda/half_support.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/half_widening.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

bool runs_in_half(std::string_view op, std::span<const DType> dtypes) {
  if (op == op_names::cast) return true;
  static constexpr std::string_view kNative[] = {
      op_names::matmul,          op_names::batch_matmul,           op_names::dense,
      op_names::conv2d,          op_names::conv2d_bias,            op_names::conv2d_backward_data,
      op_names::conv2d_backward_filter, op_names::conv2d_transpose, op_names::conv3d,
      op_names::conv3d_backward_data,   op_names::conv3d_backward_filter, op_names::conv3d_transpose};
  if (dtypes.empty() || !is_half(dtypes.front())) return false;
  if (std::find(std::begin(kNative), std::end(kNative), op) == std::end(kNative)) return false;
  return std::all_of(dtypes.begin(), dtypes.end(), [&](DType d) { return d == dtypes.front(); });
}

namespace {

// A float32 copy of a half tensor, in a buffer of the device's caching allocator.
Tensor widened(KernelContext& ctx, const Tensor& half, std::size_t) {
  CudaDevice& gpu = gpu_of(ctx);
  Tensor wide(half.shape(), DType::float32, gpu);
  dispatch_every(half.dtype(), "widen", [&]<typename H>() {
    if constexpr (std::is_same_v<H, float16_t> || std::is_same_v<H, bfloat16_t>) {
      const auto launch = launch_cast<H, float>;  // (the comma would split CUDA_CHECK's argument)
      CUDA_CHECK(launch(half.data<H>(), wide.data<float>(), half.num_elements(), gpu.stream()));
    }
  });
  return wide;
}

Tensor wide_buffer(KernelContext& ctx, const Shape& shape, std::size_t) {
  return Tensor(shape, DType::float32, ctx.device);
}

// Rounds a float32 result into its half destination (nearest even).
void round_into(KernelContext& ctx, const Tensor& wide, Tensor& half) {
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_every(half.dtype(), "round", [&]<typename H>() {
    if constexpr (std::is_same_v<H, float16_t> || std::is_same_v<H, bfloat16_t>) {
      const auto launch = launch_cast<float, H>;
      CUDA_CHECK(launch(wide.data<float>(), half.data<H>(), half.num_elements(), gpu.stream()));
    }
  });
}

void run_half(KernelContext& ctx, KernelFn kernel) {
  thread_local std::vector<DType> dtypes;  // kept: no allocation per step
  dtypes.clear();
  for (const auto* tensors : {&ctx.inputs, &ctx.outputs})
    for (const Tensor& t : *tensors)
      if (t.defined() && is_floating(t.dtype())) dtypes.push_back(t.dtype());
  if (runs_in_half(ctx.node.op(), dtypes)) return kernel(ctx);
  static const HalfWidening widening{.widen = widened, .buffer = wide_buffer, .round = round_into};
  run_widened(ctx, kernel, widening);
}

}  // namespace

void register_half_support() { register_half_kernel_adapter(DeviceKind::cuda, run_half); }

}  // namespace tower::cuda
