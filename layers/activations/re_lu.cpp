// ReLU.
#include "tower/layers/activations/re_lu.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

ReLU::ReLU(const ReLUOptions& options) : Layer(options.name, "re_lu"), options_(options) {
  if (options.max_value && !(*options.max_value >= 0.0))
    raise<ValueError>("{}: max_value cannot be negative, got {}", describe(*this), *options.max_value);
  if (!(options.negative_slope >= 0.0))
    raise<ValueError>("{}: negative_slope cannot be negative, got {}", describe(*this), options.negative_slope);
  if (!(options.threshold >= 0.0))
    raise<ValueError>("{}: threshold cannot be negative, got {}", describe(*this), options.threshold);
}

// The composition of Keras 3's ReLU.static_call, step by step, so that every option matches it.
std::vector<SymbolicTensor> ReLU::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  const double slope = options_.negative_slope, threshold = options_.threshold;
  const auto& max_value = options_.max_value;
  if (slope == 0.0 && !max_value && threshold == 0.0) return {ops::relu(x)};
  if (slope != 0.0 && !max_value && threshold == 0.0) return {ops::leaky_relu(x, slope)};

  SymbolicTensor negative_part;  // relu(threshold - x)
  if (slope != 0.0) negative_part = ops::relu(ops::subtract(ops::fill_like(x, threshold), x));
  SymbolicTensor y = threshold != 0.0 ? ops::multiply(x, ops::greater(x, ops::fill_like(x, threshold))) : ops::relu(x);
  if (max_value) y = ops::minimum(ops::maximum(y, ops::zeros_like(y)), ops::fill_like(y, *max_value));
  if (slope != 0.0) y = ops::subtract(y, ops::scale(negative_part, slope));
  return {y};
}

nlohmann::json ReLU::get_config() const {
  return layer_config(*this, {{"max_value", options_.max_value ? nlohmann::json(float32_value(*options_.max_value))
                                                               : nlohmann::json(nullptr)},
                              {"negative_slope", float32_value(options_.negative_slope)},
                              {"threshold", float32_value(options_.threshold)}});
}

LayerPtr ReLU::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ReLU");
  r.check_common();
  return r.finish(ReLU({.max_value = r.optional_number("max_value"),
                        .negative_slope = r.number("negative_slope", 0.0),
                        .threshold = r.number("threshold", 0.0),
                        .name = r.name()}));
}

}  // namespace tower::layers
