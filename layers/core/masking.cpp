// Masking.
#include "tower/layers/core/masking.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Masking::Masking(double mask_value, const MaskingOptions& options)
    : Layer(options.name, "masking"), mask_value_(mask_value) {}

SymbolicTensor Masking::step_mask(const SymbolicTensor& x, bool keepdims) const {
  if (x.rank() < 3)
    raise<ShapeError>("{}: expected input (batch, time, features), got {}", describe(*this), x.shape().to_string());
  const SymbolicTensor equal = ops::compare_mask(x, ops::fill_like(x, mask_value_), "eq");
  return ops::reduce_max(ops::subtract(ops::ones_like(equal), equal), {-1}, keepdims);  // any feature differs
}

std::vector<SymbolicTensor> Masking::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  return {ops::multiply(x, step_mask(x, /*keepdims=*/true))};
}

std::vector<SymbolicTensor> Masking::compute_mask(const std::vector<SymbolicTensor>& inputs,
                                                  const std::vector<SymbolicTensor>&) const {
  const SymbolicTensor mask = step_mask(inputs.at(0), /*keepdims=*/false);  // (batch, time)
  return {mask.dtype() == DType::float32 ? mask : ops::cast(mask, DType::float32)};
}

nlohmann::json Masking::get_config() const { return layer_config(*this, {{"mask_value", mask_value_}}); }

LayerPtr Masking::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Masking");
  r.check_common();
  return r.finish(Masking(r.number("mask_value", 0.0), {.name = r.name()}));
}

}  // namespace tower::layers
