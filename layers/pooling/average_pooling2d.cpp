// AveragePooling2D.
#include "tower/layers/pooling/average_pooling2d.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor AveragePooling2D::pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const {
  return ops::avg_pool2d(x, args);
}

LayerPtr AveragePooling2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "AveragePooling2D");
  auto options = options_from_config(r);
  return r.finish(AveragePooling2D(r.ints("pool_size", {2, 2}), options));
}

}  // namespace tower::layers
