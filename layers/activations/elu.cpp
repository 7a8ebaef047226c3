// ELU.
#include "tower/layers/activations/elu.h"

#include <cmath>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

ELU::ELU(const ELUOptions& options) : Layer(options.name, "elu"), alpha_(options.alpha) {
  if (!std::isfinite(alpha_)) raise<ValueError>("{}: alpha must be a finite number, got {}", describe(*this), alpha_);
}

std::vector<SymbolicTensor> ELU::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  return {ops::elu(inputs.at(0), alpha_)};
}

nlohmann::json ELU::get_config() const { return layer_config(*this, {{"alpha", float32_value(alpha_)}}); }

LayerPtr ELU::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ELU");
  r.check_common();
  return r.finish(ELU(r.number("alpha", 1.0), r.name()));
}

}  // namespace tower::layers
