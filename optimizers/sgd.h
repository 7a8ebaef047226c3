// SGD: gradient descent with optional (Nesterov) momentum, Keras's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct SGDOptions {
  double momentum = 0.0;
  bool nesterov = false;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// momentum 0: var -= lr * g. Else m = momentum * m - lr * g; var += m, or with nesterov
// var += momentum * m - lr * g. Slot: "m" (only with momentum, as tf.keras 2.11+ names it).
class SGD : public Optimizer {
 public:
  explicit SGD(double learning_rate = 0.01, const SGDOptions& options = {});
  explicit SGD(std::shared_ptr<const LearningRateSchedule> schedule, const SGDOptions& options = {});
  std::string name() const override { return "SGD"; }
  OptimizerPtr clone() const override { return std::make_shared<SGD>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  SGDOptions options_;
};

}  // namespace tower::optimizers
