// MaxPooling3D.
#include "tower/layers/layer_config.h"
#include "tower/layers/pooling/max_pooling3d.h"

namespace tower::layers {

SymbolicTensor MaxPooling3D::pool(const SymbolicTensor& x, const ops::Pool3DArgs& args) const {
  return ops::max_pool3d(x, args);
}

LayerPtr MaxPooling3D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "MaxPooling3D");
  auto options = options_from_config(r);
  return r.finish(MaxPooling3D(r.ints("pool_size", {2, 2, 2}), options));
}

}  // namespace tower::layers
