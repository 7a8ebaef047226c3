// Adadelta: the update through ops::apply_adadelta.
#include "tower/optimizers/adadelta.h"

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"

namespace tower::optimizers {

Adadelta::Adadelta(double learning_rate, const AdadeltaOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(options) {}

Adadelta::Adadelta(std::shared_ptr<const LearningRateSchedule> schedule, const AdadeltaOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(options) {}

Node* Adadelta::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                            const SymbolicTensor& grad, const SymbolicTensor& learning_rate, const SymbolicTensor&) {
  auto accumulated_grad = slot(graph, variable, "accumulated_grad");
  auto accumulated_delta = slot(graph, variable, "accumulated_delta_var");
  return ops::apply_adadelta(var, grad, learning_rate, accumulated_grad, accumulated_delta, options_.rho,
                             options_.epsilon);
}


nlohmann::json Adadelta::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["rho"] = options_.rho;
  c["epsilon"] = options_.epsilon;
  return c;
}
}  // namespace tower::optimizers
