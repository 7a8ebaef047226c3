// Optimizer base: gradient clipping, slots, learning rate and step count, and get() by Keras name.
#include "optimizers/optimizer.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/ops.h"
#include "optimizers/optimizers.h"

namespace tower::optimizers {

Optimizer::Optimizer(double learning_rate, const ClipOptions& clip) : learning_rate_(learning_rate), clip_(clip) {
  if (!(learning_rate >= 0.0)) raise<ValueError>("optimizer: learning_rate must be >= 0, got {}", learning_rate);
  if (clip.clipnorm && *clip.clipnorm <= 0) raise<ValueError>("optimizer: clipnorm must be > 0, got {}", *clip.clipnorm);
  if (clip.clipvalue && *clip.clipvalue <= 0) raise<ValueError>("optimizer: clipvalue must be > 0, got {}", *clip.clipvalue);
  if (clip.global_clipnorm && *clip.global_clipnorm <= 0)
    raise<ValueError>("optimizer: global_clipnorm must be > 0, got {}", *clip.global_clipnorm);
  if (clip.clipnorm && clip.global_clipnorm)
    raise<ValueError>("optimizer: set either clipnorm or global_clipnorm, not both (as Keras)");
}

Optimizer::Optimizer(std::shared_ptr<const LearningRateSchedule> schedule, const ClipOptions& clip)
    : Optimizer(0.0, clip) {
  if (!schedule) raise<ValueError>("optimizer: the learning-rate schedule is null");
  schedule_ = std::move(schedule);
}

Optimizer::~Optimizer() = default;

double Optimizer::current_learning_rate() const { return schedule_ ? (*schedule_)(iterations_) : learning_rate_; }

void Optimizer::set_learning_rate(double value) {
  if (!(value >= 0.0)) raise<ValueError>("{}: learning_rate must be >= 0, got {}", name(), value);
  learning_rate_ = value;
  schedule_.reset();
}

std::vector<VariablePtr> Optimizer::variables() const { return slot_order_; }

SymbolicTensor Optimizer::slot(Graph& graph, const VariablePtr& variable, const std::string& slot_name, double initial) {
  auto key = std::make_pair(variable.get(), slot_name);
  auto it = slots_.find(key);
  if (it == slots_.end()) {
    std::string base = variable->name();
    if (base.size() > 2 && base.ends_with(":0")) base.resize(base.size() - 2);
    // tf.keras 2's slot names: "Adam/dense/kernel/m:0".
    auto value = Tensor::full(variable->shape(), initial, variable->dtype(), variable->device());
    auto created = make_variable(name() + "/" + base + "/" + slot_name + ":0", value, false);
    it = slots_.emplace(key, std::make_pair(variable, created)).first;
    slot_order_.push_back(created);
  }
  return graph.variable(it->second.second);
}

namespace {

// Keras's clip_by_norm: g * clip / max(||g||, clip).
SymbolicTensor clip_by_norm(const SymbolicTensor& g, double clip) {
  auto norm = ops::sqrt(ops::reduce_sum(ops::square(g)));
  auto limit = g.graph().constant(Tensor::scalar(clip, g.dtype()));
  return ops::divide(ops::scale(g, clip), ops::maximum(norm, limit));
}

}  // namespace

std::vector<Node*> Optimizer::apply_gradients(Graph& graph, const std::vector<SymbolicTensor>& grads,
                                              const std::vector<VariablePtr>& variables,
                                              const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) {
  if (grads.size() != variables.size())
    raise<ValueError>("{}: apply_gradients got {} gradients for {} variables", name(), grads.size(), variables.size());
  std::vector<SymbolicTensor> clipped = grads;
  if (clip_.global_clipnorm) {  // scale = clip / max(global norm, clip), the same for every gradient
    SymbolicTensor total;
    for (const auto& g : clipped)
      if (g.defined()) {
        auto s = ops::reduce_sum(ops::square(g));
        total = total.defined() ? ops::add(total, s) : s;
      }
    if (total.defined()) {
      auto limit = graph.constant(Tensor::scalar(*clip_.global_clipnorm, total.dtype()));
      auto scale = ops::divide(limit, ops::maximum(ops::sqrt(total), limit));
      for (auto& g : clipped)
        if (g.defined()) g = ops::multiply(g, scale);
    }
  }
  std::vector<Node*> updates;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    SymbolicTensor g = clipped[i];
    if (!g.defined()) continue;
    if (g.shape() != variables[i]->shape())
      raise<ShapeError>("{}: gradient of \"{}\" has shape {}, the variable {}", name(), variables[i]->name(),
                        g.shape().to_string(), variables[i]->shape().to_string());
    if (clip_.clipnorm) g = clip_by_norm(g, *clip_.clipnorm);
    if (clip_.clipvalue) {
      auto hi = graph.constant(Tensor::scalar(*clip_.clipvalue, g.dtype()));
      auto lo = graph.constant(Tensor::scalar(-*clip_.clipvalue, g.dtype()));
      g = ops::maximum(ops::minimum(g, hi), lo);
    }
    auto var = graph.variable(variables[i]);
    updates.push_back(update_step(graph, variables[i], var, g, learning_rate, iteration));
  }
  return updates;
}

OptimizerPtr get(const std::string& identifier) {
  std::string key;
  for (char c : identifier) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "sgd") return std::make_shared<SGD>();
  if (key == "rmsprop") return std::make_shared<RMSprop>();
  if (key == "adam") return std::make_shared<Adam>();
  if (key == "adamw") return std::make_shared<AdamW>();
  if (key == "adagrad") return std::make_shared<Adagrad>();
  if (key == "adadelta") return std::make_shared<Adadelta>();
  raise<ValueError>("unknown optimizer \"{}\"; known: sgd, rmsprop, adam, adamw, adagrad, adadelta", identifier);
}

}  // namespace tower::optimizers
