// Adagrad: the update through ops::apply_adagrad.
#include "tower/optimizers/adagrad.h"

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"

namespace tower::optimizers {

Adagrad::Adagrad(double learning_rate, const AdagradOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(options) {}

Adagrad::Adagrad(std::shared_ptr<const LearningRateSchedule> schedule, const AdagradOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(options) {}

Node* Adagrad::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                           const SymbolicTensor& grad, const SymbolicTensor& learning_rate, const SymbolicTensor&) {
  auto accumulator = slot(graph, variable, "accumulator", options_.initial_accumulator_value);
  return ops::apply_adagrad(var, grad, learning_rate, accumulator, options_.epsilon, weight_decay_for(variable));
}


nlohmann::json Adagrad::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["initial_accumulator_value"] = options_.initial_accumulator_value;
  c["epsilon"] = options_.epsilon;
  return c;
}
}  // namespace tower::optimizers
