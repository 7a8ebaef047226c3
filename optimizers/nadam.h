// Nadam (Adam with Nesterov momentum), Keras 3's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct NadamOptions {
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule with the momentum schedule u_t = beta_1 (1 - 0.5 * 0.96^t) and u_product = the
// product of u_1..u_t: m += (g - m)(1 - beta_1); v += (g² - v)(1 - beta_2);
// m̂ = u_{t+1} m / (1 - u_product u_{t+1}) + (1 - u_t) g / (1 - u_product); v̂ = v / (1 - beta_2^t);
// var -= lr m̂ / (sqrt(v̂) + epsilon). Slots: "momentum" (m), "velocity" (v). Keras's u_product
// variable is not kept: the kernels recompute it from the step number.
class Nadam : public Optimizer {
 public:
  explicit Nadam(double learning_rate = 0.001, const NadamOptions& options = {});
  explicit Nadam(std::shared_ptr<const LearningRateSchedule> schedule, const NadamOptions& options = {});
  std::string name() const override { return "Nadam"; }
  OptimizerPtr clone() const override { return std::make_shared<Nadam>(*this); }
  nlohmann::json get_config() const override;
  const NadamOptions& options() const { return options_; }

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  NadamOptions options_;
};

}  // namespace tower::optimizers
