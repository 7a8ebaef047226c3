// Minimum.
#include "tower/layers/merging/minimum.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor Minimum::merge(const std::vector<SymbolicTensor>& inputs) const { return fold(inputs, ops::minimum); }

LayerPtr Minimum::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Minimum");
  r.check_common();
  return r.finish(Minimum({.name = r.name()}));
}

}  // namespace tower::layers
