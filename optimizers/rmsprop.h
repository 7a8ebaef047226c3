// RMSprop, Keras's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct RMSpropOptions {
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule: v = rho v + (1 - rho) g²; centered subtracts the squared moving mean of g;
// the step lr g / sqrt(v + epsilon) goes through momentum when set. Slots: "velocity", "momentum"
// (momentum > 0), "average_gradient" (centered).
class RMSprop : public Optimizer {
 public:
  explicit RMSprop(double learning_rate = 0.001, const RMSpropOptions& options = {});
  explicit RMSprop(std::shared_ptr<const LearningRateSchedule> schedule, const RMSpropOptions& options = {});
  std::string name() const override { return "RMSprop"; }
  OptimizerPtr clone() const override { return std::make_shared<RMSprop>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  RMSpropOptions options_;
};

}  // namespace tower::optimizers
