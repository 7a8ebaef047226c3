// Activation.
#include "layers/activation.h"

#include "layers/activations.h"

namespace tower::layers {

Activation::Activation(const std::string& activation, const ActivationOptions& options)
    : Layer(options.name, "activation"), activation_(activation) {
  check_activation_name(activation);
}

std::vector<SymbolicTensor> Activation::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  return {apply_activation(activation_, inputs.at(0))};
}

}  // namespace tower::layers
