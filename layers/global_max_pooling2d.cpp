// GlobalMaxPooling2D.
#include "layers/global_max_pooling2d.h"

#include "core/ops.h"

namespace tower::layers {

SymbolicTensor GlobalMaxPooling2D::reduce(const SymbolicTensor& x, bool keepdims) const {
  return ops::reduce_max(x, {1, 2}, keepdims);
}

}  // namespace tower::layers
