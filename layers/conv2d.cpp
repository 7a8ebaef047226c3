// Conv2D.
#include "layers/conv2d.h"

#include "core/error.h"
#include "core/ops.h"
#include "layers/activations.h"
#include "layers/layer_utils.h"

namespace tower::layers {

Conv2D::Conv2D(std::int64_t filters, const std::vector<std::int64_t>& kernel_size, const Conv2DOptions& options)
    : Layer(options.name, "conv2d"), filters_(filters), options_(options) {
  if (filters <= 0) raise<ValueError>("{}: filters must be positive, got {}", describe(*this), filters);
  kernel_size_ = normalize_tuple(*this, "kernel_size", kernel_size, 2);
  options_.strides = normalize_tuple(*this, "strides", options.strides, 2);
  options_.dilation_rate = normalize_tuple(*this, "dilation_rate", options.dilation_rate, 2);
  options_.padding = normalize_padding(*this, options.padding);
  // As Keras (and TF's kernels): a dilated kernel moves one pixel at a time.
  bool strided = options_.strides[0] > 1 || options_.strides[1] > 1;
  bool dilated = options_.dilation_rate[0] > 1 || options_.dilation_rate[1] > 1;
  if (strided && dilated)
    raise<ValueError>("{}: strides > 1 are not supported together with dilation_rate > 1; use one of them",
                      describe(*this));
  check_activation_name(options.activation);
}

void Conv2D::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  expect_input_rank(*this, in, 4, "(batch, height, width, channels)");
  expect_known_dim(*this, in, -1, "channels");
  add_weight("kernel", {kernel_size_[0], kernel_size_[1], in.dim(-1), filters_}, options_.kernel_initializer,
             options_.kernel_regularizer);
  if (options_.use_bias) add_weight("bias", {filters_}, options_.bias_initializer, options_.bias_regularizer);
}

std::vector<SymbolicTensor> Conv2D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, h, w, in)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  const VariablePtr kernel = weight("kernel"), bias = weight("bias");  // (kh, kw, in, filters), (filters,)
  const std::int64_t in = kernel->shape()[2];
  if (x.shape().dim(-1) != in)
    raise<ShapeError>("{}: expected input with {} channels (its last axis), got {}", describe(*this), in,
                      x.shape().to_string());
  auto y = ops::conv2d(x, read(ctx, kernel), {options_.strides, options_.padding, options_.dilation_rate});
  if (bias) y = ops::bias_add(y, read(ctx, bias));  // (batch, out_h, out_w, filters)
  return {apply_activation(options_.activation, y)};
}

}  // namespace tower::layers
