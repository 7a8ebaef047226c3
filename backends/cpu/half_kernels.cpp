// float16 and bfloat16 on the CPU: the plan runs every CPU kernel but cast on half tensors through
// run_half, which widens them to float32 (core/half_widening.h), runs the float32 code and rounds each
// floating output back to its half dtype.
//
// That is the numerics mixed precision asks for (each op computes in float and rounds its output once,
// as tensor cores and TensorFlow's Eigen kernels for half types do), kept in one place instead of a
// half instantiation of every kernel. The price is a conversion pass over each half operand and
// output and a float32 buffer for each (reused from call to call). bfloat16 GEMMs and convolutions
// skip it where the processor has bfloat16 instructions: oneDNN runs them natively (onednn_bf16.h),
// accumulating in float32 and rounding each output once as well.
#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/onednn_bf16.h"
#include "tower/core/half_widening.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// A float32 tensor of `shape` in the calling thread's buffer `slot`, kept across calls (it only grows),
// so that a steady step widens into the same memory instead of allocating, and the kernel page-faulting
// in, fresh buffers on every call (measured: a tenth of a mixed_bfloat16 mnist_cnn step's CPU time,
// docs/benchmarks.md). Valid until the thread's next adapter call; the plan's lane threads and the
// caller's hold them for their lives, as large as the largest half step they ran.
Tensor wide_buffer(KernelContext& ctx, const Shape& shape, std::size_t slot) {
  thread_local std::vector<std::shared_ptr<Storage>> buffers;
  if (buffers.size() <= slot) buffers.resize(slot + 1);
  std::shared_ptr<Storage>& b = buffers[slot];
  const std::size_t bytes = tensor_bytes(shape, DType::float32);
  if (!b || b->bytes() < bytes || &b->device() != &ctx.device) b = std::make_shared<Storage>(ctx.device, bytes);
  return Tensor(shape, DType::float32, b);
}

// A float32 copy of a half tensor, on the kernel's device, in buffer `slot`.
Tensor widened(KernelContext& ctx, const Tensor& half, std::size_t slot) {
  Tensor wide = wide_buffer(ctx, half.shape(), slot);
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
void run_half(KernelContext& ctx, KernelFn kernel) {
  if (ctx.node.op() == op_names::cast) return kernel(ctx);  // converts between every pair itself, rounding once
  if (onednn_bf16::run(ctx)) return;                         // a bfloat16 GEMM or convolution, natively
  static const HalfWidening widening{.widen = widened, .buffer = wide_buffer, .round = round_into};
  run_widened(ctx, kernel, widening);
}

}  // namespace

void register_half_support() { register_half_kernel_adapter(DeviceKind::cpu, run_half); }

}  // namespace tower::cpu
