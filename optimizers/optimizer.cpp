// Optimizer base: gradient clipping, slots, learning rate and step count, and get() by Keras name.
#include "tower/optimizers/optimizer.h"

#include <cctype>
#include <map>
#include <regex>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "tower/core/autodiff.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/optimizers/optimizers.h"

namespace tower::optimizers {

namespace {

// Keras 3 accepts at most one clipping argument; tower also refuses non-positive limits (Keras silently
// ignores them), since they are surely a mistake.
void check_clip(const BaseOptions& clip) {
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
std::vector<SymbolicTensor> clip_gradients(Graph& graph, std::vector<SymbolicTensor> grads, const BaseOptions& clip) {
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

// Keras 3's checks of the other base arguments, with what to pass instead.
void check_base(const BaseOptions& o) {
  if (o.weight_decay && !(*o.weight_decay >= 0.0))
    raise<ValueError>("optimizer: weight_decay must be >= 0, got {}; leave it unset for no weight decay",
                      *o.weight_decay);
  if (o.use_ema && !(o.ema_momentum >= 0.0 && o.ema_momentum <= 1.0))
    raise<ValueError>("optimizer: ema_momentum must be in [0, 1], got {} (Keras's default is 0.99)", o.ema_momentum);
  if (o.use_ema && o.ema_overwrite_frequency && *o.ema_overwrite_frequency < 1)
    raise<ValueError>("optimizer: ema_overwrite_frequency must be an integer >= 1 or unset, got {}",
                      *o.ema_overwrite_frequency);
  if (o.gradient_accumulation_steps && *o.gradient_accumulation_steps < 2)
    raise<ValueError>("optimizer: gradient_accumulation_steps must be an integer >= 2, got {}; leave it unset to "
                      "update every step", *o.gradient_accumulation_steps);
}

}  // namespace

Optimizer::Optimizer(double learning_rate, const BaseOptions& base) : learning_rate_(learning_rate), base_(base) {
  check_learning_rate("optimizer", "learning_rate", learning_rate);  // name() is not yet callable here
  check_clip(base);
  check_base(base);
}

Optimizer::Optimizer(std::shared_ptr<const LearningRateSchedule> schedule, const BaseOptions& base)
    : Optimizer(0.0, base) {
  if (!schedule) raise<ValueError>("optimizer: the learning-rate schedule is null; pass a schedule or a float");
  schedule_ = std::move(schedule);
}

Optimizer::Optimizer(const Optimizer& other) { *this = other; }

Optimizer& Optimizer::operator=(const Optimizer& other) {
  if (this == &other) return *this;
  learning_rate_ = other.learning_rate_;
  schedule_ = other.schedule_;  // schedules are immutable: sharing is safe
  base_ = other.base_;
  exclude_from_weight_decay_ = other.exclude_from_weight_decay_;
  iterations_ = other.iterations_;
  overwritten_at_ = other.overwritten_at_;
  slots_.clear();
  slot_order_.clear();
  accumulate_nodes_.clear();  // nodes of graphs built for `other`; a copy builds its own
  update_nodes_.clear();
  last_graph_ = nullptr;
  last_graph_nodes_ = 0;
  ema_pairs_.clear();
  extra_updates_.clear();
  std::map<const Variable*, VariablePtr> copies;  // other's slot -> its copy
  for (const auto& slot : other.slot_order_) {
    auto copy = make_variable(slot->name(), slot->value().clone(), slot->trainable());
    copies.emplace(slot.get(), copy);
    slot_order_.push_back(copy);
  }
  for (const auto& [key, entry] : other.slots_)  // mirrors' slots are made again when a tower needs them
    if (!entry.second->primary()) slots_.emplace(key, std::make_pair(entry.first, copies.at(entry.second.get())));
  return *this;
}

Optimizer::~Optimizer() = default;

double Optimizer::current_learning_rate() const {
  if (!schedule_) return learning_rate_;
  // A schedule's arguments are checked, but its formula may still overflow (ExponentialDecay with a
  // decay_rate above 1 reaches inf after enough steps). Called every step: the message is made only
  // when the value is refused.
  const double value = (*schedule_)(iterations_);
  if (!is_valid_learning_rate(value)) [[unlikely]]
    check_learning_rate(fmt::format("{}: the learning-rate schedule {}", name(),
                                    schedule_->to_config().value("class_name", std::string("?"))),
                        fmt::format("its value at step {}", iterations_), value);
  return value;
}

void Optimizer::set_learning_rate(double value) {
  check_learning_rate(name(), "learning_rate", value);
  learning_rate_ = value;
  schedule_.reset();
}

std::vector<VariablePtr> Optimizer::variables() const { return slot_order_; }

std::vector<VariablePtr> Optimizer::slots_of(const Variable& variable) const {
  std::vector<VariablePtr> out;
  for (const auto& [key, entry] : slots_)
    if (key.first == &variable) out.push_back(entry.second);
  return out;
}

VariablePtr Optimizer::slot_variable(const VariablePtr& variable, const std::string& slot_name, double initial,
                                     const std::optional<Shape>& shape) {
  auto key = std::make_pair(variable.get(), slot_name);
  if (auto it = slots_.find(key); it != slots_.end()) return it->second.second;
  VariablePtr created;
  if (variable->primary()) {
    // A mirror's slot mirrors its primary's slot (same name and value, on the mirror's device), and a
    // piece's slot is the same piece of its whole's slot; only the primary's is saved.
    created = make_copy_like(variable, slot_variable(variable->primary(), slot_name, initial, shape));
  } else {
    std::string base = variable->name();
    if (base.ends_with(":0")) base.resize(base.size() - 2);
    const std::string slot_full_name = name() + "/" + slot_name + "/" + base + ":0";
    Tensor value;
    try {
      value = Tensor::full(shape.value_or(variable->shape()), initial, variable->dtype(), variable->device());
    } catch (const OutOfMemoryError& e) {
      raise_variable_out_of_memory(slot_full_name, shape.value_or(variable->shape()), variable->dtype(), &e);
    }
    created = make_variable(slot_full_name, value, false);
    if (auto saved = pending_.find(created->name()); saved != pending_.end()) {  // state loaded from a file
      check_saved_shape(*created, saved->second);
      created->assign(saved->second);
      pending_.erase(saved);
    }
    slot_order_.push_back(created);
  }
  slots_.emplace(key, std::make_pair(variable, created));
  return created;
}

SymbolicTensor Optimizer::slot(Graph& graph, const VariablePtr& variable, const std::string& slot_name,
                               double initial) {
  return graph.variable(slot_variable(variable, slot_name, initial));
}

SymbolicTensor Optimizer::slot(Graph& graph, const VariablePtr& variable, const std::string& slot_name,
                               const Shape& shape, double initial) {
  return graph.variable(slot_variable(variable, slot_name, initial, shape));
}

void Optimizer::set_weight_decay(std::optional<double> weight_decay) {
  BaseOptions o = base_;
  o.weight_decay = weight_decay;
  check_base(o);
  base_ = o;
}

void Optimizer::exclude_from_weight_decay(const std::vector<std::string>& var_names) {
  for (const auto& pattern : var_names) try {
      std::regex check(pattern);
    } catch (const std::regex_error& e) {
      raise<ValueError>("{}: exclude_from_weight_decay: \"{}\" is not a regular expression ({}); pass names or "
                        "patterns such as \"bias\"", name(), pattern, e.what());
    }
  exclude_from_weight_decay_ = var_names;
}

double Optimizer::weight_decay_for(const VariablePtr& variable) const {
  if (!base_.weight_decay) return 0.0;
  if (!exclude_from_weight_decay_.empty()) {
    // Keras 3 searches variable.name ("kernel"): tower's "dense/kernel:0" without layer and ":0".
    const Variable& v = variable->primary() ? *variable->primary() : *variable;
    std::string short_name = v.name();
    if (short_name.ends_with(":0")) short_name.resize(short_name.size() - 2);
    if (auto slash = short_name.rfind('/'); slash != std::string::npos) short_name = short_name.substr(slash + 1);
    for (const auto& pattern : exclude_from_weight_decay_)
      if (std::regex_search(short_name, std::regex(pattern))) return 0.0;
  }
  return *base_.weight_decay;
}

std::int64_t Optimizer::update_number() const {
  return (base_.gradient_accumulation_steps ? iterations_ / *base_.gradient_accumulation_steps : iterations_) + 1;
}

std::vector<Node*> Optimizer::step_targets(const std::vector<Node*>& targets) const {
  if (!base_.gradient_accumulation_steps || (accumulate_nodes_.empty() && update_nodes_.empty())) return targets;
  const bool update = (iterations_ + 1) % *base_.gradient_accumulation_steps == 0;
  const auto& skipped = update ? accumulate_nodes_ : update_nodes_;
  std::vector<Node*> out;
  for (Node* n : targets)
    if (!skipped.count(n)) out.push_back(n);
  return out;
}

void Optimizer::overwrite_with_averages_if_due() {
  // Keras 3 overwrites after the update when (iterations + 1) % ema_overwrite_frequency == 0, its
  // iterations counting updates (raw steps / N with gradient accumulation), before incrementing.
  if (overwritten_at_ == iterations_) return;
  overwritten_at_ = iterations_;
  if (base_.use_ema && base_.ema_overwrite_frequency && update_number() % *base_.ema_overwrite_frequency == 0)
    finalize_variable_values();
}

void Optimizer::finish_step() {
  overwrite_with_averages_if_due();
  ++iterations_;
}

void Optimizer::finalize_variable_values() {
  if (!base_.use_ema) return;
  for (const auto& [variable, average] : ema_pairs_) variable->assign(average->value());
}

std::vector<Node*> Optimizer::minimize(Graph& graph, const SymbolicTensor& loss, const std::vector<VariablePtr>& variables,
                                       const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) {
  // A variable split into pieces (tower::distribution's sharded layouts) is read, and so trained,
  // through its pieces: each gets its gradient, slots and update where it lives.
  std::vector<VariablePtr> trained;
  for (const auto& v : variables) {
    const auto pieces = v->pieces();
    trained.insert(trained.end(), pieces.begin(), pieces.end());
    if (pieces.empty()) trained.push_back(v);
  }
  std::vector<SymbolicTensor> reads;
  for (const auto& v : trained) reads.push_back(graph.variable(v));
  return apply_gradients(graph, gradients(loss, reads), trained, learning_rate, iteration);
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
  if (&graph != last_graph_ || graph.num_nodes() < last_graph_nodes_) {
    accumulate_nodes_.clear();
    update_nodes_.clear();
  }
  std::vector<Node*> updates;
  std::vector<SymbolicTensor> used = grads;
  std::vector<Node*> resets;  // the accumulators' resets, after the updates
  if (base_.gradient_accumulation_steps) {
    // Keras 3: on N - 1 steps of N, accumulator += g; on the N-th the update with (g + accumulator) / N
    // (clipped, then weight decay), and the accumulator reset.
    for (std::size_t i = 0; i < variables.size(); ++i) {
      if (!grads[i].defined()) continue;
      Graph::DeviceScope on_variable(graph, variables[i]->device().name());  // written in place: on its device
      auto acc = slot(graph, variables[i], "gradient_accumulator");
      Node* add = ops::assign(acc, ops::add(acc, grads[i]));
      accumulate_nodes_.insert(add);
      updates.push_back(add);
      used[i] = ops::divide(ops::add(grads[i], acc),
                            graph.constant(Tensor::scalar(*base_.gradient_accumulation_steps, grads[i].dtype())));
      resets.push_back(ops::assign(acc, ops::zeros_like(acc)));
    }
  }
  auto clipped = clip_gradients(graph, used, base_);
  std::vector<Node*> applied;
  // float64 variables (set_floatx) take the learning rate and the step count in float64.
  SymbolicTensor learning_rate_64, iteration_64;
  const auto in_float64 = [](const SymbolicTensor& t, SymbolicTensor& cached) {
    if (!t.defined() || t.dtype() == DType::float64) return t;
    if (!cached.defined()) cached = ops::cast(t, DType::float64);
    return cached;
  };
  for (std::size_t i = 0; i < variables.size(); ++i)
    if (clipped[i].defined()) {
      extra_updates_.clear();
      // A variable is written in place, so its update runs on its device (a model placed on several
      // devices by DefaultDeviceScope has variables on each; the gradient is copied there).
      Graph::DeviceScope on_variable(graph, variables[i]->device().name());
      const bool wide = variables[i]->dtype() == DType::float64;
      applied.push_back(update_step(graph, variables[i], graph.variable(variables[i]), clipped[i],
                                    wide ? in_float64(learning_rate, learning_rate_64) : learning_rate,
                                    wide ? in_float64(iteration, iteration_64) : iteration));
      applied.insert(applied.end(), extra_updates_.begin(), extra_updates_.end());
      extra_updates_.clear();
    }
  applied.insert(applied.end(), resets.begin(), resets.end());
  if (base_.gradient_accumulation_steps) update_nodes_.insert(applied.begin(), applied.end());
  updates.insert(updates.end(), applied.begin(), applied.end());
  if (base_.use_ema) {
    // After the updates (update ops run in creation order, after every read): every step, accumulating
    // or not, as Keras 3 does.
    for (const auto& variable : variables) {
      auto average = slot(graph, variable, "average");
      updates.push_back(ops::apply_ema(average, graph.variable(variable), iteration, base_.ema_momentum));
      if (!variable->primary()) {
        const VariablePtr avg = slot_variable(variable, "average", 0.0);
        bool known = false;
        for (const auto& [v, a] : ema_pairs_) known = known || v == variable;
        if (!known) ema_pairs_.emplace_back(variable, avg);
      }
    }
  }
  last_graph_ = &graph;
  last_graph_nodes_ = graph.num_nodes();
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
      {"adamax", []() -> OptimizerPtr { return std::make_shared<Adamax>(); }},
      {"nadam", []() -> OptimizerPtr { return std::make_shared<Nadam>(); }},
      {"lion", []() -> OptimizerPtr { return std::make_shared<Lion>(); }},
      {"ftrl", []() -> OptimizerPtr { return std::make_shared<Ftrl>(); }},
      {"adafactor", []() -> OptimizerPtr { return std::make_shared<Adafactor>(); }},
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


// ---- configs and state -----------------------------------------------------------------------------

namespace {

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

// config[key] as a number, `fallback` when absent or null.
double number(const nlohmann::json& config, const char* key, double fallback) {
  if (!config.contains(key) || config.at(key).is_null()) return fallback;
  if (!config.at(key).is_number())
    raise<ValueError>("optimizer config: \"{}\" must be a number, got {}", key, config.at(key).dump());
  return config.at(key).get<double>();
}

std::optional<double> optional(const nlohmann::json& config, const char* key) {
  if (!config.contains(key) || config.at(key).is_null()) return std::nullopt;
  return number(config, key, 0.0);
}

}  // namespace

nlohmann::json Optimizer::get_config() const {
  nlohmann::json c = {{"name", name()},
          {"learning_rate", schedule_ ? schedule_->to_config() : nlohmann::json(learning_rate_)},
          {"weight_decay", optional_number(base_.weight_decay)},
          {"clipnorm", optional_number(base_.clipnorm)},
          {"global_clipnorm", optional_number(base_.global_clipnorm)},
          {"clipvalue", optional_number(base_.clipvalue)},
          {"use_ema", base_.use_ema},
          {"ema_momentum", base_.ema_momentum},
          {"ema_overwrite_frequency", base_.ema_overwrite_frequency ? nlohmann::json(*base_.ema_overwrite_frequency)
                                                                    : nlohmann::json()},
          {"is_legacy_optimizer", false}};
  // Only when set: tf.keras 2 refuses the key, Keras 3 reads it.
  if (base_.gradient_accumulation_steps) c["gradient_accumulation_steps"] = *base_.gradient_accumulation_steps;
  return c;
}

void Optimizer::check_saved_shape(const Variable& slot, const Tensor& saved) const {
  if (saved.shape() == slot.shape()) return;
  raise<ShapeError>("{}: saved state \"{}\" has shape {} but the slot has {}; {}", name(), slot.name(),
                    saved.shape().to_string(), slot.shape().to_string(),
                    state_source_.empty() ? "was it saved for another model?" : state_source_);
}

void Optimizer::set_state(std::int64_t iterations, std::map<std::string, Tensor> slot_values,
                          const std::string& source) {
  if (iterations < 0) raise<ValueError>("{}: saved iterations must be >= 0, got {}", name(), iterations);
  state_source_ = source;
  for (const auto& slot : slot_order_) {
    auto it = slot_values.find(slot->name());
    if (it == slot_values.end()) continue;
    check_saved_shape(*slot, it->second);
    slot->assign(it->second);
    slot_values.erase(it);
  }
  iterations_ = iterations;
  overwritten_at_ = -1;
  pending_ = std::move(slot_values);
}

nlohmann::json to_config(const Optimizer& optimizer) {
  return {{"class_name", optimizer.name()}, {"config", optimizer.get_config()}};
}

OptimizerPtr from_config(const nlohmann::json& optimizer) {
  if (!optimizer.is_object() || !optimizer.contains("class_name"))
    raise<ValueError>("optimizer config: expected {{\"class_name\": ..., \"config\": ...}}, got {}",
                      optimizer.dump().substr(0, 200));
  std::string class_name = optimizer.at("class_name").get<std::string>();
  if (class_name.starts_with("Custom>")) class_name = class_name.substr(7);  // tf.keras 2.11+ registers "Custom>Adam"
  const nlohmann::json config = optimizer.value("config", nlohmann::json::object());
  if (class_name == "LossScaleOptimizer") {  // Keras 3's, around {"inner_optimizer": {...}}
    if (!config.contains("inner_optimizer"))
      raise<ValueError>("optimizer config: LossScaleOptimizer without an inner_optimizer: {}", config.dump().substr(0, 200));
    if (config.contains("dynamic") && config["dynamic"].is_boolean() && !config["dynamic"].get<bool>())
      raise<ValueError>("optimizer config: LossScaleOptimizer with dynamic=False is not supported (nor by Keras 3)");
    LossScaleOptimizerOptions options;
    options.initial_scale = number(config, "initial_scale", options.initial_scale);
    options.dynamic_growth_steps = static_cast<int>(number(config, "dynamic_growth_steps", options.dynamic_growth_steps));
    return std::make_shared<LossScaleOptimizer>(*from_config(config.at("inner_optimizer")), options);
  }
  if (optional(config, "loss_scale_factor"))
    raise<ValueError>("optimizer config: loss_scale_factor (a fixed loss scale) is not supported by tower; remove it, "
                      "or use LossScaleOptimizer (dynamic loss scaling)");

  // The learning rate: a number, a schedule, Keras 1/2's "lr", and Keras 2's "decay" (lr / (1 + decay * t)).
  // (A negative or non-finite rate is refused by the optimizer, not replaced by the default.)
  std::shared_ptr<const LearningRateSchedule> schedule;
  std::optional<double> lr;  // absent: the class's default
  const char* lr_key = config.contains("learning_rate") ? "learning_rate" : "lr";
  if (config.contains(lr_key) && config.at(lr_key).is_object())
    schedule = schedule_from_config(config.at(lr_key));
  else
    lr = optional(config, lr_key);
  const double decay = number(config, "decay", 0.0);
  if (decay != 0.0) {
    if (schedule) raise<ValueError>("optimizer config: both a schedule and decay = {} are set", decay);
    schedule = std::make_shared<InverseTimeDecay>(lr.value_or(0.01), 1, decay);
  }
  // An integer argument (Keras writes ints; a float with no fraction is accepted).
  const auto integer = [&](const char* key) -> std::optional<int> {
    const auto v = optional(config, key);
    if (!v) return std::nullopt;
    if (*v != static_cast<double>(static_cast<int>(*v)))
      raise<ValueError>("optimizer config: \"{}\" must be an integer, got {}", key, *v);
    return static_cast<int>(*v);
  };
  const std::optional<double> weight_decay = optional(config, "weight_decay");
  const BaseOptions base{optional(config, "clipnorm"),
                         optional(config, "clipvalue"),
                         optional(config, "global_clipnorm"),
                         weight_decay,
                         config.contains("use_ema") && config.at("use_ema").is_boolean() && config.at("use_ema").get<bool>(),
                         number(config, "ema_momentum", 0.99),
                         integer("ema_overwrite_frequency"),
                         integer("gradient_accumulation_steps")};
  // Builds T with a schedule or a learning rate (the class default when absent).
  auto make = [&]<typename T, typename O>(O options, double default_lr) -> OptimizerPtr {
    options.clipnorm = base.clipnorm;
    options.clipvalue = base.clipvalue;
    options.global_clipnorm = base.global_clipnorm;
    if constexpr (!std::is_same_v<O, AdamWOptions>) options.weight_decay = base.weight_decay;
    options.use_ema = base.use_ema;
    options.ema_momentum = base.ema_momentum;
    options.ema_overwrite_frequency = base.ema_overwrite_frequency;
    options.gradient_accumulation_steps = base.gradient_accumulation_steps;
    if (schedule) return std::make_shared<T>(schedule, options);
    return std::make_shared<T>(lr.value_or(default_lr), options);
  };
  std::string key;
  for (char c : class_name) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "sgd")
    return make.operator()<SGD>(SGDOptions{number(config, "momentum", 0.0), config.value("nesterov", false)}, 0.01);
  if (key == "rmsprop")
    return make.operator()<RMSprop>(RMSpropOptions{number(config, "rho", 0.9), number(config, "momentum", 0.0),
                                                   number(config, "epsilon", 1e-7), config.value("centered", false)},
                                    0.001);
  if (key == "adamw")
    return make.operator()<AdamW>(AdamWOptions{weight_decay.value_or(0.004), number(config, "beta_1", 0.9),
                                               number(config, "beta_2", 0.999), number(config, "epsilon", 1e-7),
                                               config.value("amsgrad", false)},
                                  0.001);
  if (key == "adam")
    return make.operator()<Adam>(AdamOptions{number(config, "beta_1", 0.9), number(config, "beta_2", 0.999),
                                             number(config, "epsilon", 1e-7), config.value("amsgrad", false)},
                                 0.001);
  if (key == "adagrad")
    return make.operator()<Adagrad>(
        AdagradOptions{number(config, "initial_accumulator_value", 0.1), number(config, "epsilon", 1e-7)}, 0.001);
  if (key == "adadelta")
    return make.operator()<Adadelta>(AdadeltaOptions{number(config, "rho", 0.95), number(config, "epsilon", 1e-7)},
                                     0.001);
  if (key == "adamax")
    return make.operator()<Adamax>(AdamaxOptions{number(config, "beta_1", 0.9), number(config, "beta_2", 0.999),
                                                 number(config, "epsilon", 1e-7)},
                                   0.001);
  if (key == "nadam")
    return make.operator()<Nadam>(NadamOptions{number(config, "beta_1", 0.9), number(config, "beta_2", 0.999),
                                               number(config, "epsilon", 1e-7)},
                                  0.001);
  if (key == "lion")
    return make.operator()<Lion>(LionOptions{number(config, "beta_1", 0.9), number(config, "beta_2", 0.99)}, 0.001);
  if (key == "ftrl")
    return make.operator()<Ftrl>(
        FtrlOptions{number(config, "learning_rate_power", -0.5), number(config, "initial_accumulator_value", 0.1),
                    number(config, "l1_regularization_strength", 0.0), number(config, "l2_regularization_strength", 0.0),
                    number(config, "l2_shrinkage_regularization_strength", 0.0), number(config, "beta", 0.0)},
        0.001);
  if (key == "adafactor")
    return make.operator()<Adafactor>(
        AdafactorOptions{number(config, "beta_2_decay", -0.8), number(config, "epsilon_1", 1e-30),
                         number(config, "epsilon_2", 1e-3), number(config, "clip_threshold", 1.0),
                         config.value("relative_step", true)},
        0.001);
  raise<ValueError>("optimizer \"{}\" is not supported; tower has SGD, RMSprop, Adam, AdamW, Adagrad, Adadelta, "
                    "Adamax, Nadam, Lion, Ftrl and Adafactor",
                    class_name);
}
}  // namespace tower::optimizers
