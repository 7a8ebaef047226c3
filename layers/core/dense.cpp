// Dense.
#include "tower/layers/core/dense.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

Dense::Dense(std::int64_t units, const DenseOptions& options)
    : Layer(options.name, "dense"), units_(units), options_(options) {
  set_activity_regularizer(options.activity_regularizer);
  if (units <= 0) raise<ValueError>("Dense: units must be positive, got {}", units);
  check_activation_name(options.activation);
}

void Dense::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  if (in.rank() < 2 || in.dim(-1) <= 0)
    raise<ShapeError>("Dense \"{}\": expected input of shape (batch, ..., features) with known features, got {}",
                      name(), in.to_string());
  auto kernel = add_weight("kernel", {in.dim(-1), units_}, options_.kernel_initializer,
                           options_.kernel_regularizer);  // (in, units)
  set_constraint(kernel, options_.kernel_constraint);
  if (options_.use_bias)
    set_constraint(add_weight("bias", {units_}, options_.bias_initializer, options_.bias_regularizer),  // (units,)
                   options_.bias_constraint);
}

std::vector<SymbolicTensor> Dense::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, ..., in)
  const VariablePtr kernel = weight("kernel");
  const std::int64_t in = kernel->shape()[0];
  if (x.shape().dim(-1) != in)
    raise<ShapeError>("Dense \"{}\": expected input with last dimension {}, got {}", name(), in, x.shape().to_string());
  // Rows (batch·..., in): the leading axes folded into rows, as tensordot does.
  const SymbolicTensor rows = x.rank() == 2 ? x : ops::reshape(x, {-1, in});
  const std::string& activation = options_.activation;
  SymbolicTensor y;  // (rows, units)
  std::string rest = activation;  // what is left to apply after the GEMM
  if (options_.use_bias) {  // one op: bias (and ReLU) in the GEMM's epilogue on a GPU
    const bool fuse_relu = activation == "relu";
    y = ops::dense(rows, read(ctx, kernel), read(ctx, weight("bias")), fuse_relu ? "relu" : "linear");
    if (fuse_relu) rest = "";
  } else {
    y = ops::matmul(rows, read(ctx, kernel));
  }
  if (x.rank() != 2) y = ops::reshape_like(y, x, x.rank() - 1, {units_});  // (batch, ..., units), any unknown
  return {apply_activation(rest, y)};
}

nlohmann::json Dense::get_config() const {
  return layer_config(*this, {{"units", units_},
                              {"activation", activation_to_config(options_.activation)},
                              {"use_bias", options_.use_bias},
                              {"kernel_initializer", options_.kernel_initializer.get_config()},
                              {"bias_initializer", options_.bias_initializer.get_config()},
                              {"kernel_regularizer", options_.kernel_regularizer.get_config()},
                              {"bias_regularizer", options_.bias_regularizer.get_config()},
                              {"activity_regularizer", nullptr},
                              {"kernel_constraint", options_.kernel_constraint.get_config()},
                              {"bias_constraint", options_.bias_constraint.get_config()}});
}

LayerPtr Dense::from_config(const nlohmann::json& config) {
  nlohmann::json rest = config;
  Constraint kernel_constraint = take_constraint(rest, "kernel_constraint", "Dense");
  Constraint bias_constraint = take_constraint(rest, "bias_constraint", "Dense");
  ConfigReader r(rest, "Dense");
  r.check_common();
  r.expect("lora_rank", nullptr, "LoRA");
  r.expect("quantization_config", nullptr, "quantized layers");
  DenseOptions options{.activation = r.activation("activation"),
                       .use_bias = r.boolean("use_bias", true),
                       .kernel_initializer = r.initializer("kernel_initializer", "glorot_uniform"),
                       .bias_initializer = r.initializer("bias_initializer", "zeros"),
                       .kernel_regularizer = r.regularizer("kernel_regularizer"),
                       .bias_regularizer = r.regularizer("bias_regularizer"),
                       .kernel_constraint = kernel_constraint,
                       .bias_constraint = bias_constraint,
                       .name = r.name()};
  return r.finish(Dense(r.integer("units"), options));
}

}  // namespace tower::layers
