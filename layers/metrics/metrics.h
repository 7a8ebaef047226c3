// Metrics by Keras name or as Keras's metric objects. Most are means of per-sample values over the epoch
// (Keras's MeanMetricWrapper), which the trainer averages as batch means weighted by batch size. The
// stateful ones (AUC, Precision, Recall, the confusion counts, F1Score/FBetaScore, MeanIoU, Mean, Sum) are
// made of per-batch statistics that add up (confusion counts per threshold, ...): the graph computes a
// batch's, the host accumulates them in double over the epoch and computes Keras's result() from them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tower/core/graph.h"
#include "tower/layers/losses/losses.h"

namespace tower {
class Tensor;
}

namespace tower::metrics {

namespace internal {
class Stateful;  // a stateful metric's maths (layers/metrics/stateful_metrics.h)
}

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

  // A stateful metric (made by AUC(), Precision(), ... below).
  Metric(std::shared_ptr<const internal::Stateful> stateful, std::string name);

  static Metric TopKCategoricalAccuracy(int k = 5);
  static Metric SparseTopKCategoricalAccuracy(int k = 5);
  static Metric BinaryAccuracy(double threshold = 0.5);

  // The same metric reported under another name (Keras's name=).
  Metric renamed(std::string name) const;
  // The name the user gave ("accuracy", "acc", "mse"): Keras reports the metric under it.
  const std::string& name() const { return name_; }
  // "accuracy"/"acc" resolved to a concrete metric for these shapes (other metrics: a copy).
  Metric resolve(const Shape& y_true, const Shape& y_pred) const;
  // Per-sample values (batch,) in y_pred's float dtype. mask: y_pred's Keras mask (batch, time), or
  // undefined: the masked steps are left out and the others weighted so that the batch mean is
  // their mean, as Keras 3's metrics honour masks (as Loss does).
  SymbolicTensor operator()(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                            const SymbolicTensor& mask = {}) const;

  // ---- stateful metrics (Keras's update_state / result / reset_state) ----
  // True for AUC, Precision, ...: their values are not means of per-sample values.
  bool stateful() const { return stateful_ != nullptr; }
  // A batch's statistics: a 1-D float64 tensor of sums (so batches and towers add them). y_true and
  // y_pred (batch, ...); sample_weight (batch,), per time step (batch, time) for a metric that is not
  // stateful, or undefined (ones). For a metric that is not stateful:
  // {sum of weighted per-sample values, sum of weights} (Keras's MeanMetricWrapper). Mean and Sum take
  // their values as y_pred and ignore y_true.
  SymbolicTensor statistics(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                            const SymbolicTensor& sample_weight = {}) const;
  // Keras's result() from accumulated statistics (one value, or one per threshold or class).
  std::vector<double> result_of(const std::vector<double>& state) const;
  // Whether result() is one number (not several thresholds, nor F1Score's per-class values).
  bool scalar_result() const;

  // Standalone use, as in Keras: update_state(y_true, y_pred[, sample_weight]) adds a batch (Mean and
  // Sum: update_state(values[, sample_weight])), result() is the value so far, reset_state() forgets.
  // The state lives in this object (copies made by compile() have their own, reset by every epoch).
  void update_state(const Tensor& y_true_or_values, const Tensor& y_pred_or_weights);
  void update_state(const Tensor& values);
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight);
  double result() const;  // throws when result_values() has several values
  std::vector<double> result_values() const;
  void reset_state() { state_.clear(); }
  const std::vector<double>& state() const { return state_; }

  // ---- Keras's serialization ----
  // The Keras class ("AUC", "CategoricalAccuracy"; a name-only metric such as "mse": its function name)
  // and its get_config() ({"name", "dtype", ...} with Keras's keys).
  std::string class_name() const;
  nlohmann::json get_config() const;
  // Keras's {"class_name", "config"} (or a name as a string) back to the metric; unknown keys throw.
  static Metric from_config(const nlohmann::json& config);

 private:
  friend Metric Accuracy(std::string name);
  std::string name_;   // as reported
  std::string kind_;   // canonical function name
  int k_ = 5;
  double threshold_ = 0.5;
  Function function_;
  std::optional<losses::Loss> loss_;  // a loss as a metric ("mse"): it applies the mask itself
  std::shared_ptr<const internal::Stateful> stateful_;  // AUC, Precision, ...: else null
  std::vector<double> state_;                           // update_state's sums (standalone use only)

  // Per-sample means of the values times per-step weights (batch, time): statistics() with Keras's
  // temporal sample weights.
  SymbolicTensor weighted_per_sample(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                                     const SymbolicTensor& sample_weight) const;
};

