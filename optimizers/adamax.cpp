// Adamax: the update through ops::apply_adamax.
#include "tower/optimizers/adamax.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower::optimizers {

namespace {
// Keras 3's argument checks, with the fix.
AdamaxOptions checked(const AdamaxOptions& o) {
  if (!(o.beta_1 >= 0 && o.beta_1 < 1)) raise<ValueError>("Adamax: beta_1 must be in [0, 1), got {}", o.beta_1);
  if (!(o.beta_2 >= 0 && o.beta_2 <= 1)) raise<ValueError>("Adamax: beta_2 must be in [0, 1], got {}", o.beta_2);
  return o;
}
}  // namespace

Adamax::Adamax(double learning_rate, const AdamaxOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(checked(options)) {}

Adamax::Adamax(std::shared_ptr<const LearningRateSchedule> schedule, const AdamaxOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(checked(options)) {}

Node* Adamax::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                          const SymbolicTensor& grad, const SymbolicTensor& learning_rate,
                          const SymbolicTensor& iteration) {
  auto m = slot(graph, variable, "momentum");  // Keras's order of the slots
  auto u = slot(graph, variable, "norm");
  return ops::apply_adamax(var, grad, learning_rate, iteration, m, u, options_.beta_1, options_.beta_2,
                           options_.epsilon, weight_decay_for(variable));
}

nlohmann::json Adamax::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = options_.beta_1;
  c["beta_2"] = options_.beta_2;
  c["epsilon"] = options_.epsilon;
  return c;
}

}  // namespace tower::optimizers
