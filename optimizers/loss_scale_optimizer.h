// LossScaleOptimizer: Keras 3's dynamic loss scaling around another optimizer, for mixed_float16.
#pragma once

#include <map>
#include <string>

#include "tower/optimizers/optimizer.h"

namespace tower::optimizers {

struct LossScaleOptimizerOptions {
  double initial_scale = 32768.0;  // 2^15, Keras's default
  int dynamic_growth_steps = 2000;
};

// The loss is multiplied by a dynamic scale before the gradients are taken (scale_loss), so that small
// float16 gradients do not underflow; apply_gradients divides them by the scale again and then:
//  - if any gradient holds inf or NaN, the step is skipped (no variable or slot changes, the inner
//    optimizer's step count stays) and the scale halves;
//  - otherwise the inner optimizer applies them, and after `dynamic_growth_steps` such steps in a row the
//    scale doubles.
// All of it runs on the device inside the step: the verdict is a scalar computed from the gradients
// (sum of g·0 over every gradient: 0, or NaN when one is not finite), the inner updates get the learning
// rate plus that scalar (a NaN learning rate makes every update kernel skip its update), and the scale
// and counters are updated with arithmetic on 0/1 flags. Under towers the gradients it sees are the
// all-reduced sums, equal on every replica, so every replica takes the same decision.
// Variables (saved with the model, as Keras 3's legacy .h5 names them): dynamic_scale (float32) and
// step_counter (good steps since the scale last changed; int64 in files), then the inner optimizer's.
class LossScaleOptimizer : public Optimizer {
 public:
  explicit LossScaleOptimizer(const Optimizer& inner_optimizer, const LossScaleOptimizerOptions& options = {});
  LossScaleOptimizer(const LossScaleOptimizer& other);

  std::string name() const override { return "LossScaleOptimizer"; }
  OptimizerPtr clone() const override { return std::make_shared<LossScaleOptimizer>(*this); }
  nlohmann::json get_config() const override;

  const Optimizer& inner_optimizer() const { return *inner_; }
  Optimizer& inner_optimizer() { return *inner_; }
  double initial_scale() const { return options_.initial_scale; }
  int dynamic_growth_steps() const { return options_.dynamic_growth_steps; }
  // The current scale and good-step count (read from the device: not for inside a step).
  double dynamic_scale() const;
  std::int64_t step_counter() const;
  // Steps the inner optimizer applied (Keras's LossScaleOptimizer.iterations); iterations() counts every
  // step, skipped ones too (it drives the learning-rate schedule, as Keras's optimizer.iterations did).
  std::int64_t applied_steps() const;

  SymbolicTensor scale_loss(const SymbolicTensor& loss, const std::vector<VariablePtr>& variables) override;
  std::vector<Node*> apply_gradients(Graph& graph, const std::vector<SymbolicTensor>& grads,
                                     const std::vector<VariablePtr>& variables, const SymbolicTensor& learning_rate,
                                     const SymbolicTensor& iteration) override;
  std::vector<VariablePtr> variables() const override;
  std::vector<VariablePtr> slots_of(const Variable& variable) const override { return inner_->slots_of(variable); }
  // "LossScaleOptimizer/dynamic_scale:0" and "LossScaleOptimizer/step_counter:0" go to its own
  // variables, everything else (and the step count) to the inner optimizer.
  void set_state(std::int64_t iterations, std::map<std::string, Tensor> slot_values,
                 const std::string& source = "") override;

 protected:
  Node* update_step(Graph&, const VariablePtr&, const SymbolicTensor&, const SymbolicTensor&, const SymbolicTensor&,
                    const SymbolicTensor&) override;

 private:
  // Its scalar variables, on `device` (the primary on the first device asked, mirrors elsewhere).
  struct State {
    VariablePtr scale, counter, applied;  // dynamic_scale, step_counter, the inner step count (all float32)
  };
  // The scalars a replica of `variable` reads: the primaries on the device of the model's variables,
  // mirrors on the other towers' devices.
  State& state_for(const VariablePtr& variable);
  std::vector<VariablePtr> own_variables() const;  // the primaries, once made

  OptimizerPtr inner_;
  LossScaleOptimizerOptions options_;
  std::map<const Device*, State> states_;
  const Device* home_ = nullptr;  // the primaries' device
  std::map<std::string, Tensor> pending_own_;  // values loaded or copied before the scalars were made
};

}  // namespace tower::optimizers
