// Weight regularizers (Keras's L1, L2, L1L2): a penalty added to the training loss.
#pragma once

#include "core/graph.h"

namespace tower {

// penalty(w) = l1 * sum(|w|) + l2 * sum(w^2). Default-constructed: none.
struct Regularizer {
  double l1 = 0.0;
  double l2 = 0.0;

  bool defined() const { return l1 != 0.0 || l2 != 0.0; }
  // The penalty of `weight` as a scalar in weight's graph.
  SymbolicTensor operator()(const SymbolicTensor& weight) const;
};

namespace regularizers {
inline Regularizer l1(double l1 = 0.01) { return {.l1 = l1}; }
inline Regularizer l2(double l2 = 0.01) { return {.l2 = l2}; }
inline Regularizer l1_l2(double l1 = 0.01, double l2 = 0.01) { return {.l1 = l1, .l2 = l2}; }
}  // namespace regularizers

}  // namespace tower
