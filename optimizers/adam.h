// Adam, Keras's defaults (AdamW, in adamw.h, is Adam with a decoupled weight decay).
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdamOptions {
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule with bias correction folded into the step size:
// m += (g - m)(1 - beta_1); v += (g² - v)(1 - beta_2);
// var -= lr sqrt(1 - beta_2^t) / (1 - beta_1^t) · m / (sqrt(v) + epsilon), v replaced by its running
// maximum with amsgrad (weight_decay, when set, first). Slots: "m", "v", "vhat" (amsgrad).
class Adam : public Optimizer {
 public:
  explicit Adam(double learning_rate = 0.001, const AdamOptions& options = {});
  explicit Adam(std::shared_ptr<const LearningRateSchedule> schedule, const AdamOptions& options = {});
  std::string name() const override { return "Adam"; }
  OptimizerPtr clone() const override { return std::make_shared<Adam>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  AdamOptions options_;
};

}  // namespace tower::optimizers
