// AdamW: Adam's update with its weight_decay set.
#include "tower/optimizers/adamw.h"

#include "tower/core/error.h"

namespace tower::optimizers {

namespace {

AdamOptions adam_options(const AdamWOptions& o) {
  if (!(o.weight_decay >= 0.0)) raise<ValueError>("AdamW: weight_decay must be >= 0, got {}", o.weight_decay);
  return {o.beta_1, o.beta_2, o.epsilon, o.amsgrad, o.clipnorm, o.clipvalue, o.global_clipnorm};
}

}  // namespace

AdamW::AdamW(double learning_rate, const AdamWOptions& options) : Adam(learning_rate, adam_options(options)) {
  weight_decay_ = options.weight_decay;
}

AdamW::AdamW(std::shared_ptr<const LearningRateSchedule> schedule, const AdamWOptions& options)
    : Adam(std::move(schedule), adam_options(options)) {
  weight_decay_ = options.weight_decay;
}

}  // namespace tower::optimizers
