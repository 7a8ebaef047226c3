// GlobalAveragePooling1D.
#include "tower/layers/pooling/global_average_pooling1d.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor GlobalAveragePooling1D::reduce(const SymbolicTensor& x, bool keepdims) const {
  return ops::reduce_mean(x, {1}, keepdims);
}

LayerPtr GlobalAveragePooling1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GlobalAveragePooling1D");
  r.check_common();
  return r.finish(GlobalAveragePooling1D({.keepdims = r.boolean("keepdims", false), .name = r.name()}));
}

}  // namespace tower::layers
