// AveragePooling1D.
#include "tower/layers/pooling/average_pooling1d.h"

#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor AveragePooling1D::pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const {
  return ops::avg_pool2d(x, args);
}

LayerPtr AveragePooling1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "AveragePooling1D");
  auto options = options_from_config(r);
  return r.finish(AveragePooling1D(pool_size_from_config(r), options));
}

}  // namespace tower::layers
