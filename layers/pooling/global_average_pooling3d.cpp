// GlobalAveragePooling3D.
#include "tower/layers/pooling/global_average_pooling3d.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor GlobalAveragePooling3D::reduce(const SymbolicTensor& x, bool keepdims) const {
  return ops::reduce_mean(x, {1, 2, 3}, keepdims);
}

LayerPtr GlobalAveragePooling3D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GlobalAveragePooling3D");
  r.check_common();
  return r.finish(GlobalAveragePooling3D({.keepdims = r.boolean("keepdims", false), .data_format = r.data_format(),
                                          .name = r.name()}));
}

}  // namespace tower::layers
