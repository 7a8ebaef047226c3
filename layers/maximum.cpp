// Maximum.
#include "layers/maximum.h"

#include "core/ops.h"

namespace tower::layers {

SymbolicTensor Maximum::merge(const std::vector<SymbolicTensor>& inputs) const { return fold(inputs, ops::maximum); }

}  // namespace tower::layers
