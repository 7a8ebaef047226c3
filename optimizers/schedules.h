// Learning-rate schedules (keras.optimizers.schedules): the rate as a function of the step count.
// Formulas and argument checks are Keras 3's, evaluated in double precision on the host; tower also
// checks the rates given (initial, end, warm-up target, piecewise values) with check_learning_rate.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tower::optimizers {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The learning rate at `step` (the optimizer's iterations before the update).
  virtual double operator()(std::int64_t step) const = 0;
  // Keras's {"class_name": "ExponentialDecay", "config": {...}}.
  virtual nlohmann::json to_config() const = 0;
};

// Refuses a learning rate that is not a finite number >= 0 that float32 can hold (the updates compute in
// float32: 1e300 would become inf): ValueError naming `who` and `argument` ("Adam", "learning_rate").
void check_learning_rate(const std::string& who, const std::string& argument, double value);
// The test check_learning_rate makes, for a check on every step that formats its message only on failure.
bool is_valid_learning_rate(double value);

// A schedule from Keras's {"class_name", "config"} (tf.keras 2 or Keras 3 spelling); unknown classes throw.
std::shared_ptr<const LearningRateSchedule> schedule_from_config(const nlohmann::json& schedule);

// initial_learning_rate * decay_rate ^ (step / decay_steps), the exponent floored when staircase.
class ExponentialDecay : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate, bool staircase = false);
  double operator()(std::int64_t step) const override;
  nlohmann::json to_config() const override;

 private:
  double initial_, rate_;
  std::int64_t decay_steps_;
  bool staircase_;
};

// initial_learning_rate / (1 + decay_rate * step / decay_steps), the ratio floored when staircase.
class InverseTimeDecay : public LearningRateSchedule {
 public:
  InverseTimeDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate, bool staircase = false);
  double operator()(std::int64_t step) const override;
  nlohmann::json to_config() const override;

 private:
  double initial_, rate_;
  std::int64_t decay_steps_;
  bool staircase_;
};

// (initial - end) * (1 - step / decay_steps) ^ power + end, step capped at decay_steps; with cycle,
// decay_steps is instead multiplied by ceil(step / decay_steps) (1 at step 0) so the decay restarts.
class PolynomialDecay : public LearningRateSchedule {
 public:
  struct Options {
    double end_learning_rate = 0.0001;
    double power = 1.0;
    bool cycle = false;
  };
  PolynomialDecay(double initial_learning_rate, std::int64_t decay_steps, const Options& options);
  PolynomialDecay(double initial_learning_rate, std::int64_t decay_steps)
      : PolynomialDecay(initial_learning_rate, decay_steps, Options{}) {}
  double operator()(std::int64_t step) const override;
  nlohmann::json to_config() const override;

 private:
  double initial_;
  std::int64_t decay_steps_;
  Options options_;
};

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
// values.back() after the last boundary. values has one entry more than boundaries, which must not
// decrease (Keras does not check, and gives sums of values for decreasing ones).
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<std::int64_t> boundaries, std::vector<double> values);
  double operator()(std::int64_t step) const override;
  nlohmann::json to_config() const override;

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
    std::string name = "CosineDecay";  // Keras's argument; only informative here
    std::optional<double> warmup_target;
    std::int64_t warmup_steps = 0;
  };
  CosineDecay(double initial_learning_rate, std::int64_t decay_steps, const Options& options);
  CosineDecay(double initial_learning_rate, std::int64_t decay_steps)
      : CosineDecay(initial_learning_rate, decay_steps, Options{}) {}
  double operator()(std::int64_t step) const override;
  nlohmann::json to_config() const override;

 private:
  double initial_;
  std::int64_t decay_steps_;
  Options options_;
};

}  // namespace tower::optimizers
