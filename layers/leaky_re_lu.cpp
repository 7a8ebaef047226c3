// LeakyReLU.
#include "layers/leaky_re_lu.h"

#include "core/error.h"
#include "core/ops.h"
#include "layers/layer_utils.h"

namespace tower::layers {

LeakyReLU::LeakyReLU(const LeakyReLUOptions& options)
    : Layer(options.name, "leaky_re_lu"), negative_slope_(options.alpha.value_or(options.negative_slope)) {
  if (!(negative_slope_ >= 0.0))
    raise<ValueError>("{}: negative_slope (alpha) cannot be negative, got {}", describe(*this), negative_slope_);
}

std::vector<SymbolicTensor> LeakyReLU::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  return {ops::leaky_relu(inputs.at(0), negative_slope_)};
}

}  // namespace tower::layers
