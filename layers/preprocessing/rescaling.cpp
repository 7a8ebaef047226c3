// Rescaling.
#include "tower/layers/preprocessing/rescaling.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

Rescaling::Rescaling(double scale, const RescalingOptions& options)
    : Layer(options.name, "rescaling"), scale_(scale), offset_(options.offset) {}

std::vector<SymbolicTensor> Rescaling::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);  // as Keras: images often arrive as integers
  SymbolicTensor y = ops::multiply(x, ctx.graph.constant(Tensor::scalar(scale_, x.dtype())));
  if (offset_ != 0.0) y = ops::add(y, ctx.graph.constant(Tensor::scalar(offset_, x.dtype())));
  return {y};
}

nlohmann::json Rescaling::get_config() const {
  return layer_config(*this, {{"scale", scale_}, {"offset", offset_}});
}

LayerPtr Rescaling::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Rescaling");
  r.check_common();
  if (!r.has("scale")) r.fail("the config has no field \"scale\", which this layer needs");
  if (!config["scale"].is_number())
    r.fail("field \"scale\" must be one number (per-channel scales are not supported), got " + config["scale"].dump());
  return r.finish(Rescaling(r.number("scale", 1.0), {.offset = r.number("offset", 0.0), .name = r.name()}));
}

}  // namespace tower::layers
