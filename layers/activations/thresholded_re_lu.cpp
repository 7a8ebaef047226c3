// ThresholdedReLU.
#include "tower/layers/activations/thresholded_re_lu.h"

#include <cmath>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

ThresholdedReLU::ThresholdedReLU(const ThresholdedReLUOptions& options)
    : Layer(options.name, "thresholded_re_lu"), theta_(options.theta) {
  if (!std::isfinite(theta_) || theta_ < 0.0)
    raise<ValueError>("{}: theta must be a finite number >= 0, got {}", describe(*this), theta_);
}

std::vector<SymbolicTensor> ThresholdedReLU::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  // tf.keras 2: x * cast(x > theta); theta as float32, as Keras keeps it.
  return {ops::multiply(x, ops::greater(x, ops::fill_like(x, float32_value(theta_))))};
}

nlohmann::json ThresholdedReLU::get_config() const {
  return layer_config(*this, {{"theta", float32_value(theta_)}});
}

LayerPtr ThresholdedReLU::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ThresholdedReLU");
  r.check_common();
  return r.finish(ThresholdedReLU({.theta = r.number("theta", 1.0), .name = r.name()}));
}

}  // namespace tower::layers
