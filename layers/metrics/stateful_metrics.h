// Keras's stateful metrics as per-batch statistics (graph) and a result from their sums (host): the
// interface Metric holds (layers/metrics/metrics.h) and the helpers the implementations share.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/core/graph.h"

namespace tower::metrics::internal {

class Stateful {
 public:
  virtual ~Stateful() = default;
  virtual std::string class_name() const = 0;
  // Keras's get_config() keys besides name and dtype.
  virtual void add_config(nlohmann::json& config) const = 0;
  // A batch's statistics: 1-D float64 sums. y_true, y_pred (batch, ...); sample_weight (batch,) or
  // undefined. `metric` names the metric in errors.
  virtual SymbolicTensor statistics(const std::string& metric, SymbolicTensor y_true, SymbolicTensor y_pred,
                                    const SymbolicTensor& sample_weight) const = 0;
  // Keras's result() from the summed statistics (empty state: no batch yet).
  virtual std::vector<double> result(const std::vector<double>& state) const = 0;
  virtual bool scalar_result() const { return true; }
  // Mean and Sum: update_state(values, sample_weight), values as y_pred.
  virtual bool takes_values() const { return false; }
};

// The Stateful behind Keras's class `class_name` made from its config (name and dtype left out), or
// null when the class is not a stateful one.
std::shared_ptr<const Stateful> stateful_from_config(const std::string& class_name, const nlohmann::json& config);

}  // namespace tower::metrics::internal
