// Weight constraints (Keras's MaxNorm, NonNeg, UnitNorm, MinMaxNorm): a function of a weight whose result
// is assigned back to it after each optimizer update.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tower/core/graph.h"

namespace tower {

// Default-constructed: none. The norms are L2 norms over `axis` (kept), as Keras computes them, with
// Keras's epsilon 1e-7 added to the norm in the divisions.
struct Constraint {
  enum class Kind { none, max_norm, non_neg, unit_norm, min_max_norm };
  Kind kind = Kind::none;
  double min_value = 0.0;          // min_max_norm
  double max_value = 2.0;          // max_norm (default 2), min_max_norm (default 1)
  double rate = 1.0;               // min_max_norm
  std::vector<std::int64_t> axis{0};  // the axes the norm runs over; negative counts from the end

  bool defined() const { return kind != Kind::none; }
  // Keras's class name ("MaxNorm"), or "" for none.
  std::string class_name() const;
  // The constrained value of `weight` (same shape and dtype) in weight's graph:
  //   max_norm:     w * clip(n, 0, max_value) / (eps + n)
  //   non_neg:      w * (w >= 0)
  //   unit_norm:    w / (eps + n)
  //   min_max_norm: w * (rate * clip(n, min_value, max_value) + (1 - rate) * n) / (eps + n)
  SymbolicTensor operator()(const SymbolicTensor& weight) const;

  // As Keras writes it: null when none, else {"module": "keras.constraints", "class_name": "MaxNorm",
  // "config": {"max_value": 2.0, "axis": 0}, "registered_name": null} (an axis list stays a list).
  nlohmann::json get_config() const;
  // Any Keras version's form: null, {"class_name", "config"} with Keras's class names (MaxNorm, NonNeg,
  // UnitNorm, MinMaxNorm and the aliases max_norm, non_neg, unit_norm, min_max_norm, maxnorm, nonneg,
  // unitnorm), or such a name alone (Keras's defaults). Throws ValueError for anything else.
  static Constraint from_config(const nlohmann::json& config);
};

namespace constraints {
inline Constraint max_norm(double max_value = 2.0, std::vector<std::int64_t> axis = {0}) {
  return {.kind = Constraint::Kind::max_norm, .max_value = max_value, .axis = std::move(axis)};
}
inline Constraint non_neg() { return {.kind = Constraint::Kind::non_neg}; }
inline Constraint unit_norm(std::vector<std::int64_t> axis = {0}) {
  return {.kind = Constraint::Kind::unit_norm, .axis = std::move(axis)};
}
inline Constraint min_max_norm(double min_value = 0.0, double max_value = 1.0, double rate = 1.0,
                               std::vector<std::int64_t> axis = {0}) {
  return {.kind = Constraint::Kind::min_max_norm, .min_value = min_value, .max_value = max_value, .rate = rate,
          .axis = std::move(axis)};
}
}  // namespace constraints

// The constraint a layer gave its weight `variable` (as Keras keeps it on the variable), applied after each
// optimizer update by Model's training step. Setting none removes it.
void set_constraint(const VariablePtr& variable, const Constraint& constraint);
Constraint constraint_of(const VariablePtr& variable);

// Reads the constraint at config[key] (any Keras form) and sets that field to null, so that the
// ConfigReader made from `config` afterwards (which refuses non-null *_constraint fields) accepts it.
// `where`: the layer ("Dense"), for errors, which name it, its name in the config and the field.
Constraint take_constraint(nlohmann::json& config, const char* key, const char* where);

}  // namespace tower
