// MaxPooling2D.
#include "layers/max_pooling2d.h"

namespace tower::layers {

SymbolicTensor MaxPooling2D::pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const {
  return ops::max_pool2d(x, args);
}

}  // namespace tower::layers
