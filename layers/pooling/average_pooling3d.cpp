// AveragePooling3D.
#include "tower/layers/layer_config.h"
#include "tower/layers/pooling/average_pooling3d.h"

namespace tower::layers {

SymbolicTensor AveragePooling3D::pool(const SymbolicTensor& x, const ops::Pool3DArgs& args) const {
  return ops::avg_pool3d(x, args);
}

LayerPtr AveragePooling3D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "AveragePooling3D");
  auto options = options_from_config(r);
  return r.finish(AveragePooling3D(r.ints("pool_size", {2, 2, 2}), options));
}

}  // namespace tower::layers
