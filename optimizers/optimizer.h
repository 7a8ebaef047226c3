// Optimizer: the base of Keras's optimizers. It turns (gradient, variable) pairs into update ops in a
// training graph, owns the slot variables (momentum, Adam's m and v, ...) and the step count, and
// evaluates the learning rate (a constant or a schedule) on the host before each step.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tower/core/graph.h"
#include "tower/core/variable.h"
#include "tower/optimizers/schedules.h"

namespace tower::optimizers {

// Keyword arguments every Keras 3 optimizer takes (each optimizer's options struct has these fields too).
// Clipping is applied to each gradient before the update; as in Keras 3, at most one limit may be set.
struct BaseOptions {
  std::optional<double> clipnorm;         // each gradient rescaled to at most this L2 norm
  std::optional<double> clipvalue;        // each gradient element clipped to [-clipvalue, clipvalue]
  std::optional<double> global_clipnorm;  // all gradients rescaled together to at most this global norm
  // Keras 3's decoupled weight decay: var -= var * weight_decay * lr before each update (unset: none).
  std::optional<double> weight_decay;
  // An exponential moving average of the trainable variables ("average" slots): average =
  // ema_momentum * average + (1 - ema_momentum) * var after each step (the first step copies); the
  // variables take their averages every ema_overwrite_frequency steps and at the end of fit().
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<int> ema_overwrite_frequency;
  // Gradients summed in "gradient_accumulator" slots; the update, with their mean, every N-th step.
  std::optional<int> gradient_accumulation_steps;
};

class Optimizer {
 public:
  virtual ~Optimizer();

  // Keras's class name ("Adam") and the prefix of slot names ("Adam/m/dense/kernel:0").
  virtual std::string name() const = 0;
  // A copy with the same configuration and state (compile() keeps its own: `optimizers::Adam(1e-3)`).
  // The copy's slots are new variables holding the same values, so training one leaves the other alone.
  virtual std::shared_ptr<Optimizer> clone() const = 0;

  // Adds the update of every variable to `graph`; returns the nodes to run as targets each step.
  // grads[i] is the gradient of variables[i] (same shape); an undefined gradient is skipped.
  // `learning_rate` and `iteration` are float scalar placeholders the trainer feeds each step with
  // current_learning_rate() and iterations() + 1 (the 1-based number of the step being taken).
  // Virtual for LossScaleOptimizer, which unscales the gradients and skips the update on inf/NaN.
  virtual std::vector<Node*> apply_gradients(Graph& graph, const std::vector<SymbolicTensor>& grads,
                                             const std::vector<VariablePtr>& variables,
                                             const SymbolicTensor& learning_rate, const SymbolicTensor& iteration);
  // Keras's optimizer.scale_loss: the loss whose gradients apply_gradients() expects for `variables`
  // (the model's trainable weights). The loss itself, except for LossScaleOptimizer (loss times its
  // dynamic scale, kept on the variables' device). The trainer differentiates this.
  virtual SymbolicTensor scale_loss(const SymbolicTensor& loss, const std::vector<VariablePtr>& variables) {
    (void)variables;
    return loss;
  }
  // Keras's minimize: the gradients of `loss` for `variables` (read where they live), applied. A
  // variable split into pieces (Variable::pieces) is trained through them.
  std::vector<Node*> minimize(Graph& graph, const SymbolicTensor& loss, const std::vector<VariablePtr>& variables,
                              const SymbolicTensor& learning_rate, const SymbolicTensor& iteration);

