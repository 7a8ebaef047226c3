// SGD: the update through ops::apply_sgd.
#include "tower/optimizers/sgd.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower::optimizers {

namespace {
SGDOptions checked(const SGDOptions& o) {
  if (o.momentum < 0.0 || o.momentum > 1.0) raise<ValueError>("SGD: momentum must be in [0, 1], got {}", o.momentum);
  return o;
}
}  // namespace

SGD::SGD(double learning_rate, const SGDOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(checked(options)) {}

SGD::SGD(std::shared_ptr<const LearningRateSchedule> schedule, const SGDOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(checked(options)) {}

Node* SGD::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                       const SymbolicTensor& learning_rate, const SymbolicTensor&) {
  SymbolicTensor momentum = options_.momentum != 0.0 ? slot(graph, variable, "m") : SymbolicTensor{};
  return ops::apply_sgd(var, grad, learning_rate, momentum, options_.momentum, options_.nesterov, weight_decay_for(variable));
}


nlohmann::json SGD::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["momentum"] = options_.momentum;
  c["nesterov"] = options_.nesterov;
  return c;
}
}  // namespace tower::optimizers
