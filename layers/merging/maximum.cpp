// Maximum.
#include "tower/layers/merging/maximum.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor Maximum::merge(const std::vector<SymbolicTensor>& inputs) const { return fold(inputs, ops::maximum); }

LayerPtr Maximum::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Maximum");
  r.check_common();
  return r.finish(Maximum({.name = r.name()}));
}

}  // namespace tower::layers
