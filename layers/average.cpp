// Average.
#include "layers/average.h"

#include "core/ops.h"

namespace tower::layers {

SymbolicTensor Average::merge(const std::vector<SymbolicTensor>& inputs) const {
  return ops::scale(fold(inputs, ops::add), 1.0 / static_cast<double>(inputs.size()));
}

}  // namespace tower::layers
