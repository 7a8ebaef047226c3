// Subtract.
#include "tower/layers/merging/subtract.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

SymbolicTensor Subtract::merge(const std::vector<SymbolicTensor>& inputs) const {
  return ops::subtract(inputs[0], inputs[1]);
}

void Subtract::check_shapes(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 2)
    raise<ValueError>("{}: needs exactly 2 inputs (it computes input 0 - input 1), got {}", describe(*this),
                      shapes.size());
  Merge::check_shapes(shapes);
}

LayerPtr Subtract::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Subtract");
  r.check_common();
  return r.finish(Subtract({.name = r.name()}));
}

}  // namespace tower::layers
