// Learning-rate schedules (keras.optimizers.schedules): the rate as a function of the step count.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace tower::optimizers {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The learning rate at `step` (the optimizer's iterations before the update).
  virtual double operator()(std::int64_t step) const = 0;
};

// initial_learning_rate * decay_rate ^ (step / decay_steps), the exponent floored when staircase.
class ExponentialDecay : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate, bool staircase = false);
  double operator()(std::int64_t step) const override;

 private:
  double initial_, rate_;
  std::int64_t decay_steps_;
  bool staircase_;
};

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
// values.back() after the last boundary. values has one entry more than boundaries.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<std::int64_t> boundaries, std::vector<double> values);
  double operator()(std::int64_t step) const override;

 private:
  std::vector<std::int64_t> boundaries_;
  std::vector<double> values_;
};

// Keras 3's CosineDecay: an optional linear warm-up from initial_learning_rate to warmup_target over
// warmup_steps, then initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)
// (with warmup_target as the initial rate and the step counted from the end of the warm-up).
class CosineDecay : public LearningRateSchedule {
 public:
  struct Options {
    double alpha = 0.0;
    std::optional<double> warmup_target;
    std::int64_t warmup_steps = 0;
  };
  CosineDecay(double initial_learning_rate, std::int64_t decay_steps, const Options& options);
  CosineDecay(double initial_learning_rate, std::int64_t decay_steps) : CosineDecay(initial_learning_rate, decay_steps, Options{}) {}
  double operator()(std::int64_t step) const override;

 private:
  double initial_;
  std::int64_t decay_steps_;
  Options options_;
};

}  // namespace tower::optimizers
