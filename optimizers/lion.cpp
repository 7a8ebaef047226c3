// Lion: the update through ops::apply_lion.
#include "tower/optimizers/lion.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower::optimizers {

namespace {
// Keras 3's argument checks, with the fix.
LionOptions checked(const LionOptions& o) {
  if (!(o.beta_1 > 0 && o.beta_1 <= 1))
    raise<ValueError>("Lion: beta_1 must be in (0, 1], got {}; with 0 Lion degenerates to SignSGD (as Keras 3 says)",
                      o.beta_1);
  return o;
}
}  // namespace

Lion::Lion(double learning_rate, const LionOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(checked(options)) {}

Lion::Lion(std::shared_ptr<const LearningRateSchedule> schedule, const LionOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(checked(options)) {}

Node* Lion::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                        const SymbolicTensor& grad, const SymbolicTensor& learning_rate, const SymbolicTensor&) {
  return ops::apply_lion(var, grad, learning_rate, slot(graph, variable, "momentum"), options_.beta_1,
                         options_.beta_2, weight_decay_for(variable));
}

nlohmann::json Lion::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = options_.beta_1;
  c["beta_2"] = options_.beta_2;
  return c;
}

}  // namespace tower::optimizers
