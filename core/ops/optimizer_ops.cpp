// Optimizer update ops (apply_sgd, apply_rmsprop, apply_adam, apply_adagrad, apply_adadelta,
// apply_adamax, apply_nadam, apply_lion, apply_ftrl, and apply_ema for use_ema): fused in-place
// updates of a variable and its slots following Keras 3's rules. They have no outputs.
//
// Inputs are (var, grad, lr, [iteration], slots...). Optional slots that a configuration does not
// use are left out of the inputs; bool attrs ("has_momentum", "has_average_grad", "has_v_hat")
// tell the kernels which are there, in the order the builders declare them.
#include <string_view>

#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace ops {

namespace {

void require(const SymbolicTensor& t, const char* op, const char* what, const char* why) {
  if (!t.defined()) raise<ValueError>("{}: {} is undefined, but {}; create the slot variable and pass it", op, what, why);
}

void check_decay(const char* op, double weight_decay) {
  if (!(weight_decay >= 0)) raise<ValueError>("{}: weight_decay must be >= 0, got {}", op, weight_decay);
}

}  // namespace

Node* apply_sgd(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                const SymbolicTensor& momentum_slot, double momentum, bool nesterov, double weight_decay) {
  if (momentum < 0 || momentum > 1) raise<ValueError>("apply_sgd: momentum must be in [0, 1], got {}", momentum);
  check_decay(op_names::apply_sgd, weight_decay);
  if (momentum != 0) require(momentum_slot, op_names::apply_sgd, "momentum_slot", "momentum is not 0");
  std::vector<SymbolicTensor> in{var, grad, lr};
  if (momentum_slot.defined()) in.push_back(momentum_slot);
  return &var.graph().add_node(
      op_names::apply_sgd, in,
      {{"momentum", momentum},
       {"nesterov", nesterov},
       {"has_momentum", momentum_slot.defined()},
       {"weight_decay", weight_decay}});
}

Node* apply_rmsprop(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                    const SymbolicTensor& velocity, const SymbolicTensor& momentum_slot,
                    const SymbolicTensor& average_grad, double rho, double momentum, double epsilon, bool centered,
                    double weight_decay) {
  if (momentum < 0) raise<ValueError>("apply_rmsprop: momentum must be >= 0, got {}", momentum);
  check_decay(op_names::apply_rmsprop, weight_decay);
  require(velocity, op_names::apply_rmsprop, "velocity", "RMSprop always keeps it");
  if (momentum > 0) require(momentum_slot, op_names::apply_rmsprop, "momentum_slot", "momentum is > 0");
  if (centered) require(average_grad, op_names::apply_rmsprop, "average_grad", "centered is true");
  std::vector<SymbolicTensor> in{var, grad, lr, velocity};
  if (momentum_slot.defined()) in.push_back(momentum_slot);
  if (centered) in.push_back(average_grad);
  return &var.graph().add_node(op_names::apply_rmsprop, in,
                               {{"rho", rho},
                                {"momentum", momentum},
                                {"epsilon", epsilon},
                                {"centered", centered},
                                {"has_momentum", momentum_slot.defined()},
                                {"has_average_grad", centered},
                                {"weight_decay", weight_decay}});
}

Node* apply_adam(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                 const SymbolicTensor& iteration, const SymbolicTensor& m, const SymbolicTensor& v,
                 const SymbolicTensor& v_hat, double beta_1, double beta_2, double epsilon, bool amsgrad,
                 double weight_decay) {
  require(m, op_names::apply_adam, "m", "Adam always keeps it");
  require(v, op_names::apply_adam, "v", "Adam always keeps it");
  if (amsgrad) require(v_hat, op_names::apply_adam, "v_hat", "amsgrad is true");
  if (weight_decay < 0) raise<ValueError>("apply_adam: weight_decay must be >= 0, got {}", weight_decay);
  std::vector<SymbolicTensor> in{var, grad, lr, iteration, m, v};
  if (amsgrad) in.push_back(v_hat);
  return &var.graph().add_node(op_names::apply_adam, in,
                               {{"beta_1", beta_1},
                                {"beta_2", beta_2},
                                {"epsilon", epsilon},
                                {"amsgrad", amsgrad},
                                {"weight_decay", weight_decay},
                                {"has_v_hat", amsgrad}});
}

