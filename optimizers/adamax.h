// Adamax (Adam with the infinity norm), Keras 3's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdamaxOptions {
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule: m += (g - m)(1 - beta_1); u = max(beta_2 u, |g|);
// var -= lr m / ((1 - beta_1^t)(u + epsilon)). Slots: "momentum" (m), "norm" (u).
class Adamax : public Optimizer {
 public:
  explicit Adamax(double learning_rate = 0.001, const AdamaxOptions& options = {});
  explicit Adamax(std::shared_ptr<const LearningRateSchedule> schedule, const AdamaxOptions& options = {});
  std::string name() const override { return "Adamax"; }
  OptimizerPtr clone() const override { return std::make_shared<Adamax>(*this); }
  nlohmann::json get_config() const override;
  const AdamaxOptions& options() const { return options_; }

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  AdamaxOptions options_;
};

}  // namespace tower::optimizers
