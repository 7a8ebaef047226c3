// Adafactor: the update composed of existing elementwise and reduce ops (see adafactor.h).
#include "tower/optimizers/adafactor.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower::optimizers {

namespace {
// Keras 3's argument checks, with the fix.
AdafactorOptions checked(const AdafactorOptions& o) {
  if (!(o.clip_threshold > 0.0))
    raise<ValueError>("Adafactor: clip_threshold must be > 0, got {} (Keras's default is 1.0)", o.clip_threshold);
  if (!(o.epsilon_1 >= 0.0 && o.epsilon_2 >= 0.0))
    raise<ValueError>("Adafactor: epsilon_1 and epsilon_2 must be >= 0, got {} and {}", o.epsilon_1, o.epsilon_2);
  return o;
}

SymbolicTensor rms(const SymbolicTensor& x) { return ops::sqrt(ops::reduce_mean(ops::square(x))); }
}  // namespace

Adafactor::Adafactor(double learning_rate, const AdafactorOptions& options)
    : Optimizer(learning_rate, base_options(options)), options_(checked(options)) {}

Adafactor::Adafactor(std::shared_ptr<const LearningRateSchedule> schedule, const AdafactorOptions& options)
    : Optimizer(std::move(schedule), base_options(options)), options_(checked(options)) {}

Node* Adafactor::update_step(Graph& graph, const VariablePtr& variable, const SymbolicTensor& var_read,
                             const SymbolicTensor& grad, const SymbolicTensor& learning_rate,
                             const SymbolicTensor& iteration) {
  const DType dtype = var_read.dtype();
  const auto constant = [&](double v) { return graph.constant(Tensor::scalar(v, dtype)); };
  // Weight decay first, as the base optimizer's (here in the graph: Adafactor reads the variable).
  SymbolicTensor var = var_read;
  if (const double wd = weight_decay_for(variable); wd != 0.0)
    var = ops::subtract(var_read, ops::multiply(ops::scale(var_read, wd), learning_rate));
  const SymbolicTensor& t = iteration;  // 1-based update number
  const auto one = constant(1.0);
  const auto inverse_sqrt_t = ops::divide(one, ops::sqrt(t));
  const auto rho = ops::minimum(ops::minimum(learning_rate, inverse_sqrt_t), inverse_sqrt_t);
  const auto alpha = ops::multiply(ops::maximum(constant(options_.epsilon_2), rms(var)), rho);
  const auto g2 = ops::add(ops::square(grad), constant(options_.epsilon_1));
  const auto beta = ops::subtract(one, ops::exp(ops::scale(ops::log(t), options_.beta_2_decay)));  // 1 - t^decay
  const auto one_minus_beta = ops::subtract(one, beta);
  const auto average = [&](const SymbolicTensor& old, const SymbolicTensor& now) {
    return ops::add(ops::multiply(beta, old), ops::multiply(one_minus_beta, now));
  };
  const auto dims = variable->shape().dims();
  const auto rank = static_cast<std::int64_t>(dims.size());
  SymbolicTensor v, velocity;
  if (rank >= 2) {
    ops::Ints r_dims(dims.begin(), dims.end() - 1);
    ops::Ints c_dims(dims.begin(), dims.end() - 2);
    c_dims.push_back(dims.back());
    auto r = slot(graph, variable, "r", Shape(r_dims));  // Keras's order: r, c, velocity
    auto c = slot(graph, variable, "c", Shape(c_dims));
    velocity = slot(graph, variable, "velocity");
    const auto r_new = average(r, ops::reduce_mean(g2, {rank - 1}));
    const auto c_new = average(c, ops::reduce_mean(g2, {rank - 2}));
    const auto r_norm = ops::divide(r_new, ops::reduce_mean(r_new, {rank - 2}, true));
    ops::Ints r_shape = r_dims, c_shape(dims.begin(), dims.end() - 2);
    r_shape.push_back(1);
    c_shape.push_back(1);
    c_shape.push_back(dims.back());
    v = ops::multiply(ops::reshape(r_norm, r_shape), ops::reshape(c_new, c_shape));
    add_update(ops::assign(r, r_new));
    add_update(ops::assign(c, c_new));
  } else {
    velocity = slot(graph, variable, "velocity");
    v = average(velocity, g2);
  }
  add_update(ops::assign(velocity, v));
  const auto u = ops::divide(grad, ops::sqrt(v));
  const auto u_hat = ops::divide(u, ops::maximum(one, ops::scale(rms(u), 1.0 / options_.clip_threshold)));
  return ops::assign(var_read, ops::subtract(var, ops::multiply(alpha, u_hat)));
}

nlohmann::json Adafactor::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_2_decay"] = options_.beta_2_decay;
  c["epsilon_1"] = options_.epsilon_1;
  c["epsilon_2"] = options_.epsilon_2;
  c["clip_threshold"] = options_.clip_threshold;
  c["relative_step"] = options_.relative_step;
  return c;
}

}  // namespace tower::optimizers
