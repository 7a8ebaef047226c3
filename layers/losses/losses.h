// Losses by Keras name: each gives a per-sample loss (batch,); the trainer averages it over the batch
// with sample weights (Keras's "sum over batch size" reduction).
#pragma once

#include <functional>
#include <string>

#include "tower/core/graph.h"

namespace tower::losses {

struct LossOptions {
  bool from_logits = false;      // crossentropies: y_pred holds logits rather than probabilities
  double label_smoothing = 0.0;  // categorical and binary crossentropy
  double delta = 1.0;            // huber
  bool apply_class_balancing = false;  // binary_focal_crossentropy: weight alpha for 1s, 1 - alpha for 0s
  double alpha = 0.25;                 // focal crossentropies
  double gamma = 2.0;                  // focal crossentropies: the focusing exponent
  int axis = -1;                       // cosine_similarity (every other loss works on the last axis)
};

// A loss function: y_true, y_pred -> per-sample loss (batch,) (the mean over the last axis for
// elementwise losses, as Keras). Names: categorical_crossentropy, sparse_categorical_crossentropy,
// binary_crossentropy, mean_squared_error ("mse"), mean_absolute_error ("mae"), huber (Keras's
// "huber_loss" too), log_cosh ("logcosh"), kl_divergence ("kld", "kullback_leibler_divergence"),
// poisson, hinge, squared_hinge, categorical_hinge, cosine_similarity (the NEGATIVE similarity, as
// Keras), mean_absolute_percentage_error ("mape"), mean_squared_logarithmic_error ("msle"),
// binary_focal_crossentropy, categorical_focal_crossentropy; CamelCase class names are accepted. A name is looked up in the custom_objects of
// the innermost CustomObjectScope (layers/registry.h) first, then among these, then among the losses
// given to register_loss. Unknown names throw ValueError saying how to supply the loss.
class Loss {
 public:
  using Function = std::function<SymbolicTensor(const SymbolicTensor& y_true, const SymbolicTensor& y_pred)>;

  Loss(const char* name) : Loss(std::string(name)) {}  // NOLINT: implicit, as Keras strings
  Loss(const std::string& name, const LossOptions& options = {});  // NOLINT
  // A custom loss (a C++ callable giving a per-sample loss (batch, ...), or a scalar: the batch's mean,
  // which then counts for every sample, as Keras takes it), reported under `name`.
  Loss(Function function, std::string name);

  const std::string& name() const { return name_; }  // canonical snake_case name
  const LossOptions& options() const { return options_; }
  // y_true: (batch, ...) of any numeric dtype (integer class ids for the sparse loss);
  // y_pred: (batch, ...) float. Checks shapes and names the loss in the error. mask: y_pred's Keras
  // mask (batch, time), or undefined: the masked steps' losses are left out, and the others weighted
  // so that the mean over the batch is their mean, as Keras's losses honour masks. sample_weight:
  // undefined, (batch,), or one weight per time step (batch, time) for a loss of a sequence output
  // (Keras's temporal sample weights), multiplied into the per-step losses before their mean.
  SymbolicTensor operator()(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                            const SymbolicTensor& mask = {}, const SymbolicTensor& sample_weight = {}) const;

 private:
  std::string name_;
  LossOptions options_;
  Function function_;
};

// Keras's register_keras_serializable for a loss function: from now on, in this process, Loss(name)
// (so compile(..., "name") and the loss of a loaded training_config) is `function`, reported under
// `name`. Throws ValueError for an empty name or function, for a built-in loss's name or alias, and
// for a name registered before.
void register_loss(const std::string& name, Loss::Function function);

// Keras's loss classes, with their defaults.
inline Loss CategoricalCrossentropy(const LossOptions& o = {}) { return Loss("categorical_crossentropy", o); }
inline Loss SparseCategoricalCrossentropy(const LossOptions& o = {}) { return Loss("sparse_categorical_crossentropy", o); }
inline Loss BinaryCrossentropy(const LossOptions& o = {}) { return Loss("binary_crossentropy", o); }
inline Loss MeanSquaredError() { return Loss("mean_squared_error"); }
inline Loss MeanAbsoluteError() { return Loss("mean_absolute_error"); }
inline Loss Huber(double delta = 1.0) { return Loss("huber", {.delta = delta}); }
inline Loss LogCosh() { return Loss("log_cosh"); }
inline Loss KLDivergence() { return Loss("kl_divergence"); }
inline Loss Poisson() { return Loss("poisson"); }
inline Loss Hinge() { return Loss("hinge"); }
inline Loss SquaredHinge() { return Loss("squared_hinge"); }
inline Loss CategoricalHinge() { return Loss("categorical_hinge"); }
inline Loss CosineSimilarity(int axis = -1) { return Loss("cosine_similarity", {.axis = axis}); }
inline Loss MeanAbsolutePercentageError() { return Loss("mean_absolute_percentage_error"); }
inline Loss MeanSquaredLogarithmicError() { return Loss("mean_squared_logarithmic_error"); }
// Options used: apply_class_balancing, alpha, gamma, from_logits, label_smoothing.
inline Loss BinaryFocalCrossentropy(const LossOptions& o = {}) { return Loss("binary_focal_crossentropy", o); }
// Options used: alpha, gamma, from_logits, label_smoothing.
inline Loss CategoricalFocalCrossentropy(const LossOptions& o = {}) { return Loss("categorical_focal_crossentropy", o); }

}  // namespace tower::losses
