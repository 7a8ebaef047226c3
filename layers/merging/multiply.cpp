// Multiply.
#include "tower/layers/merging/multiply.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor Multiply::merge(const std::vector<SymbolicTensor>& inputs) const { return fold(inputs, ops::multiply); }

LayerPtr Multiply::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Multiply");
  r.check_common();
  return r.finish(Multiply({.name = r.name()}));
}

}  // namespace tower::layers