// ---- Keras's metric objects (keras.metrics.X(...)); names and defaults as Keras 3 ----

// AUC: curve "ROC" or "PR"; summation_method "interpolation" (PR: Davis & Goadrich), "minoring" or
// "majoring"; num_thresholds (> 1) evenly spaced in [0, 1] with the ends at -epsilon and 1 + epsilon, or
// the given thresholds in [0, 1] (then num_thresholds is their count + 2); from_logits: y_pred are logits.
// Multi-dimensional labels are flattened, or with multi_label (y (batch, labels)) each label has its curve
// and the result is the mean of their AUCs (num_labels: checked against the data when given; Keras's
// label_weights are not supported).
struct AUCOptions {
  int num_thresholds = 200;
  std::string curve = "ROC";
  std::string summation_method = "interpolation";
  std::string name = "auc";
  std::vector<double> thresholds;
  bool multi_label = false;
  std::optional<int> num_labels;
  bool from_logits = false;
};
Metric AUC(const AUCOptions& options = {});

// Precision and Recall: y_pred > threshold counts as positive, for each threshold (default 0.5, or
// -1e10 with top_k: only the top_k predictions of each sample are positive); class_id: only that class
// (the last axis) counts. Several thresholds give one result per threshold.
struct PrecisionOptions {
  std::vector<double> thresholds;
  std::optional<int> top_k;
  std::optional<int> class_id;
  std::string name;  // empty: "precision" / "recall"
};
Metric Precision(const PrecisionOptions& options = {});
Metric Recall(const PrecisionOptions& options = {});
// The weighted confusion counts at each threshold (default 0.5).
Metric TruePositives(std::vector<double> thresholds = {}, std::string name = "true_positives");
Metric FalsePositives(std::vector<double> thresholds = {}, std::string name = "false_positives");
Metric TrueNegatives(std::vector<double> thresholds = {}, std::string name = "true_negatives");
Metric FalseNegatives(std::vector<double> thresholds = {}, std::string name = "false_negatives");

// F-scores of y_true and y_pred (batch, classes): average "" (None: one score per class), "micro",
// "macro" or "weighted"; threshold: y_pred > threshold is positive, or unset: each row's largest.
struct FBetaOptions {
  std::string average;
  double beta = 1.0;
  std::optional<double> threshold;
  std::string name;  // empty: "fbeta_score" / "f1_score"
};
Metric FBetaScore(const FBetaOptions& options = {});
Metric F1Score(const FBetaOptions& options = {});  // beta must stay 1

// The mean over classes of intersection over union, from a confusion matrix of class ids (sparse_y_true
// / sparse_y_pred false: the argmax of the last axis). ignore_class: labels of that class do not count.
struct MeanIoUOptions {
  std::string name = "mean_io_u";
  std::optional<int> ignore_class;
  bool sparse_y_true = true;
  bool sparse_y_pred = true;
};
Metric MeanIoU(int num_classes, const MeanIoUOptions& options = {});

// The weighted mean and the weighted sum of the values given to update_state (standalone use).
Metric Mean(std::string name = "mean");
Metric Sum(std::string name = "sum");

// The accuracies as Keras's classes (reported under these names).
Metric Accuracy(std::string name = "accuracy");  // keras.metrics.Accuracy: y_true == y_pred
Metric BinaryAccuracy(double threshold = 0.5, std::string name = "binary_accuracy");
Metric CategoricalAccuracy(std::string name = "categorical_accuracy");
Metric SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy");
Metric TopKCategoricalAccuracy(int k = 5, std::string name = "top_k_categorical_accuracy");
Metric SparseTopKCategoricalAccuracy(int k = 5, std::string name = "sparse_top_k_categorical_accuracy");

// Keras's register_keras_serializable for a metric function: from now on, in this process, Metric(name)
// (so compile(..., {"name"}) and the metrics of a loaded training_config) is `function`, reported
// under `name`. Throws ValueError for an empty name or function, for a built-in metric's or loss's
// name, and for a name registered before.
void register_metric(const std::string& name, Metric::Function function);

}  // namespace tower::metrics
