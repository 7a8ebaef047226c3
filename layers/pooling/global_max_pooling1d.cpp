// GlobalMaxPooling1D.
#include "tower/layers/pooling/global_max_pooling1d.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

// Keras's GlobalMaxPooling1D takes no mask: the masked steps count too.
SymbolicTensor GlobalMaxPooling1D::reduce(const SymbolicTensor& x, bool keepdims, const SymbolicTensor&) const {
  return ops::reduce_max(x, {1}, keepdims);
}

LayerPtr GlobalMaxPooling1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GlobalMaxPooling1D");
  r.check_common();
  return r.finish(GlobalMaxPooling1D({.keepdims = r.boolean("keepdims", false), .data_format = r.data_format(),
                       .name = r.name()}));
}

}  // namespace tower::layers
