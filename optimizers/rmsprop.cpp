// RMSprop.
#include "optimizers/rmsprop.h"

#include "core/ops.h"

namespace tower::optimizers {

RMSprop::RMSprop(double learning_rate, const RMSpropOptions& options)
    : Optimizer(learning_rate, {options.clipnorm, options.clipvalue, options.global_clipnorm}), options_(options) {}

RMSprop::RMSprop(std::shared_ptr<const LearningRateSchedule> schedule, const RMSpropOptions& options)
    : Optimizer(std::move(schedule), {options.clipnorm, options.clipvalue, options.global_clipnorm}), options_(options) {}

Node* RMSprop::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                           const SymbolicTensor& grad, const SymbolicTensor& learning_rate, const SymbolicTensor&) {
  auto velocity = slot(graph, variable, "rms");
  SymbolicTensor momentum = options_.momentum > 0.0 ? slot(graph, variable, "momentum") : SymbolicTensor{};
  SymbolicTensor average_grad = options_.centered ? slot(graph, variable, "mg") : SymbolicTensor{};
  return ops::apply_rmsprop(var, grad, learning_rate, velocity, momentum, average_grad, options_.rho, options_.momentum,
                            options_.epsilon, options_.centered);
}

}  // namespace tower::optimizers
