// AdamW: Adam's update with the base weight_decay set (0.004 by default, as Keras 3).
#include "tower/optimizers/adamw.h"

#include "tower/core/error.h"

namespace tower::optimizers {

namespace {

AdamOptions adam_options(const AdamWOptions& o) {
  if (!(o.weight_decay >= 0.0)) raise<ValueError>("AdamW: weight_decay must be >= 0, got {}", o.weight_decay);
  return {o.beta_1,
          o.beta_2,
          o.epsilon,
          o.amsgrad,
          o.clipnorm,
          o.clipvalue,
          o.global_clipnorm,
          o.weight_decay,
          o.use_ema,
          o.ema_momentum,
          o.ema_overwrite_frequency,
          o.gradient_accumulation_steps};
}

}  // namespace

AdamW::AdamW(double learning_rate, const AdamWOptions& options) : Adam(learning_rate, adam_options(options)) {}

AdamW::AdamW(std::shared_ptr<const LearningRateSchedule> schedule, const AdamWOptions& options)
    : Adam(std::move(schedule), adam_options(options)) {}

}  // namespace tower::optimizers
