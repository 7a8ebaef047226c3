// ActivityRegularization.
#include "tower/layers/regularization/activity_regularization.h"

#include <cmath>

#include "tower/core/error.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

ActivityRegularization::ActivityRegularization(double l1, double l2, const ActivityRegularizationOptions& options)
    : Layer(options.name, "activity_regularization"), l1_(l1), l2_(l2) {
  if (!(l1 >= 0.0 && std::isfinite(l1)) || !(l2 >= 0.0 && std::isfinite(l2)))
    raise<ValueError>("{}: l1 and l2 must be finite numbers >= 0 (the penalty's factors), got l1={}, l2={}",
                      describe(*this), l1, l2);
  set_activity_regularizer(Regularizer{.l1 = l1, .l2 = l2});
}

std::vector<SymbolicTensor> ActivityRegularization::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  return {inputs.at(0)};  // the model adds the penalty (Layer::add_activity_losses)
}

nlohmann::json ActivityRegularization::get_config() const {
  nlohmann::json config = layer_config(*this, {{"l1", l1_}, {"l2", l2_}});
  config.erase("activity_regularizer");  // l1 and l2 say it
  return config;
}

LayerPtr ActivityRegularization::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ActivityRegularization");
  r.check_common();
  ActivityRegularization layer(r.number("l1", 0.0), r.number("l2", 0.0), {.name = r.name()});
  auto ptr = r.finish(layer);
  ptr->set_activity_regularizer(Regularizer{.l1 = layer.l1(), .l2 = layer.l2()});  // l1 and l2 over any other
  return ptr;
}

}  // namespace tower::layers
