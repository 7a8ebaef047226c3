// LossScaleOptimizer: dynamic loss scaling on the device (Keras 3's keras.optimizers.LossScaleOptimizer).
#include "tower/optimizers/loss_scale_optimizer.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower::optimizers {

namespace {

const char* const kScaleName = "LossScaleOptimizer/dynamic_scale:0";
const char* const kCounterName = "LossScaleOptimizer/step_counter:0";
const char* const kAppliedName = "LossScaleOptimizer/inner_iterations:0";

const Optimizer& checked_inner(const Optimizer& inner, const LossScaleOptimizerOptions& options) {
  if (dynamic_cast<const LossScaleOptimizer*>(&inner))
    raise<ValueError>("LossScaleOptimizer: the inner optimizer is already a LossScaleOptimizer; wrap a plain one");
  if (!(options.initial_scale > 0.0) || !std::isfinite(options.initial_scale))
    raise<ValueError>("LossScaleOptimizer: initial_scale must be a positive finite number, got {} (Keras's default is "
                      "2**15)", options.initial_scale);
  if (options.dynamic_growth_steps < 1)
    raise<ValueError>("LossScaleOptimizer: dynamic_growth_steps must be >= 1, got {} (Keras's default is 2000)",
                      options.dynamic_growth_steps);
  // A skipped step is an update kernel told to do nothing (a NaN learning rate). EMA and gradient
  // accumulation add updates of their own that would not skip, and Adafactor updates through plain ops.
  const BaseOptions& base = inner.base_options();
  if (base.use_ema || base.gradient_accumulation_steps || inner.name() == "Adafactor")
    raise<ValueError>("LossScaleOptimizer: {} with {} is not supported inside it in tower; use another optimizer, or "
                      "train with \"mixed_bfloat16\", which needs no loss scaling", inner.name(),
                      base.use_ema ? "use_ema" : base.gradient_accumulation_steps ? "gradient_accumulation_steps"
                                                                                   : "its factored updates");
  return inner;
}

SymbolicTensor constant(Graph& graph, double value) { return graph.constant(Tensor::scalar(value, DType::float32)); }

}  // namespace

LossScaleOptimizer::LossScaleOptimizer(const Optimizer& inner_optimizer, const LossScaleOptimizerOptions& options)
    : Optimizer(checked_inner(inner_optimizer, options)),  // the inner's learning rate, schedule and step count
      inner_(inner_optimizer.clone()),
      options_(options) {}

LossScaleOptimizer::LossScaleOptimizer(const LossScaleOptimizer& other)
    : Optimizer(other), inner_(other.inner_->clone()), options_(other.options_), pending_own_(other.pending_own_) {
  // The copy's scalars are new variables with the same values, made when it first needs them.
  for (const auto& v : other.own_variables()) pending_own_[v->name()] = v->value().to(cpu_device());
}

std::vector<VariablePtr> LossScaleOptimizer::own_variables() const {
  const auto it = states_.find(home_);
  if (!home_ || it == states_.end()) return {};
  return {it->second.scale, it->second.counter, it->second.applied};
}

LossScaleOptimizer::State& LossScaleOptimizer::state_for(const VariablePtr& variable) {
  Device& home = variable->primary() ? variable->primary()->device() : variable->device();
  if (!home_) home_ = &home;
  if (home_ != &home)
    raise<ValueError>("LossScaleOptimizer: used for variables on {} after {}; compile a new optimizer for another "
                      "model", home.name(), home_->name());
  if (!states_.count(home_)) {
    auto make = [&](const char* name, double initial) {
      Tensor value = Tensor::scalar(initial, DType::float32, home);
      if (auto saved = pending_own_.find(name); saved != pending_own_.end()) {  // loaded or copied
        value = Tensor::scalar(saved->second.item(), DType::float32, home);
        pending_own_.erase(saved);
      }
      return make_variable(name, value, /*trainable=*/false);
    };
    states_[home_] = {make(kScaleName, options_.initial_scale), make(kCounterName, 0.0),
                      make(kAppliedName, static_cast<double>(inner_->iterations()))};
  }
  Device& device = variable->device();
  if (auto it = states_.find(&device); it != states_.end()) return it->second;
  // A mirror (towers): copies of the primary's scalars, which the replicas update identically.
  const State& primary = states_.at(home_);
  return states_[&device] = {make_mirror(primary.scale, device), make_mirror(primary.counter, device),
                             make_mirror(primary.applied, device)};
}

SymbolicTensor LossScaleOptimizer::scale_loss(const SymbolicTensor& loss, const std::vector<VariablePtr>& variables) {
  if (variables.empty()) return loss;
  const State& state = state_for(variables.front()->primary() ? variables.front()->primary() : variables.front());
  SymbolicTensor scale = loss.graph().variable(state.scale);
  if (scale.dtype() != loss.dtype()) scale = ops::cast(scale, loss.dtype());
  return ops::multiply(loss, scale);
}

