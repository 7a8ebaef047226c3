// float16 and bfloat16 on the CPU: the plan runs every CPU kernel but cast on half tensors through
// run_widened, which widens them to float32, running its float32 code and rounding each floating output back to its half dtype.
//
// That is the numerics mixed precision asks for (each op computes in float and rounds its output once,
// as tensor cores and TensorFlow's Eigen kernels for half types do), kept in one place instead of a
// half instantiation of every kernel. The price is a conversion pass over each half operand and
// output and a float32 buffer for each; a processor with AVX512_BF16 could do better in the GEMMs.
#include "tower/backends/cpu/kernels.h"
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"

namespace tower::cpu {

namespace {

// A float32 copy of a half tensor, on the kernel's device.
Tensor widened(KernelContext& ctx, const Tensor& half) {
  Tensor wide(half.shape(), DType::float32, ctx.device);
  float* dst = wide.data<float>();
  dispatch_every(half.dtype(), "widen", [&]<typename H>() {
    if constexpr (std::is_same_v<H, float16_t> || std::is_same_v<H, bfloat16_t>) {
      const H* src = half.data<H>();
      parallel_for(ctx, half.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
        for (auto i = b; i < e; ++i) dst[i] = static_cast<float>(src[i]);
      });
    }
  });
  return wide;
}

// Rounds a float32 result into its half destination (nearest even).
void round_into(KernelContext& ctx, const Tensor& wide, Tensor& half) {
  const float* src = wide.data<float>();
  dispatch_every(half.dtype(), "round", [&]<typename H>() {
    if constexpr (std::is_same_v<H, float16_t> || std::is_same_v<H, bfloat16_t>) {
      H* dst = half.data<H>();
      parallel_for(ctx, half.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
        for (auto i = b; i < e; ++i) dst[i] = H(src[i]);
      });
    }
  });
}

// The plan's half adapter for the CPU (op_registry.h): called only for steps with a half tensor.
void run_widened(KernelContext& ctx, KernelFn kernel) {
  if (ctx.node.op() == op_names::cast) return kernel(ctx);  // converts between every pair itself, rounding once

  KernelContext wide{ctx.node, ctx.device, ctx.inputs, ctx.outputs};
  for (Tensor& x : wide.inputs)
    if (x.defined() && is_half(x.dtype())) x = widened(ctx, x);
  for (Tensor& y : wide.outputs)
    if (y.defined() && is_half(y.dtype())) y = Tensor(y.shape(), DType::float32, ctx.device);
  kernel(wide);
  for (std::size_t i = 0; i < ctx.outputs.size(); ++i)
    if (ctx.outputs[i].defined() && is_half(ctx.outputs[i].dtype())) round_into(ctx, wide.outputs[i], ctx.outputs[i]);
  // Inputs updated in place (assign, an optimizer's update of a half variable) go back too.
  for (int i : ctx.node.def().mutated_inputs) {
    Tensor& x = ctx.inputs[static_cast<std::size_t>(i)];
    if (x.defined() && is_half(x.dtype())) round_into(ctx, wide.inputs[static_cast<std::size_t>(i)], x);
  }
}

}  // namespace

void register_half_support() { register_half_kernel_adapter(DeviceKind::cpu, run_widened); }

}  // namespace tower::cpu
