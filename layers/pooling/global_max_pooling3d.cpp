// GlobalMaxPooling3D.
#include "tower/layers/pooling/global_max_pooling3d.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor GlobalMaxPooling3D::reduce(const SymbolicTensor& x, bool keepdims) const {
  return ops::reduce_max(x, {1, 2, 3}, keepdims);
}

LayerPtr GlobalMaxPooling3D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GlobalMaxPooling3D");
  r.check_common();
  return r.finish(GlobalMaxPooling3D({.keepdims = r.boolean("keepdims", false), .data_format = r.data_format(),
                                          .name = r.name()}));
}

}  // namespace tower::layers
