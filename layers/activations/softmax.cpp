// Softmax.
#include "tower/layers/activations/softmax.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Softmax::Softmax(const SoftmaxOptions& options) : Layer(options.name, "softmax"), axis_(options.axis) {}

std::vector<SymbolicTensor> Softmax::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  if (axis_ < -x.rank() || axis_ >= x.rank())
    raise<ValueError>("{}: axis {} is out of range for an input of shape {}", describe(*this), axis_,
                      x.shape().to_string());
  return {ops::softmax(x, axis_)};
}

nlohmann::json Softmax::get_config() const { return layer_config(*this, {{"axis", axis_}}); }

LayerPtr Softmax::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Softmax");
  r.check_common();
  std::vector<std::int64_t> axes = r.ints("axis", {-1});
  if (axes.size() != 1) r.fail("field \"axis\" must be one axis; a softmax over several axes is not supported");
  return r.finish(Softmax({.axis = r.axis(axes[0], "axis"), .name = r.name()}));
}

}  // namespace tower::layers