std::vector<Node*> LossScaleOptimizer::apply_gradients(Graph& graph, const std::vector<SymbolicTensor>& grads,
                                                       const std::vector<VariablePtr>& variables,
                                                       const SymbolicTensor& learning_rate, const SymbolicTensor&) {
  if (grads.size() != variables.size())
    raise<ValueError>("LossScaleOptimizer: apply_gradients got {} gradients for {} variables", grads.size(),
                      variables.size());
  if (variables.empty()) return {};
  const State& state = state_for(variables.front());
  const SymbolicTensor scale = graph.variable(state.scale), counter = graph.variable(state.counter),
                       applied = graph.variable(state.applied);  // each () float32

  // The verdict, without leaving the device: g·0 is 0 for a finite g and NaN for inf or NaN, so the sum
  // over every gradient is 0 when all are finite and NaN otherwise.
  SymbolicTensor probe;  // ()
  std::vector<SymbolicTensor> unscaled(grads.size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    SymbolicTensor g = grads[i];
    SymbolicTensor p = ops::reduce_sum(ops::scale(g, 0.0));
    if (p.dtype() != DType::float32) p = ops::cast(p, DType::float32);
    probe = probe.defined() ? ops::add(probe, p) : p;
    unscaled[i] = ops::divide(g, g.dtype() == DType::float32 ? scale : ops::cast(scale, g.dtype()));
  }
  if (!probe.defined()) return {};
  const SymbolicTensor one = constant(graph, 1.0), half = constant(graph, 0.5);
  const SymbolicTensor finite = ops::compare_mask(probe, probe, "eq");  // 1, or 0 (NaN != NaN)
  const SymbolicTensor grow = ops::compare_mask(counter, constant(graph, options_.dynamic_growth_steps - 1.0), "eq");

  // The inner update, with lr + probe: the learning rate itself, or NaN, which every update kernel
  // takes as "skip this step". Its step count is the applied steps' (Keras's inner iterations).
  SymbolicTensor lr = learning_rate.dtype() == DType::float32 ? learning_rate : ops::cast(learning_rate, DType::float32);
  std::vector<Node*> updates =
      inner_->apply_gradients(graph, unscaled, variables, ops::add(lr, probe), ops::add(applied, one));

  // Keras: finite and counter == growth - 1: counter 0, scale x2; finite otherwise: counter + 1;
  // not finite: counter 0, scale / 2. As arithmetic on the 0/1 flags (exact in float32):
  //   counter' = finite · (1 - grow) · (counter + 1),  scale' = scale · (0.5 + finite · (0.5 + grow)).
  const SymbolicTensor new_counter =
      ops::multiply(finite, ops::multiply(ops::add(ops::scale(grow, -1.0), one), ops::add(counter, one)));
  const SymbolicTensor new_scale = ops::multiply(scale, ops::add(half, ops::multiply(finite, ops::add(half, grow))));
  updates.push_back(ops::assign(counter, new_counter));
  updates.push_back(ops::assign(scale, new_scale));
  updates.push_back(ops::assign(applied, ops::add(applied, finite)));
  return updates;
}

Node* LossScaleOptimizer::update_step(Graph&, const VariablePtr&, const SymbolicTensor&, const SymbolicTensor&,
                                      const SymbolicTensor&, const SymbolicTensor&) {
  raise<ValueError>("LossScaleOptimizer: update_step is its inner optimizer's");  // apply_gradients never calls it
}

double LossScaleOptimizer::dynamic_scale() const {
  const auto own = own_variables();
  if (own.empty()) {
    const auto saved = pending_own_.find(kScaleName);
    return saved == pending_own_.end() ? options_.initial_scale : saved->second.item();
  }
  return own[0]->value().item();
}

std::int64_t LossScaleOptimizer::step_counter() const {
  const auto own = own_variables();
  if (own.empty()) {
    const auto saved = pending_own_.find(kCounterName);
    return saved == pending_own_.end() ? 0 : static_cast<std::int64_t>(saved->second.item());
  }
  return static_cast<std::int64_t>(own[1]->value().item());
}

std::int64_t LossScaleOptimizer::applied_steps() const {
  const auto own = own_variables();
  if (own.empty()) return inner_->iterations();
  return static_cast<std::int64_t>(own[2]->value().item());
}

std::vector<VariablePtr> LossScaleOptimizer::variables() const {
  std::vector<VariablePtr> out = own_variables();
  for (auto& v : inner_->variables()) out.push_back(std::move(v));
  return out;
}

void LossScaleOptimizer::set_state(std::int64_t iterations, std::map<std::string, Tensor> slot_values,
                                   const std::string& source) {
  set_iterations(iterations);
  std::map<std::string, Tensor> own;
  for (const char* name : {kScaleName, kCounterName, kAppliedName})
    if (auto it = slot_values.find(name); it != slot_values.end()) {
      own.emplace(name, it->second);
      slot_values.erase(it);
    }
  if (!own.count(kAppliedName)) own.emplace(kAppliedName, Tensor::scalar(static_cast<double>(iterations)));
  for (const auto& v : own_variables())
    if (auto it = own.find(v->name()); it != own.end()) {
      v->assign(Tensor::scalar(it->second.item(), DType::float32, v->device()));
      own.erase(it);
    }
  for (auto& [name, value] : own) pending_own_[name] = value;
  inner_->set_state(iterations, std::move(slot_values), source);
}

nlohmann::json LossScaleOptimizer::get_config() const {
  // Keras 3's: the inner optimizer as {"class_name", "config"}, with the learning rate tower trains with.
  nlohmann::json inner = to_config(*inner_);
  nlohmann::json mine = Optimizer::get_config();
  if (mine.contains("learning_rate")) inner["config"]["learning_rate"] = mine["learning_rate"];
  return {{"name", "loss_scale_optimizer"},
          {"inner_optimizer", inner},
          {"initial_scale", options_.initial_scale},
          {"dynamic_growth_steps", options_.dynamic_growth_steps}};
}

}  // namespace tower::optimizers
