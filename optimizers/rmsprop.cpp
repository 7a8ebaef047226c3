// RMSprop: the update through ops::apply_rmsprop.
#include "tower/optimizers/rmsprop.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower::optimizers {

namespace {
RMSpropOptions checked(const RMSpropOptions& o) {
  if (o.momentum < 0.0) raise<ValueError>("RMSprop: momentum must be >= 0, got {}", o.momentum);
  return o;
}
}  // namespace

RMSprop::RMSprop(double learning_rate, const RMSpropOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(checked(options)) {}

RMSprop::RMSprop(std::shared_ptr<const LearningRateSchedule> schedule, const RMSpropOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(checked(options)) {}

Node* RMSprop::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                           const SymbolicTensor& grad, const SymbolicTensor& learning_rate, const SymbolicTensor&) {
  auto velocity = slot(graph, variable, "velocity");
  SymbolicTensor momentum = options_.momentum > 0.0 ? slot(graph, variable, "momentum") : SymbolicTensor{};
  SymbolicTensor average_grad = options_.centered ? slot(graph, variable, "average_gradient") : SymbolicTensor{};
  return ops::apply_rmsprop(var, grad, learning_rate, velocity, momentum, average_grad, options_.rho, options_.momentum,
                            options_.epsilon, options_.centered, weight_decay_for(variable));
}


nlohmann::json RMSprop::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["rho"] = options_.rho;
  c["momentum"] = options_.momentum;
  c["epsilon"] = options_.epsilon;
  c["centered"] = options_.centered;
  return c;
}
}  // namespace tower::optimizers
