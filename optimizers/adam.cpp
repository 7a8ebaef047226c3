// Adam: the update through ops::apply_adam (which also applies AdamW's weight decay).
#include "tower/optimizers/adam.h"

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"

namespace tower::optimizers {

Adam::Adam(double learning_rate, const AdamOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(options) {}

Adam::Adam(std::shared_ptr<const LearningRateSchedule> schedule, const AdamOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(options) {}

Node* Adam::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                        const SymbolicTensor& grad, const SymbolicTensor& learning_rate,
                        const SymbolicTensor& iteration) {
  auto m = slot(graph, variable, "m");
  auto v = slot(graph, variable, "v");
  SymbolicTensor v_hat = options_.amsgrad ? slot(graph, variable, "vhat") : SymbolicTensor{};
  return ops::apply_adam(var, grad, learning_rate, iteration, m, v, v_hat, options_.beta_1, options_.beta_2,
                         options_.epsilon, options_.amsgrad, weight_decay_for(variable));
}


nlohmann::json Adam::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = options_.beta_1;
  c["beta_2"] = options_.beta_2;
  c["epsilon"] = options_.epsilon;
  c["amsgrad"] = options_.amsgrad;
  return c;
}
}  // namespace tower::optimizers
