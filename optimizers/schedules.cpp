// Learning-rate schedules: ExponentialDecay, InverseTimeDecay, PolynomialDecay, PiecewiseConstantDecay,
// CosineDecay.
#include "tower/optimizers/schedules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <nlohmann/json.hpp>

#include "tower/core/error.h"

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

bool is_valid_learning_rate(double value) {
  return value >= 0.0 && value <= std::numeric_limits<float>::max();  // false for NaN
}

void check_learning_rate(const std::string& who, const std::string& argument, double value) {
  if (!is_valid_learning_rate(value))
    raise<ValueError>("{}: {} must be a finite number >= 0 that float32 can hold (at most {}), got {}; the updates "
                      "compute in float32", who, argument, std::numeric_limits<float>::max(), value);
}

ExponentialDecay::ExponentialDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial_learning_rate), rate_(decay_rate), decay_steps_(decay_steps), staircase_(staircase) {
  check_decay_steps("ExponentialDecay", decay_steps);
  check_learning_rate("ExponentialDecay", "initial_learning_rate", initial_learning_rate);
}

double ExponentialDecay::operator()(std::int64_t step) const {
  return initial_ * std::pow(rate_, progress(step, decay_steps_, staircase_));
}

InverseTimeDecay::InverseTimeDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial_learning_rate), rate_(decay_rate), decay_steps_(decay_steps), staircase_(staircase) {
  check_decay_steps("InverseTimeDecay", decay_steps);
  check_learning_rate("InverseTimeDecay", "initial_learning_rate", initial_learning_rate);
}

double InverseTimeDecay::operator()(std::int64_t step) const {
  return initial_ / (1.0 + rate_ * progress(step, decay_steps_, staircase_));
}

PolynomialDecay::PolynomialDecay(double initial_learning_rate, std::int64_t decay_steps, const Options& options)
    : initial_(initial_learning_rate), decay_steps_(decay_steps), options_(options) {
  check_decay_steps("PolynomialDecay", decay_steps);
  check_learning_rate("PolynomialDecay", "initial_learning_rate", initial_learning_rate);
  check_learning_rate("PolynomialDecay", "end_learning_rate", options.end_learning_rate);
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
  for (std::size_t i = 0; i < values_.size(); ++i)
    check_learning_rate("PiecewiseConstantDecay", fmt::format("values[{}]", i), values_[i]);
}

double PiecewiseConstantDecay::operator()(std::int64_t step) const {
  // Keras: values[i] where boundaries[i-1] < step <= boundaries[i].
  auto i = std::lower_bound(boundaries_.begin(), boundaries_.end(), step) - boundaries_.begin();
  return values_[static_cast<std::size_t>(i)];
}

CosineDecay::CosineDecay(double initial_learning_rate, std::int64_t decay_steps, const Options& options)
    : initial_(initial_learning_rate), decay_steps_(decay_steps), options_(options) {
  check_decay_steps("CosineDecay", decay_steps);
  check_learning_rate("CosineDecay", "initial_learning_rate", initial_learning_rate);
  if (options.warmup_target) check_learning_rate("CosineDecay", "warmup_target", *options.warmup_target);
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


// ---- configs (Keras's get_config) -----------------------------------------------------------------

namespace {
nlohmann::json schedule_config(const char* class_name, nlohmann::json config) {
  config["name"] = class_name;
  return {{"class_name", class_name}, {"config", std::move(config)}};
}
}  // namespace

nlohmann::json ExponentialDecay::to_config() const {
  return schedule_config("ExponentialDecay", {{"initial_learning_rate", initial_}, {"decay_steps", decay_steps_},
                                              {"decay_rate", rate_}, {"staircase", staircase_}});
}

nlohmann::json InverseTimeDecay::to_config() const {
  return schedule_config("InverseTimeDecay", {{"initial_learning_rate", initial_}, {"decay_steps", decay_steps_},
                                              {"decay_rate", rate_}, {"staircase", staircase_}});
}

nlohmann::json PolynomialDecay::to_config() const {
  return schedule_config("PolynomialDecay",
                         {{"initial_learning_rate", initial_}, {"decay_steps", decay_steps_},
                          {"end_learning_rate", options_.end_learning_rate}, {"power", options_.power},
                          {"cycle", options_.cycle}});
}

nlohmann::json PiecewiseConstantDecay::to_config() const {
  return schedule_config("PiecewiseConstantDecay", {{"boundaries", boundaries_}, {"values", values_}});
}

nlohmann::json CosineDecay::to_config() const {
  nlohmann::json c = {{"initial_learning_rate", initial_}, {"decay_steps", decay_steps_}, {"alpha", options_.alpha},
                      {"warmup_target", nullptr}, {"warmup_steps", options_.warmup_steps}};
  if (options_.warmup_target) c["warmup_target"] = *options_.warmup_target;
  return schedule_config("CosineDecay", std::move(c));
}

std::shared_ptr<const LearningRateSchedule> schedule_from_config(const nlohmann::json& schedule) {
  const std::string class_name = schedule.value("class_name", "");
  const nlohmann::json& c = schedule.contains("config") ? schedule.at("config") : schedule;
  auto number = [&](const char* key, double fallback) {
    return c.contains(key) && c.at(key).is_number() ? c.at(key).get<double>() : fallback;
  };
  auto steps = [&]() { return static_cast<std::int64_t>(number("decay_steps", 0)); };
  auto staircase = [&]() { return c.value("staircase", false); };
  if (class_name == "ExponentialDecay")
    return std::make_shared<ExponentialDecay>(number("initial_learning_rate", 0), steps(), number("decay_rate", 0),
                                              staircase());
  if (class_name == "InverseTimeDecay")
    return std::make_shared<InverseTimeDecay>(number("initial_learning_rate", 0), steps(), number("decay_rate", 0),
                                              staircase());
  if (class_name == "PolynomialDecay")
    return std::make_shared<PolynomialDecay>(
        number("initial_learning_rate", 0), steps(),
        PolynomialDecay::Options{number("end_learning_rate", 0.0001), number("power", 1.0), c.value("cycle", false)});
  if (class_name == "PiecewiseConstantDecay")
    return std::make_shared<PiecewiseConstantDecay>(c.at("boundaries").get<std::vector<std::int64_t>>(),
                                                    c.at("values").get<std::vector<double>>());
  if (class_name == "CosineDecay") {
    CosineDecay::Options o;
    o.alpha = number("alpha", 0.0);
    if (c.contains("warmup_target") && c.at("warmup_target").is_number()) o.warmup_target = c.at("warmup_target").get<double>();
    o.warmup_steps = static_cast<std::int64_t>(number("warmup_steps", 0));
    return std::make_shared<CosineDecay>(number("initial_learning_rate", 0), steps(), o);
  }
  raise<ValueError>("learning-rate schedule \"{}\" is not supported; tower has ExponentialDecay, InverseTimeDecay, "
                    "PolynomialDecay, PiecewiseConstantDecay and CosineDecay",
                    class_name);
}
}  // namespace tower::optimizers