  // Steps taken so far (Keras's optimizer._iterations, what it saves and what schedules read); the
  // trainer calls finish_step() after each, which also overwrites the variables with their averages
  // every ema_overwrite_frequency updates.
  std::int64_t iterations() const { return iterations_; }
  void finish_step();
  // With use_ema and ema_overwrite_frequency: the variables take their averages when this step is an
  // overwrite step (once per step). finish_step() calls it; the trainer calls it earlier, right after
  // the update, since Keras 3 overwrites before applying the weight constraints.
  void overwrite_with_averages_if_due();
  void set_iterations(std::int64_t n) {
    iterations_ = n;
    overwritten_at_ = -1;
  }
  // The 1-based number of the update the coming step belongs to, as the update rules see it (Keras's
  // optimizer.iterations + 1): iterations() + 1, or iterations() / N + 1 with gradient accumulation.
  std::int64_t update_number() const;
  // Of the nodes apply_gradients() returned, those to run in the coming step: with gradient
  // accumulation, the accumulating nodes on N - 1 steps of N and the updates on the N-th.
  std::vector<Node*> step_targets(const std::vector<Node*>& targets) const;
  // Keras's finalize_variable_values (fit() calls it at the end): with use_ema, each variable takes
  // its moving average. Does nothing otherwise.
  void finalize_variable_values();

  // Keras's exclude_from_weight_decay(var_names=...): variables whose name (without the layer prefix
  // and ":0") contains a match of one of these regular expressions get no weight decay. Call it before
  // the first training step.
  void exclude_from_weight_decay(const std::vector<std::string>& var_names);
  const BaseOptions& base_options() const { return base_; }

  // The learning rate for the next step: the schedule at iterations(), or the constant.
  double current_learning_rate() const;
  // Replaces the learning rate by a constant (ReduceLROnPlateau, LearningRateScheduler).
  void set_learning_rate(double value);
  bool has_schedule() const { return schedule_ != nullptr; }

  // Slot variables in creation order (optimizer_weights in a full-model file); LossScaleOptimizer's
  // own (dynamic_scale, step_counter) and then its inner optimizer's.
  virtual std::vector<VariablePtr> variables() const;
  // The slots made so far for `variable` (Model::move_weights moves them with it).
  virtual std::vector<VariablePtr> slots_of(const Variable& variable) const;

  // Keras's optimizer.get_config() in tf.keras 2.11+'s spelling: {"name": "Adam", "learning_rate":
  // 0.001 or a schedule's {"class_name", "config"}, "clipnorm": null, ..., the optimizer's own
  // arguments}. from_config() (below) rebuilds the optimizer from it.
  virtual nlohmann::json get_config() const;

  // Restores saved state: the step count, and slot values by tower slot name ("Adam/m/dense/kernel:0").
  // Slots that exist are assigned now; the others are created with the next training graph, so their
  // values wait and are given to them then (as Keras 2 deferred optimizer weights after load_model).
  // A value whose shape differs from its slot's throws when the slot is assigned, naming `source`
  // (where the state comes from and what to do about it, e.g. a backup and how to start over) if given.
  virtual void set_state(std::int64_t iterations, std::map<std::string, Tensor> slot_values,
                         const std::string& source = "");
  // Values set_state() keeps for slots not created yet (saved again by a model saved before training).
  const std::map<std::string, Tensor>& pending_state() const { return pending_; }

 protected:
  Optimizer(double learning_rate, const BaseOptions& base);
  Optimizer(std::shared_ptr<const LearningRateSchedule> schedule, const BaseOptions& base);
  // Copies deep-copy the slots (see clone()).
  Optimizer(const Optimizer& other);
  Optimizer& operator=(const Optimizer& other);

  // The BaseOptions fields of an optimizer's options struct (each has them all).
  template <class Options>
  static BaseOptions base_options(const Options& o) {
    return {o.clipnorm,       o.clipvalue,    o.global_clipnorm,         o.weight_decay,
            o.use_ema,        o.ema_momentum, o.ema_overwrite_frequency, o.gradient_accumulation_steps};
  }
  // The weight decay of `variable`: 0 when unset or excluded (exclude_from_weight_decay).
  double weight_decay_for(const VariablePtr& variable) const;
  // Sets the weight decay after construction (AdamW's default).
  void set_weight_decay(std::optional<double> weight_decay);
  // Extra update nodes an update_step() made (Adafactor's factored moments), run with its result.
  void add_update(Node* node) { extra_updates_.push_back(node); }

