// Adam and AdamW.
#include "optimizers/adam.h"

#include "core/error.h"
#include "core/ops.h"

namespace tower::optimizers {

namespace {
AdamOptions adam_options(const AdamWOptions& o) {
  return {o.beta_1, o.beta_2, o.epsilon, o.amsgrad, o.clipnorm, o.clipvalue, o.global_clipnorm};
}
ClipOptions clip_of(const AdamOptions& o) { return {o.clipnorm, o.clipvalue, o.global_clipnorm}; }
}  // namespace

Adam::Adam(double learning_rate, const AdamOptions& options) : Optimizer(learning_rate, clip_of(options)), options_(options) {}

Adam::Adam(std::shared_ptr<const LearningRateSchedule> schedule, const AdamOptions& options)
    : Optimizer(std::move(schedule), clip_of(options)), options_(options) {}

Node* Adam::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                        const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) {
  return adam_step(graph, variable, var, grad, learning_rate, iteration, 0.0);
}

Node* Adam::adam_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                      const SymbolicTensor& learning_rate, const SymbolicTensor& iteration, double weight_decay) {
  auto m = slot(graph, variable, "m");
  auto v = slot(graph, variable, "v");
  SymbolicTensor v_hat = options_.amsgrad ? slot(graph, variable, "vhat") : SymbolicTensor{};
  return ops::apply_adam(var, grad, learning_rate, iteration, m, v, v_hat, options_.beta_1, options_.beta_2,
                         options_.epsilon, options_.amsgrad, weight_decay);
}

AdamW::AdamW(double learning_rate, const AdamWOptions& options)
    : Adam(learning_rate, adam_options(options)), weight_decay_(options.weight_decay) {
  if (weight_decay_ < 0) raise<ValueError>("AdamW: weight_decay must be >= 0, got {}", weight_decay_);
}

AdamW::AdamW(std::shared_ptr<const LearningRateSchedule> schedule, const AdamWOptions& options)
    : Adam(std::move(schedule), adam_options(options)), weight_decay_(options.weight_decay) {
  if (weight_decay_ < 0) raise<ValueError>("AdamW: weight_decay must be >= 0, got {}", weight_decay_);
}

Node* AdamW::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var, const SymbolicTensor& grad,
                         const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) {
  return adam_step(graph, variable, var, grad, learning_rate, iteration, weight_decay_);
}

}  // namespace tower::optimizers
