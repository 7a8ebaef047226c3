// LeakyReLU.
#include "tower/layers/activations/leaky_re_lu.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

LeakyReLU::LeakyReLU(const LeakyReLUOptions& options)
    : Layer(options.name, "leaky_re_lu"), negative_slope_(options.alpha.value_or(options.negative_slope)) {
  if (!(negative_slope_ >= 0.0))
    raise<ValueError>("{}: negative_slope (alpha) cannot be negative, got {}", describe(*this), negative_slope_);
}

std::vector<SymbolicTensor> LeakyReLU::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  return {ops::leaky_relu(inputs.at(0), negative_slope_)};
}

nlohmann::json LeakyReLU::get_config() const {
  return layer_config(*this, {{"alpha", float32_value(negative_slope_)}});  // tf.keras 2's name
}

LayerPtr LeakyReLU::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "LeakyReLU");
  r.check_common();
  // tf.keras 2 and Keras 1 write "alpha", Keras 3 "negative_slope"; both default to 0.3.
  double slope = r.has("alpha") ? r.number("alpha", 0.3) : r.number("negative_slope", 0.3);
  return r.finish(LeakyReLU(slope, r.name()));
}

}  // namespace tower::layers
