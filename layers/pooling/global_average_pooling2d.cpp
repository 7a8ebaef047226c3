// GlobalAveragePooling2D.
#include "tower/layers/pooling/global_average_pooling2d.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor GlobalAveragePooling2D::reduce(const SymbolicTensor& x, bool keepdims) const {
  return ops::reduce_mean(x, {1, 2}, keepdims);
}

LayerPtr GlobalAveragePooling2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GlobalAveragePooling2D");
  r.check_common();
  return r.finish(GlobalAveragePooling2D({.keepdims = r.boolean("keepdims", false), .data_format = r.data_format(),
                       .name = r.name()}));
}

}  // namespace tower::layers
