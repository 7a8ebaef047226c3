// Reverse-mode autodiff: appends the gradient subgraph of a scalar (or summed) output to the graph.
#pragma once

#include <vector>

#include "tower/core/graph.h"

namespace tower {

// d(sum(y))/dx for each x in xs (or the vector-Jacobian product with grad_y when given).
// Gradient nodes are placed on the device of the forward node they differentiate. An entry is
// undefined when y does not depend on that x through differentiable ops.
std::vector<SymbolicTensor> gradients(const SymbolicTensor& y, const std::vector<SymbolicTensor>& xs,
                                      const SymbolicTensor& grad_y = {});

}  // namespace tower
