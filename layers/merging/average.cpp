// Average.
#include "tower/layers/merging/average.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor Average::merge(const std::vector<SymbolicTensor>& inputs) const {
  return ops::scale(fold(inputs, ops::add), 1.0 / static_cast<double>(inputs.size()));
}

LayerPtr Average::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Average");
  r.check_common();
  return r.finish(Average({.name = r.name()}));
}

}  // namespace tower::layers
