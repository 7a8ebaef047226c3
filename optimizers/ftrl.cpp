// Ftrl: the update through ops::apply_ftrl.
#include "tower/optimizers/ftrl.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower::optimizers {

namespace {
// Keras 3's argument checks, with the fix.
FtrlOptions checked(const FtrlOptions& o) {
  const auto at_least_0 = [](const char* name, double v) {
    if (!(v >= 0.0)) raise<ValueError>("Ftrl: {} must be >= 0, got {}", name, v);
  };
  at_least_0("initial_accumulator_value", o.initial_accumulator_value);
  at_least_0("l1_regularization_strength", o.l1_regularization_strength);
  at_least_0("l2_regularization_strength", o.l2_regularization_strength);
  at_least_0("l2_shrinkage_regularization_strength", o.l2_shrinkage_regularization_strength);
  if (!(o.learning_rate_power <= 0.0))
    raise<ValueError>("Ftrl: learning_rate_power must be <= 0, got {} (Keras's default is -0.5)", o.learning_rate_power);
  return o;
}
}  // namespace

Ftrl::Ftrl(double learning_rate, const FtrlOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(checked(options)) {}

Ftrl::Ftrl(std::shared_ptr<const LearningRateSchedule> schedule, const FtrlOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(checked(options)) {}

Node* Ftrl::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                        const SymbolicTensor& grad, const SymbolicTensor& learning_rate, const SymbolicTensor&) {
  auto accumulator = slot(graph, variable, "accumulator", options_.initial_accumulator_value);
  auto linear = slot(graph, variable, "linear");
  return ops::apply_ftrl(var, grad, learning_rate, accumulator, linear,
                         {options_.learning_rate_power, options_.l1_regularization_strength,
                          options_.l2_regularization_strength, options_.l2_shrinkage_regularization_strength,
                          options_.beta},
                         weight_decay_for(variable));
}

nlohmann::json Ftrl::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["learning_rate_power"] = options_.learning_rate_power;
  c["initial_accumulator_value"] = options_.initial_accumulator_value;
  c["l1_regularization_strength"] = options_.l1_regularization_strength;
  c["l2_regularization_strength"] = options_.l2_regularization_strength;
  c["l2_shrinkage_regularization_strength"] = options_.l2_shrinkage_regularization_strength;
  c["beta"] = options_.beta;
  return c;
}

}  // namespace tower::optimizers
