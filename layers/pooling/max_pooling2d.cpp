// MaxPooling2D.
#include "tower/layers/layer_config.h"
#include "tower/layers/pooling/max_pooling2d.h"

namespace tower::layers {

SymbolicTensor MaxPooling2D::pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const {
  return ops::max_pool2d(x, args);
}

LayerPtr MaxPooling2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "MaxPooling2D");
  auto options = options_from_config(r);
  return r.finish(MaxPooling2D(r.ints("pool_size", {2, 2}), options));
}

}  // namespace tower::layers
