// MaxPooling1D.
#include "tower/layers/pooling/max_pooling1d.h"

#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor MaxPooling1D::pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const {
  return ops::max_pool2d(x, args);
}

LayerPtr MaxPooling1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "MaxPooling1D");
  auto options = options_from_config(r);
  return r.finish(MaxPooling1D(pool_size_from_config(r), options));
}

}  // namespace tower::layers
