// Multiply.
#include "layers/multiply.h"

#include "core/ops.h"

namespace tower::layers {

SymbolicTensor Multiply::merge(const std::vector<SymbolicTensor>& inputs) const { return fold(inputs, ops::multiply); }

}  // namespace tower::layers
