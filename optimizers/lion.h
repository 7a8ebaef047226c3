// Lion (the sign of an interpolated momentum), Keras 3's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct LionOptions {
  double beta_1 = 0.9;
  double beta_2 = 0.99;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule: var -= lr sign(beta_1 m + (1 - beta_1) g); m = beta_2 m + (1 - beta_2) g.
// Slot: "momentum".
class Lion : public Optimizer {
 public:
  explicit Lion(double learning_rate = 0.001, const LionOptions& options = {});
  explicit Lion(std::shared_ptr<const LearningRateSchedule> schedule, const LionOptions& options = {});
  std::string name() const override { return "Lion"; }
  OptimizerPtr clone() const override { return std::make_shared<Lion>(*this); }
  nlohmann::json get_config() const override;
  const LionOptions& options() const { return options_; }

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  LionOptions options_;
};

}  // namespace tower::optimizers
