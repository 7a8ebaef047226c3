// Weight regularizers (Keras's L1, L2, L1L2): a penalty added to the training loss.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "tower/core/graph.h"

namespace tower {

// penalty(w) = l1 * sum(|w|) + l2 * sum(w^2). Default-constructed: none.
struct Regularizer {
  double l1 = 0.0;
  double l2 = 0.0;

  bool defined() const { return l1 != 0.0 || l2 != 0.0; }
  // The penalty of `weight` as a scalar in weight's graph.
  SymbolicTensor operator()(const SymbolicTensor& weight) const;

  // As tf.keras 2 writes it: null when none, else {"class_name": "L1" | "L2" | "L1L2", "config":
  // {"l1": ..., "l2": ...}} with the factors rounded to float32 as Keras keeps them.
  nlohmann::json get_config() const;
  // Any Keras version's form: null, tf.keras/Keras 3 L1/L2/L1L2 (with "module"), Keras 2.0's L1L2,
  // Keras 1's {"name": "WeightRegularizer", "l1": ..., "l2": ...}, or a name ("l2"). Throws
  // ValueError for anything else (custom regularizers, OrthogonalRegularizer).
  static Regularizer from_config(const nlohmann::json& config);
};

namespace regularizers {
inline Regularizer l1(double l1 = 0.01) { return {.l1 = l1}; }
inline Regularizer l2(double l2 = 0.01) { return {.l2 = l2}; }
inline Regularizer l1_l2(double l1 = 0.01, double l2 = 0.01) { return {.l1 = l1, .l2 = l2}; }
}  // namespace regularizers

}  // namespace tower
