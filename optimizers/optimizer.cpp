// Optimizer base: gradient clipping, slots, learning rate and step count, and get() by Keras name.
#include "optimizers/optimizer.h"

#include <cctype>
#include <map>

#include "core/error.h"
#include "core/ops.h"
#include "optimizers/optimizers.h"

namespace tower::optimizers {

namespace {

// Keras 3 accepts at most one clipping argument; tower also refuses non-positive limits (Keras silently
// ignores them), since they are surely a mistake.
void check_clip(const ClipOptions& clip) {
  const std::pair<const char*, const std::optional<double>*> fields[] = {
      {"clipnorm", &clip.clipnorm}, {"clipvalue", &clip.clipvalue}, {"global_clipnorm", &clip.global_clipnorm}};
  int set = 0;
  for (const auto& [field, value] : fields)
    if (*value) {
      ++set;
      if (!(**value > 0))
        raise<ValueError>("optimizer: {} must be > 0, got {}; leave it unset for no clipping", field, **value);
    }
  if (set > 1)
    raise<ValueError>("optimizer: only one of clipnorm, clipvalue and global_clipnorm can be set (as in Keras 3)");
}

SymbolicTensor scalar_like(Graph& graph, double value, const SymbolicTensor& like) {
  return graph.constant(Tensor::scalar(value, like.dtype()));
}

SymbolicTensor sum_of_squares(const SymbolicTensor& g) { return ops::reduce_sum(ops::square(g)); }

// Keras's clip_by_norm: g * clip / max(||g||, clip).
SymbolicTensor clip_by_norm(Graph& graph, const SymbolicTensor& g, double clip) {
  auto norm = ops::sqrt(sum_of_squares(g));
  return ops::divide(ops::scale(g, clip), ops::maximum(norm, scalar_like(graph, clip, norm)));
}

// Keras's clip_by_global_norm: every gradient times clip / max(global norm, clip).
void clip_by_global_norm(Graph& graph, std::vector<SymbolicTensor>& grads, double clip) {
  SymbolicTensor total;
  for (const auto& g : grads)
    if (g.defined()) total = total.defined() ? ops::add(total, sum_of_squares(g)) : sum_of_squares(g);
  if (!total.defined()) return;
  auto limit = scalar_like(graph, clip, total);
  auto scale = ops::divide(limit, ops::maximum(ops::sqrt(total), limit));
  for (auto& g : grads)
    if (g.defined()) g = ops::multiply(g, scale);
}

// Keras 3's _clip_gradients (only one limit is ever set).
std::vector<SymbolicTensor> clip_gradients(Graph& graph, std::vector<SymbolicTensor> grads, const ClipOptions& clip) {
  if (clip.global_clipnorm) clip_by_global_norm(graph, grads, *clip.global_clipnorm);
  for (auto& g : grads) {
    if (!g.defined()) continue;
    if (clip.clipnorm) g = clip_by_norm(graph, g, *clip.clipnorm);
    if (clip.clipvalue)
      g = ops::maximum(ops::minimum(g, scalar_like(graph, *clip.clipvalue, g)),
                       scalar_like(graph, -*clip.clipvalue, g));
  }
  return grads;
}

}  // namespace

Optimizer::Optimizer(double learning_rate, const ClipOptions& clip) : learning_rate_(learning_rate), clip_(clip) {
  if (!(learning_rate >= 0.0)) raise<ValueError>("optimizer: learning_rate must be >= 0, got {}", learning_rate);
  check_clip(clip);
}

Optimizer::Optimizer(std::shared_ptr<const LearningRateSchedule> schedule, const ClipOptions& clip)
    : Optimizer(0.0, clip) {
  if (!schedule) raise<ValueError>("optimizer: the learning-rate schedule is null; pass a schedule or a float");
  schedule_ = std::move(schedule);
}

Optimizer::Optimizer(const Optimizer& other) { *this = other; }

Optimizer& Optimizer::operator=(const Optimizer& other) {
  if (this == &other) return *this;
  learning_rate_ = other.learning_rate_;
  schedule_ = other.schedule_;  // schedules are immutable: sharing is safe
  clip_ = other.clip_;
  iterations_ = other.iterations_;
  slots_.clear();
  slot_order_.clear();
  std::map<const Variable*, VariablePtr> copies;  // other's slot -> its copy
  for (const auto& slot : other.slot_order_) {
    auto copy = make_variable(slot->name(), slot->value().clone(), slot->trainable());
    copies.emplace(slot.get(), copy);
    slot_order_.push_back(copy);
  }
  for (const auto& [key, entry] : other.slots_)
    slots_.emplace(key, std::make_pair(entry.first, copies.at(entry.second.get())));
  return *this;
}

Optimizer::~Optimizer() = default;

double Optimizer::current_learning_rate() const { return schedule_ ? (*schedule_)(iterations_) : learning_rate_; }

void Optimizer::set_learning_rate(double value) {
  if (!(value >= 0.0)) raise<ValueError>("{}: learning_rate must be >= 0, got {}", name(), value);
  learning_rate_ = value;
  schedule_.reset();
}

std::vector<VariablePtr> Optimizer::variables() const { return slot_order_; }

SymbolicTensor Optimizer::slot(Graph& graph, const VariablePtr& variable, const std::string& slot_name,
                               double initial) {
  auto key = std::make_pair(variable.get(), slot_name);
  auto it = slots_.find(key);
  if (it == slots_.end()) {
    std::string base = variable->name();
    if (base.ends_with(":0")) base.resize(base.size() - 2);
    auto value = Tensor::full(variable->shape(), initial, variable->dtype(), variable->device());
    auto created = make_variable(name() + "/" + slot_name + "/" + base + ":0", value, false);
    it = slots_.emplace(key, std::make_pair(variable, created)).first;
    slot_order_.push_back(created);
  }
  return graph.variable(it->second.second);
}

std::vector<Node*> Optimizer::apply_gradients(Graph& graph, const std::vector<SymbolicTensor>& grads,
                                              const std::vector<VariablePtr>& variables,
                                              const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) {
  if (grads.size() != variables.size())
    raise<ValueError>(
        "{}: apply_gradients got {} gradients for {} variables; pass one per variable (undefined to skip)", name(),
        grads.size(), variables.size());
  for (std::size_t i = 0; i < variables.size(); ++i)
    if (grads[i].defined() && grads[i].shape() != variables[i]->shape())
      raise<ShapeError>("{}: the gradient of \"{}\" has shape {}, the variable {}", name(), variables[i]->name(),
                        grads[i].shape().to_string(), variables[i]->shape().to_string());
  auto clipped = clip_gradients(graph, grads, clip_);
  std::vector<Node*> updates;
  for (std::size_t i = 0; i < variables.size(); ++i)
    if (clipped[i].defined())
      updates.push_back(
          update_step(graph, variables[i], graph.variable(variables[i]), clipped[i], learning_rate, iteration));
  return updates;
}

OptimizerPtr get(const std::string& identifier) {
  using Factory = OptimizerPtr (*)();
  static const std::pair<const char*, Factory> known[] = {
      {"sgd", []() -> OptimizerPtr { return std::make_shared<SGD>(); }},
      {"rmsprop", []() -> OptimizerPtr { return std::make_shared<RMSprop>(); }},
      {"adam", []() -> OptimizerPtr { return std::make_shared<Adam>(); }},
      {"adamw", []() -> OptimizerPtr { return std::make_shared<AdamW>(); }},
      {"adagrad", []() -> OptimizerPtr { return std::make_shared<Adagrad>(); }},
      {"adadelta", []() -> OptimizerPtr { return std::make_shared<Adadelta>(); }},
  };
  std::string key;  // "Adam", "RMSprop", "adam": Keras's names and class names, any case
  for (char c : identifier) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string names;
  for (const auto& [name, make] : known) {
    if (key == name) return make();
    names += names.empty() ? name : std::string(", ") + name;
  }
  raise<ValueError>("unknown optimizer \"{}\"; known: {} (any case), or pass an optimizer object", identifier, names);
}

}  // namespace tower::optimizers
