// Softmax.
#include "layers/softmax.h"

#include "core/error.h"
#include "core/ops.h"
#include "layers/layer_utils.h"

namespace tower::layers {

Softmax::Softmax(const SoftmaxOptions& options) : Layer(options.name, "softmax"), axis_(options.axis) {}

std::vector<SymbolicTensor> Softmax::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  if (axis_ < -x.rank() || axis_ >= x.rank())
    raise<ValueError>("{}: axis {} is out of range for an input of shape {}", describe(*this), axis_,
                      x.shape().to_string());
  return {ops::softmax(x, axis_)};
}

}  // namespace tower::layers
