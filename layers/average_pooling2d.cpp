// AveragePooling2D.
#include "layers/average_pooling2d.h"

namespace tower::layers {

SymbolicTensor AveragePooling2D::pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const {
  return ops::avg_pool2d(x, args);
}

}  // namespace tower::layers
