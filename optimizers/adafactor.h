// Adafactor (factored second moments), Keras 3's defaults.
#pragma once

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct AdafactorOptions {
  double beta_2_decay = -0.8;
  double epsilon_1 = 1e-30;
  double epsilon_2 = 1e-3;
  double clip_threshold = 1.0;
  bool relative_step = true;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  std::optional<double> weight_decay;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule, composed of elementwise and reduce ops (no fused kernel: the row and column means
// and the RMS of the variable and the update are reductions). t the step, rho = min(lr, 1/sqrt(t)),
// alpha = max(epsilon_2, rms(var)) rho, beta = 1 - t^beta_2_decay, g2 = g² + epsilon_1.
// Rank >= 2: r = beta r + (1 - beta) mean(g2, -1); c = beta c + (1 - beta) mean(g2, -2);
// v = (r / mean(r, -1))[..., None] · c[..., None, :]. Rank < 2: v = beta v + (1 - beta) g2.
// u = g / sqrt(v); var -= alpha u / max(1, rms(u) / clip_threshold).
// Slots: "r" (var's shape without the last axis), "c" (without the second last), "velocity"
// (Keras's r and c of a rank < 2 variable are unused scalars; tower does not make them).
// relative_step changes nothing (Keras takes min(lr, 1/sqrt(t)) again either way); kept for configs.
class Adafactor : public Optimizer {
 public:
  explicit Adafactor(double learning_rate = 0.001, const AdafactorOptions& options = {});
  explicit Adafactor(std::shared_ptr<const LearningRateSchedule> schedule, const AdafactorOptions& options = {});
  std::string name() const override { return "Adafactor"; }
  OptimizerPtr clone() const override { return std::make_shared<Adafactor>(*this); }
  nlohmann::json get_config() const override;
  const AdafactorOptions& options() const { return options_; }

 protected:
  Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                    const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) override;

 private:
  AdafactorOptions options_;
};

}  // namespace tower::optimizers
