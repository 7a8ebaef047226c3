// Adagrad, Keras's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdagradOptions {
  double initial_accumulator_value = 0.1;
  double epsilon = 1e-7;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// acc += g²; var -= lr g / sqrt(acc + epsilon). Slot: "accumulator" (starts at initial_accumulator_value).
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(double learning_rate = 0.001, const AdagradOptions& options = {});
  explicit Adagrad(std::shared_ptr<const LearningRateSchedule> schedule, const AdagradOptions& options = {});
  std::string name() const override { return "Adagrad"; }
  OptimizerPtr clone() const override { return std::make_shared<Adagrad>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  AdagradOptions options_;
};

}  // namespace tower::optimizers
