// Add.
#include "tower/layers/merging/add.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor Add::merge(const std::vector<SymbolicTensor>& inputs) const { return fold(inputs, ops::add); }

LayerPtr Add::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Add");
  r.check_common();
  return r.finish(Add({.name = r.name()}));
}

}  // namespace tower::layers
