// Metrics by Keras name. Every supported metric is a mean of per-sample values over the epoch
// (Keras's MeanMetricWrapper), so the trainer averages batch means weighted by batch size.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "tower/core/graph.h"
#include "tower/layers/losses/losses.h"

namespace tower::metrics {

// Names: "accuracy"/"acc" (resolved per output as Keras does: binary when y_pred's last dimension is 1,
// sparse categorical when y_true has lower rank or a last dimension of 1, else categorical),
// binary_accuracy, categorical_accuracy, sparse_categorical_accuracy, top_k_categorical_accuracy,
// sparse_top_k_categorical_accuracy (k = 5), mean_squared_error ("mse"), mean_absolute_error ("mae"),
// and the loss names. A name is looked up in the custom_objects of the innermost CustomObjectScope
// (layers/registry.h) first, then among these, then among the metrics given to register_metric, then
// as a loss (losses::Loss). Unknown names throw ValueError saying how to supply the metric.
class Metric {
 public:
  using Function = std::function<SymbolicTensor(const SymbolicTensor& y_true, const SymbolicTensor& y_pred)>;

  Metric(const char* name) : Metric(std::string(name)) {}  // NOLINT: implicit, as Keras strings
  Metric(const std::string& name);                          // NOLINT
  // A custom metric: per-sample values (batch,).
  Metric(Function function, std::string name);

  static Metric TopKCategoricalAccuracy(int k = 5);
  static Metric SparseTopKCategoricalAccuracy(int k = 5);
  static Metric BinaryAccuracy(double threshold = 0.5);

  // The name the user gave ("accuracy", "acc", "mse"): Keras reports the metric under it.
  const std::string& name() const { return name_; }
  // "accuracy"/"acc" resolved to a concrete metric for these shapes (other metrics: a copy).
  Metric resolve(const Shape& y_true, const Shape& y_pred) const;
  // Per-sample values (batch,) in y_pred's float dtype. mask: y_pred's Keras mask (batch, time), or
  // undefined: the masked steps are left out and the others weighted so that the batch mean is
  // their mean, as Keras 3's metrics honour masks (as Loss does).
  SymbolicTensor operator()(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                            const SymbolicTensor& mask = {}) const;

 private:
  std::string name_;   // as reported
  std::string kind_;   // canonical function name
  int k_ = 5;
  double threshold_ = 0.5;
  Function function_;
  std::optional<losses::Loss> loss_;  // a loss as a metric ("mse"): it applies the mask itself
};

// Keras's register_keras_serializable for a metric function: from now on, in this process, Metric(name)
// (so compile(..., {"name"}) and the metrics of a loaded training_config) is `function`, reported
// under `name`. Throws ValueError for an empty name or function, for a built-in metric's or loss's
// name, and for a name registered before.
void register_metric(const std::string& name, Metric::Function function);

}  // namespace tower::metrics
