// GlobalAveragePooling1D.
#include "tower/layers/pooling/global_average_pooling1d.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

SymbolicTensor GlobalAveragePooling1D::reduce(const SymbolicTensor& x, bool keepdims, const SymbolicTensor& mask) const {
  if (!mask.defined()) return ops::reduce_mean(x, {1}, keepdims);
  // sum(x m) / sum(m) over the steps, m (batch, steps, 1).
  const SymbolicTensor m =
      ops::reshape(mask.dtype() == x.dtype() ? mask : ops::cast(mask, x.dtype()), {-1, x.shape().dim(1), 1});
  return ops::divide(ops::reduce_sum(ops::multiply(x, m), {1}, keepdims), ops::reduce_sum(m, {1}, keepdims));
}

LayerPtr GlobalAveragePooling1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GlobalAveragePooling1D");
  r.check_common();
  return r.finish(GlobalAveragePooling1D({.keepdims = r.boolean("keepdims", false), .data_format = r.data_format(),
                       .name = r.name()}));
}

}  // namespace tower::layers
