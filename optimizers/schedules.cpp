// Learning-rate schedules: ExponentialDecay, InverseTimeDecay, PolynomialDecay, PiecewiseConstantDecay,
// CosineDecay.
#include "optimizers/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace tower::optimizers {

namespace {

void check_decay_steps(const char* schedule, std::int64_t decay_steps) {
  if (decay_steps <= 0) raise<ValueError>("{}: decay_steps must be > 0, got {}", schedule, decay_steps);
}

// step / decay_steps, floored when staircase (ExponentialDecay's and InverseTimeDecay's p).
double progress(std::int64_t step, std::int64_t decay_steps, bool staircase) {
  double p = static_cast<double>(step) / static_cast<double>(decay_steps);
  return staircase ? std::floor(p) : p;
}

}  // namespace

ExponentialDecay::ExponentialDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial_learning_rate), rate_(decay_rate), decay_steps_(decay_steps), staircase_(staircase) {
  check_decay_steps("ExponentialDecay", decay_steps);
}

double ExponentialDecay::operator()(std::int64_t step) const {
  return initial_ * std::pow(rate_, progress(step, decay_steps_, staircase_));
}

InverseTimeDecay::InverseTimeDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial_learning_rate), rate_(decay_rate), decay_steps_(decay_steps), staircase_(staircase) {
  check_decay_steps("InverseTimeDecay", decay_steps);
}

double InverseTimeDecay::operator()(std::int64_t step) const {
  return initial_ / (1.0 + rate_ * progress(step, decay_steps_, staircase_));
}

PolynomialDecay::PolynomialDecay(double initial_learning_rate, std::int64_t decay_steps, const Options& options)
    : initial_(initial_learning_rate), decay_steps_(decay_steps), options_(options) {
  check_decay_steps("PolynomialDecay", decay_steps);
}

double PolynomialDecay::operator()(std::int64_t step) const {
  double s = static_cast<double>(step);
  double steps = static_cast<double>(decay_steps_);
  if (options_.cycle)
    steps *= step == 0 ? 1.0 : std::ceil(s / steps);
  else
    s = std::min(s, steps);
  const double end = options_.end_learning_rate;
  return (initial_ - end) * std::pow(1.0 - s / steps, options_.power) + end;
}

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<std::int64_t> boundaries, std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  if (values_.size() != boundaries_.size() + 1)
    raise<ValueError>("PiecewiseConstantDecay: needs one value more than boundaries, got {} boundaries and {} values",
                      boundaries_.size(), values_.size());
  if (!std::is_sorted(boundaries_.begin(), boundaries_.end()))
    raise<ValueError>("PiecewiseConstantDecay: boundaries must be in increasing order");
}

double PiecewiseConstantDecay::operator()(std::int64_t step) const {
  // Keras: values[i] where boundaries[i-1] < step <= boundaries[i].
  auto i = std::lower_bound(boundaries_.begin(), boundaries_.end(), step) - boundaries_.begin();
  return values_[static_cast<std::size_t>(i)];
}

CosineDecay::CosineDecay(double initial_learning_rate, std::int64_t decay_steps, const Options& options)
    : initial_(initial_learning_rate), decay_steps_(decay_steps), options_(options) {
  check_decay_steps("CosineDecay", decay_steps);
  if (options.warmup_steps < 0)
    raise<ValueError>("CosineDecay: warmup_steps must be >= 0, got {}", options.warmup_steps);
}

double CosineDecay::operator()(std::int64_t step) const {
  double start = initial_;
  if (options_.warmup_target) {  // Keras ignores warmup_steps without a warmup_target
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
