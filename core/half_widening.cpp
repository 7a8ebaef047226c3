#include "tower/core/half_widening.h"

namespace tower {

void run_widened(KernelContext& ctx, KernelFn kernel, const HalfWidening& how) {
  KernelContext wide{ctx.node, ctx.device, ctx.inputs, ctx.outputs};
  std::size_t slot = 0;
  for (Tensor& x : wide.inputs)
    if (x.defined() && is_half(x.dtype())) x = how.widen(ctx, x, slot++);
  for (Tensor& y : wide.outputs)
    if (y.defined() && is_half(y.dtype())) y = how.buffer(ctx, y.shape(), slot++);
  kernel(wide);
  for (std::size_t i = 0; i < ctx.outputs.size(); ++i)
    if (ctx.outputs[i].defined() && is_half(ctx.outputs[i].dtype())) how.round(ctx, wide.outputs[i], ctx.outputs[i]);
  // Inputs updated in place (assign, an optimizer's update of a half variable) go back too.
  for (int i : ctx.node.def().mutated_inputs) {
    Tensor& x = ctx.inputs[static_cast<std::size_t>(i)];
    if (x.defined() && is_half(x.dtype())) how.round(ctx, wide.inputs[static_cast<std::size_t>(i)], x);
  }
}

}  // namespace tower
