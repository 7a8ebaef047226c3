// GlobalMaxPooling2D.
#include "tower/layers/pooling/global_max_pooling2d.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor GlobalMaxPooling2D::reduce(const SymbolicTensor& x, bool keepdims) const {
  return ops::reduce_max(x, {1, 2}, keepdims);
}

LayerPtr GlobalMaxPooling2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GlobalMaxPooling2D");
  r.check_common();
  return r.finish(GlobalMaxPooling2D({.keepdims = r.boolean("keepdims", false), .data_format = r.data_format(),
                       .name = r.name()}));
}

}  // namespace tower::layers
