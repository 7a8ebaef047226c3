// Add.
#include "layers/add.h"

#include "core/ops.h"

namespace tower::layers {

SymbolicTensor Add::merge(const std::vector<SymbolicTensor>& inputs) const { return fold(inputs, ops::add); }

}  // namespace tower::layers
