// Ftrl (Follow The Regularized Leader), Keras 3's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct FtrlOptions {
  double learning_rate_power = -0.5;
  double initial_accumulator_value = 0.1;
  double l1_regularization_strength = 0.0;
  double l2_regularization_strength = 0.0;
  double l2_shrinkage_regularization_strength = 0.0;
  double beta = 0.0;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule (p = learning_rate_power): l2 += beta / (2 lr); g' = g + 2 l2_shrinkage var;
// n = accumulator + g²; linear += g' - (n^-p - accumulator^-p) / lr · var;
// var = (clip(linear, -l1, l1) - linear) / (n^-p / lr + 2 l2); accumulator = n.
// Slots: "accumulator" (initial_accumulator_value), "linear".
class Ftrl : public Optimizer {
 public:
  explicit Ftrl(double learning_rate = 0.001, const FtrlOptions& options = {});
  explicit Ftrl(std::shared_ptr<const LearningRateSchedule> schedule, const FtrlOptions& options = {});
  std::string name() const override { return "Ftrl"; }
  OptimizerPtr clone() const override { return std::make_shared<Ftrl>(*this); }
  nlohmann::json get_config() const override;
  const FtrlOptions& options() const { return options_; }

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  FtrlOptions options_;
};

}  // namespace tower::optimizers