Node* apply_adagrad(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                    const SymbolicTensor& accumulator, double epsilon, double weight_decay) {
  require(accumulator, op_names::apply_adagrad, "accumulator", "Adagrad always keeps it");
  check_decay(op_names::apply_adagrad, weight_decay);
  return &var.graph().add_node(op_names::apply_adagrad, {var, grad, lr, accumulator},
                               {{"epsilon", epsilon}, {"weight_decay", weight_decay}});
}

Node* apply_adadelta(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                     const SymbolicTensor& accumulated_grad, const SymbolicTensor& accumulated_delta, double rho,
                     double epsilon, double weight_decay) {
  check_decay(op_names::apply_adadelta, weight_decay);
  require(accumulated_grad, op_names::apply_adadelta, "accumulated_grad", "Adadelta always keeps it");
  require(accumulated_delta, op_names::apply_adadelta, "accumulated_delta", "Adadelta always keeps it");
  return &var.graph().add_node(op_names::apply_adadelta, {var, grad, lr, accumulated_grad, accumulated_delta},
                               {{"rho", rho}, {"epsilon", epsilon}, {"weight_decay", weight_decay}});
}

Node* apply_adamax(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                   const SymbolicTensor& iteration, const SymbolicTensor& m, const SymbolicTensor& u, double beta_1,
                   double beta_2, double epsilon, double weight_decay) {
  require(m, op_names::apply_adamax, "m", "Adamax always keeps it");
  require(u, op_names::apply_adamax, "u", "Adamax always keeps it");
  check_decay(op_names::apply_adamax, weight_decay);
  return &var.graph().add_node(
      op_names::apply_adamax, {var, grad, lr, iteration, m, u},
      {{"beta_1", beta_1}, {"beta_2", beta_2}, {"epsilon", epsilon}, {"weight_decay", weight_decay}});
}

Node* apply_nadam(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                  const SymbolicTensor& iteration, const SymbolicTensor& m, const SymbolicTensor& v, double beta_1,
                  double beta_2, double epsilon, double weight_decay) {
  require(m, op_names::apply_nadam, "m", "Nadam always keeps it");
  require(v, op_names::apply_nadam, "v", "Nadam always keeps it");
  check_decay(op_names::apply_nadam, weight_decay);
  return &var.graph().add_node(
      op_names::apply_nadam, {var, grad, lr, iteration, m, v},
      {{"beta_1", beta_1}, {"beta_2", beta_2}, {"epsilon", epsilon}, {"weight_decay", weight_decay}});
}

Node* apply_lion(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                 const SymbolicTensor& m, double beta_1, double beta_2, double weight_decay) {
  require(m, op_names::apply_lion, "m", "Lion always keeps it");
  check_decay(op_names::apply_lion, weight_decay);
  return &var.graph().add_node(op_names::apply_lion, {var, grad, lr, m},
                               {{"beta_1", beta_1}, {"beta_2", beta_2}, {"weight_decay", weight_decay}});
}

Node* apply_ftrl(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                 const SymbolicTensor& accumulator, const SymbolicTensor& linear, const FtrlParams& p,
                 double weight_decay) {
  require(accumulator, op_names::apply_ftrl, "accumulator", "Ftrl always keeps it");
  require(linear, op_names::apply_ftrl, "linear", "Ftrl always keeps it");
  check_decay(op_names::apply_ftrl, weight_decay);
  return &var.graph().add_node(op_names::apply_ftrl, {var, grad, lr, accumulator, linear},
                               {{"learning_rate_power", p.learning_rate_power},
                                {"l1", p.l1},
                                {"l2", p.l2},
                                {"l2_shrinkage", p.l2_shrinkage},
                                {"beta", p.beta},
                                {"weight_decay", weight_decay}});
}

Node* apply_ema(const SymbolicTensor& average, const SymbolicTensor& var, const SymbolicTensor& iteration,
                double momentum) {
  if (!(momentum >= 0 && momentum <= 1))
    raise<ValueError>("apply_ema: momentum must be in [0, 1], got {}", momentum);
  return &average.graph().add_node(op_names::apply_ema, {average, var, iteration}, {{"momentum", momentum}});
}

}  // namespace ops

