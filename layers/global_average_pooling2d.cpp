// GlobalAveragePooling2D.
#include "layers/global_average_pooling2d.h"

#include "core/ops.h"

namespace tower::layers {

SymbolicTensor GlobalAveragePooling2D::reduce(const SymbolicTensor& x, bool keepdims) const {
  return ops::reduce_mean(x, {1, 2}, keepdims);
}

}  // namespace tower::layers
