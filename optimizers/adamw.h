// AdamW: Adam with decoupled weight decay, Keras's defaults.
#pragma once

#include "tower/optimizers/adam.h"

namespace tower::optimizers {

struct AdamWOptions {
  double weight_decay = 0.004;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  std::optional<double> clipnorm, clipvalue, global_clipnorm;
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency, gradient_accumulation_steps;
};

// Keras 3's rule: var -= lr · weight_decay · var (with the same lr), then Adam's update.
// Slots: Adam's, named "AdamW/m/...".
class AdamW : public Adam {
 public:
  explicit AdamW(double learning_rate = 0.001, const AdamWOptions& options = {});
  explicit AdamW(std::shared_ptr<const LearningRateSchedule> schedule, const AdamWOptions& options = {});
  std::string name() const override { return "AdamW"; }
  OptimizerPtr clone() const override { return std::make_shared<AdamW>(*this); }
};

}  // namespace tower::optimizers
