// Adadelta, Keras's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdadeltaOptions {
  double rho = 0.95;
  double epsilon = 1e-7;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule: E[g²] = rho E[g²] + (1 - rho) g²; delta = -sqrt(E[dx²] + eps) / sqrt(E[g²] + eps) g;
// E[dx²] = rho E[dx²] + (1 - rho) delta²; var += lr delta. Slots: "accumulated_grad", "accumulated_delta_var".
class Adadelta : public Optimizer {
 public:
  explicit Adadelta(double learning_rate = 0.001, const AdadeltaOptions& options = {});
  explicit Adadelta(std::shared_ptr<const LearningRateSchedule> schedule, const AdadeltaOptions& options = {});
  std::string name() const override { return "Adadelta"; }
  OptimizerPtr clone() const override { return std::make_shared<Adadelta>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  AdadeltaOptions options_;
};

}  // namespace tower::optimizers