namespace {

bool is_scalar(const Shape& s) {
  for (auto d : s.dims())
    if (d != 1) return false;
  return true;  // rank 0, or every dimension 1
}

// Checks the inputs every update shares: var (float), grad and the slots (var's shape and dtype),
// and the scalars (lr, iteration: var's dtype). `names` lists the expected inputs in order.
std::vector<TensorSpec> update_shape(const std::vector<TensorSpec>& in, const std::vector<const char*>& names) {
  if (in.size() != names.size()) raise<ValueError>("expected {} inputs, got {}", names.size(), in.size());
  const TensorSpec& var = in[0];
  expect_floating(var, "var");
  for (std::size_t i = 1; i < in.size(); ++i) {
    std::string_view name = names[i];
    expect_same_dtype(var, in[i], "var", names[i]);
    if (name == "lr" || name == "iteration") {
      if (!is_scalar(in[i].shape))
        raise<ShapeError>("{} must be a scalar, got shape {}", name, in[i].shape.to_string());
    } else if (!in[i].shape.compatible_with(var.shape)) {
      raise<ShapeError>("{} has shape {}, but var has shape {}; they must match", name, in[i].shape.to_string(),
                        var.shape.to_string());
    }
  }
  return {};
}

std::vector<TensorSpec> sgd_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  std::vector<const char*> names{"var", "grad", "lr"};
  if (attrs.get_bool("has_momentum")) names.push_back("momentum_slot");
  return update_shape(in, names);
}

std::vector<TensorSpec> rmsprop_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  std::vector<const char*> names{"var", "grad", "lr", "velocity"};
  if (attrs.get_bool("has_momentum")) names.push_back("momentum_slot");
  if (attrs.get_bool("has_average_grad")) names.push_back("average_grad");
  return update_shape(in, names);
}

std::vector<TensorSpec> adam_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  std::vector<const char*> names{"var", "grad", "lr", "iteration", "m", "v"};
  if (attrs.get_bool("has_v_hat")) names.push_back("v_hat");
  return update_shape(in, names);
}

}  // namespace

void register_optimizer_ops() {
  register_op({.name = op_names::apply_sgd, .shape = sgd_shape, .mutated_inputs = {0, 3}});
  register_op({.name = op_names::apply_rmsprop, .shape = rmsprop_shape, .mutated_inputs = {0, 3, 4, 5}});
  register_op({.name = op_names::apply_adam, .shape = adam_shape, .mutated_inputs = {0, 4, 5, 6}});
  register_op({.name = op_names::apply_adagrad,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     return update_shape(in, {"var", "grad", "lr", "accumulator"});
                   },
               .mutated_inputs = {0, 3}});
  register_op({.name = op_names::apply_adamax,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     return update_shape(in, {"var", "grad", "lr", "iteration", "m", "u"});
                   },
               .mutated_inputs = {0, 4, 5}});
  register_op({.name = op_names::apply_nadam,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     return update_shape(in, {"var", "grad", "lr", "iteration", "m", "v"});
                   },
               .mutated_inputs = {0, 4, 5}});
  register_op({.name = op_names::apply_lion,
               .shape = [](const std::vector<TensorSpec>& in,
                           const Attrs&) { return update_shape(in, {"var", "grad", "lr", "m"}); },
               .mutated_inputs = {0, 3}});
  register_op({.name = op_names::apply_ftrl,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     return update_shape(in, {"var", "grad", "lr", "accumulator", "linear"});
                   },
               .mutated_inputs = {0, 3, 4}});
  // (average, var, iteration): the average is written, the variable read.
  register_op({.name = op_names::apply_ema,
               .shape = [](const std::vector<TensorSpec>& in,
                           const Attrs&) { return update_shape(in, {"average", "var", "iteration"}); },
               .mutated_inputs = {0}});
  register_op({.name = op_names::apply_adadelta,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     return update_shape(in, {"var", "grad", "lr", "accumulated_grad", "accumulated_delta"});
                   },
               .mutated_inputs = {0, 3, 4}});
}

}  // namespace tower