  // Adds the update of one variable. var: the variable's read in `graph`; grad: clipped gradient.
  virtual Node* update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var,
                            const SymbolicTensor& grad, const SymbolicTensor& learning_rate,
                            const SymbolicTensor& iteration) = 0;

  // The slot `slot_name` of `variable` ("m", "v", "momentum", ...), created as zeros (or `initial`)
  // on first use and kept for the optimizer's life, so rebuilding the training graph keeps the state.
  // Named as tf.keras 2.11+ names them: "<name()>/<slot_name>/<variable name without :0>:0".
  // A mirror's slots (parallel towers) mirror its primary's slots and are not in variables().
  SymbolicTensor slot(Graph& graph, const VariablePtr& variable, const std::string& slot_name, double initial = 0.0);
  // A slot of another shape than its variable's (Adafactor's row and column moments).
  SymbolicTensor slot(Graph& graph, const VariablePtr& variable, const std::string& slot_name, const Shape& shape,
                      double initial = 0.0);

 private:
  VariablePtr slot_variable(const VariablePtr& variable, const std::string& slot_name, double initial,
                            const std::optional<Shape>& shape = std::nullopt);
  double learning_rate_ = 0.001;
  std::shared_ptr<const LearningRateSchedule> schedule_;
  BaseOptions base_;
  std::vector<std::string> exclude_from_weight_decay_;
  std::int64_t iterations_ = 0;
  std::int64_t overwritten_at_ = -1;  // the step whose EMA overwrite was done
  // With gradient accumulation: the nodes that run on accumulating steps only, and on update steps only.
  // They belong to the graph apply_gradients() last built on (towers call it once per replica on one
  // graph); a call on another graph, or on a graph with fewer nodes than it had (a new graph at a freed
  // one's address), forgets them first, so a reused node address is never misread.
  std::set<const Node*> accumulate_nodes_, update_nodes_;
  const Graph* last_graph_ = nullptr;
  int last_graph_nodes_ = 0;
  // With use_ema: each trainable variable and its "average" slot (primaries only).
  std::vector<std::pair<VariablePtr, VariablePtr>> ema_pairs_;
  std::vector<Node*> extra_updates_;
  // (variable, slot name) -> slot. Each entry also holds its variable, so a freed variable's address
  // can never be reused by another one while its slots exist.
  std::map<std::pair<const Variable*, std::string>, std::pair<VariablePtr, VariablePtr>> slots_;
  std::vector<VariablePtr> slot_order_;
  std::map<std::string, Tensor> pending_;  // set_state() values for slots not created yet
  std::string state_source_;  // set_state()'s source, for the error of a value that does not fit
  void check_saved_shape(const Variable& slot, const Tensor& saved) const;  // ShapeError naming state_source_
};

using OptimizerPtr = std::shared_ptr<Optimizer>;

// "sgd", "rmsprop", "adam", "adamw", "adagrad", "adadelta", "adamax", "nadam", "lion", "ftrl",
// "adafactor" with Keras's defaults (case-insensitive).
// An unknown name throws ValueError listing the known ones.
OptimizerPtr get(const std::string& identifier);

// An optimizer from Keras's {"class_name": "Adam", "config": {...}} as tf.keras 2 ("Adam",
// "Custom>Adam"), Keras 3 and Keras 1/2 ("lr", "decay": Keras 2's per-step inverse-time decay) write it.
// Unknown classes and arguments tower cannot honour (loss_scale_factor, a non-zero decay with a
// schedule) throw ValueError naming them.
OptimizerPtr from_config(const nlohmann::json& optimizer);
// {"class_name": name(), "config": get_config()}.
nlohmann::json to_config(const Optimizer& optimizer);

}  // namespace tower::optimizers
