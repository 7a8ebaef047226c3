// Learning-rate schedules.
#include "optimizers/schedules.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace tower::optimizers {

ExponentialDecay::ExponentialDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial_learning_rate), rate_(decay_rate), decay_steps_(decay_steps), staircase_(staircase) {
  if (decay_steps <= 0) raise<ValueError>("ExponentialDecay: decay_steps must be positive, got {}", decay_steps);
}

double ExponentialDecay::operator()(std::int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(decay_steps_);
  if (staircase_) p = std::floor(p);
  return initial_ * std::pow(rate_, p);
}

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<std::int64_t> boundaries, std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  if (values_.size() != boundaries_.size() + 1)
    raise<ValueError>("PiecewiseConstantDecay: needs one value more than boundaries, got {} boundaries and {} values",
                      boundaries_.size(), values_.size());
}

double PiecewiseConstantDecay::operator()(std::int64_t step) const {
  for (std::size_t i = 0; i < boundaries_.size(); ++i)
    if (step <= boundaries_[i]) return values_[i];
  return values_.back();
}

CosineDecay::CosineDecay(double initial_learning_rate, std::int64_t decay_steps, const Options& options)
    : initial_(initial_learning_rate), decay_steps_(decay_steps), options_(options) {
  if (decay_steps <= 0) raise<ValueError>("CosineDecay: decay_steps must be positive, got {}", decay_steps);
}

double CosineDecay::operator()(std::int64_t step) const {
  double start = initial_;
  if (options_.warmup_target) {
    if (step < options_.warmup_steps)
      return initial_ + (*options_.warmup_target - initial_) * static_cast<double>(step) /
                            static_cast<double>(options_.warmup_steps);
    start = *options_.warmup_target;
    step -= options_.warmup_steps;
  }
  double fraction = static_cast<double>(std::min(step, decay_steps_)) / static_cast<double>(decay_steps_);
  double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * fraction));
  return start * ((1.0 - options_.alpha) * cosine + options_.alpha);
}

}  // namespace tower::optimizers
