// Activation.
#include "tower/layers/activations/activation.h"

#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

Activation::Activation(const std::string& activation, const ActivationOptions& options)
    : Layer(options.name, "activation"), activation_(activation) {
  check_activation_name(activation);
}

std::vector<SymbolicTensor> Activation::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  return {apply_activation(activation_, inputs.at(0))};
}

nlohmann::json Activation::get_config() const {
  return layer_config(*this, {{"activation", activation_to_config(activation_)}});
}

LayerPtr Activation::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Activation");
  r.check_common();
  return r.finish(Activation(r.activation("activation"), {.name = r.name()}));
}

}  // namespace tower::layers
