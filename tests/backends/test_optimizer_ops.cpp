// Optimizer update ops: several steps of each apply_* on variables, for every option combination,
// against a plain scalar re-implementation of Keras 3's rules; plus build-time errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/variable.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::random_tensor;

namespace {

using State = std::vector<std::vector<double>>;  // [0] the variable, [1..] its slots
using Syms = std::vector<SymbolicTensor>;        // variable reads, same order
using BuildFn = std::function<Node*(const Syms& vars, const SymbolicTensor& grad, const SymbolicTensor& lr,
                                    const SymbolicTensor& iteration)>;
// One reference step on every element: state values, the gradient, lr and the 1-based step t.
using RefFn = std::function<void(std::vector<double*>& s, double g, double lr, double t)>;

const Shape kShape{5, 9};

// Runs `steps` updates of the op `build` makes on a variable with random values and slots
// starting at slot_init, feeding a fresh random gradient each step, and compares the variable and
// its slots with `ref` after every step.
void check_updates(DType dtype, const std::vector<double>& slot_init, double lr, const BuildFn& build, const RefFn& ref,
                   int steps = 5) {
  CAPTURE(dtype_name(dtype));
  Graph g;
  auto as_dtype = [&](const Tensor& t) {
    return dtype == DType::float64 ? t : Tensor::from_vector(t.shape(), t.to_vector<float>());
  };
  std::vector<VariablePtr> vars{make_variable("var", as_dtype(random_tensor(kShape, 11)))};
  for (std::size_t k = 0; k < slot_init.size(); ++k)
    vars.push_back(make_variable("slot" + std::to_string(k), Tensor::full(kShape, slot_init[k], dtype), false));
  State state;
  for (auto& v : vars) state.push_back(v->value().to_vector<double>());
  Syms syms;
  for (auto& v : vars) syms.push_back(g.variable(v));
  auto grad = g.placeholder(kShape, dtype, "grad");
  auto lr_t = g.constant(Tensor::scalar(lr, dtype), "lr");
  auto iteration = g.placeholder({}, dtype, "iteration");
  Node* update = build(syms, grad, lr_t, iteration);
  REQUIRE(update != nullptr);
  CHECK(update->num_outputs() == 0);

  Executor executor;
  const double tol = dtype == DType::float64 ? 1e-12 : 2e-5;
  for (int step = 1; step <= steps; ++step) {
    CAPTURE(step);
    Tensor gv = as_dtype(random_tensor(kShape, 100 + static_cast<std::uint64_t>(step)));
    // Reference in double from the values the op actually holds (float32 rounding stays per step).
    State before = state;
    auto gd = gv.to_vector<double>();
    double lr_d = Tensor::scalar(lr, dtype).item();
    for (std::size_t i = 0; i < gd.size(); ++i) {
      std::vector<double*> s;
      for (auto& v : state) s.push_back(&v[i]);
      ref(s, gd[i], lr_d, step);
    }
    executor.run({{grad, gv}, {iteration, Tensor::scalar(step, dtype)}}, {}, {update});
    for (std::size_t k = 0; k < vars.size(); ++k) {
      CAPTURE(k);
      check_close(vars[k]->value(), state[k], tol, tol);
      state[k] = vars[k]->value().to_vector<double>();  // continue from the op's own values
    }
    CHECK(before[0] != state[0]);  // the variable moved
  }
}


const DType kDTypes[] = {DType::float64, DType::float32};

}  // namespace

TEST_CASE("optimizer: apply_sgd, plain, momentum and nesterov") {
  for (DType dtype : kDTypes) {
    // Plain: var -= lr * g.
    check_updates(dtype, {}, 0.1,
                  [](const Syms& v, auto& g, auto& lr, auto&) { return ops::apply_sgd(v[0], g, lr, {}); },
                  [](std::vector<double*>& s, double g, double lr, double) { *s[0] -= lr * g; });
    for (bool nesterov : {false, true}) {
      CAPTURE(nesterov);
      check_updates(
          dtype, {0.0}, 0.1,
          [&](const Syms& v, auto& g, auto& lr, auto&) { return ops::apply_sgd(v[0], g, lr, v[1], 0.9, nesterov); },
          [&](std::vector<double*>& s, double g, double lr, double) {
            double& w = *s[0];
            double& m = *s[1];
            m = 0.9 * m - lr * g;
            if (nesterov) w += 0.9 * m - lr * g;
            else w += m;
          });
    }
  }
}

TEST_CASE("optimizer: apply_rmsprop, plain, momentum and centered") {
  const double rho = 0.8, eps = 1e-7;
  for (DType dtype : kDTypes)
    for (double momentum : {0.0, 0.5})
      for (bool centered : {false, true}) {
        CAPTURE(momentum);
        CAPTURE(centered);
        // Slots: velocity, then momentum and average_grad where used.
        std::vector<double> init{0.0};
        if (momentum > 0) init.push_back(0.0);
        if (centered) init.push_back(0.0);
        check_updates(
            dtype, init, 0.01,
            [&](const Syms& v, auto& g, auto& lr, auto&) {
              std::size_t k = 2;
              SymbolicTensor mom = momentum > 0 ? v[k++] : SymbolicTensor{};
              SymbolicTensor avg = centered ? v[k++] : SymbolicTensor{};
              return ops::apply_rmsprop(v[0], g, lr, v[1], mom, avg, rho, momentum, eps, centered);
            },
            [&](std::vector<double*>& s, double g, double lr, double) {
              double& w = *s[0];
              double& vel = *s[1];
              std::size_t k = 2;
              double* mom = momentum > 0 ? s[k++] : nullptr;
              double* avg = centered ? s[k++] : nullptr;
              vel = rho * vel + (1 - rho) * g * g;
              double denominator;
              if (centered) {
                *avg = rho * *avg + (1 - rho) * g;
                denominator = vel - *avg * *avg + eps;
              } else {
                denominator = vel + eps;
              }
              double increment = lr * g / std::sqrt(denominator);
              if (mom) {
                *mom = momentum * *mom + increment;
                w -= *mom;
              } else {
                w -= increment;
              }
            });
      }
}

TEST_CASE("optimizer: apply_adam, amsgrad and weight decay (AdamW)") {
  const double b1 = 0.9, b2 = 0.999, eps = 1e-7;
  for (DType dtype : kDTypes)
    for (bool amsgrad : {false, true})
      for (double wd : {0.0, 0.1}) {
        CAPTURE(amsgrad);
        CAPTURE(wd);
        std::vector<double> init{0.0, 0.0};
        if (amsgrad) init.push_back(0.0);
        check_updates(
            dtype, init, 0.01,
            [&](const Syms& v, auto& g, auto& lr, auto& t) {
              return ops::apply_adam(v[0], g, lr, t, v[1], v[2], amsgrad ? v[3] : SymbolicTensor{}, b1, b2, eps,
                                     amsgrad, wd);
            },
            [&](std::vector<double*>& s, double g, double lr, double t) {
              double& w = *s[0];
              double& m = *s[1];
              double& v = *s[2];
              w -= w * wd * lr;  // base_optimizer._apply_weight_decay, before the update
              double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
              m += (g - m) * (1 - b1);
              v += (g * g - v) * (1 - b2);
              double denom_v = v;
              if (amsgrad) {
                *s[3] = std::max(*s[3], v);
                denom_v = *s[3];
              }
              w -= alpha * m / (std::sqrt(denom_v) + eps);
            });
      }
}

TEST_CASE("optimizer: apply_adagrad") {
  for (DType dtype : kDTypes)
    check_updates(
        dtype, {0.1}, 0.05,
        [](const Syms& v, auto& g, auto& lr, auto&) { return ops::apply_adagrad(v[0], g, lr, v[1], 1e-7); },
        [](std::vector<double*>& s, double g, double lr, double) {
          *s[1] += g * g;
          *s[0] -= lr * g / std::sqrt(*s[1] + 1e-7);
        });
}

TEST_CASE("optimizer: apply_adadelta") {
  const double rho = 0.95, eps = 1e-7;
  for (DType dtype : kDTypes)
    check_updates(
        dtype, {0.0, 0.0}, 1.0,
        [&](const Syms& v, auto& g, auto& lr, auto&) { return ops::apply_adadelta(v[0], g, lr, v[1], v[2], rho, eps); },
        [&](std::vector<double*>& s, double g, double lr, double) {
          double& w = *s[0];
          double& ag = *s[1];
          double& ad = *s[2];
          ag = rho * ag + (1 - rho) * g * g;
          double delta = -std::sqrt(ad + eps) / std::sqrt(ag + eps) * g;
          ad = rho * ad + (1 - rho) * delta * delta;
          w += lr * delta;
        });
}

TEST_CASE("optimizer: a large variable is updated across threads") {
  Graph g;
  const Shape shape{300, 400};  // more than one parallel chunk
  Tensor w0 = random_tensor(shape, 1, 0.1, 1.0, false, DType::float32);
  Tensor gv = random_tensor(shape, 2, 0.1, 1.0, false, DType::float32);
  auto var = make_variable("w", w0.clone());
  Node* update = ops::apply_sgd(g.variable(var), g.constant(gv), g.constant(Tensor::scalar(0.5)), {});
  Executor().run({}, {}, {update});
  auto w = w0.to_vector<float>(), gr = gv.to_vector<float>();
  std::vector<double> expected(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) expected[i] = w[i] - gr[i] * 0.5f;
  check_close(var->value(), expected, 0, 1e-7);
}

TEST_CASE("optimizer: bad inputs are rejected when the graph is built") {
  Graph g;
  auto w = g.variable(make_variable("w", Tensor::zeros({3, 4})));
  auto m = g.variable(make_variable("m", Tensor::zeros({3, 4})));
  auto lr = g.constant(Tensor::scalar(0.1));

  auto msg = message_of<ShapeError>([&] { ops::apply_sgd(w, g.placeholder({4, 3}), lr, {}); });
  CHECK(contains(msg, "apply_sgd"));
  CHECK(contains(msg, "(3, 4)"));
  CHECK(contains(msg, "(4, 3)"));

  auto grad = g.placeholder({3, 4});
  CHECK_THROWS_AS(ops::apply_sgd(w, grad, g.constant(Tensor::zeros({2})), {}), ShapeError);
  CHECK_THROWS_AS(ops::apply_sgd(w, g.placeholder({3, 4}, DType::float64), lr, {}), DTypeError);
  CHECK_THROWS_AS(ops::apply_sgd(w, grad, lr, {}, 0.9), ValueError);  // momentum without a slot
  CHECK_THROWS_AS(ops::apply_sgd(w, grad, lr, m, 1.5), ValueError);
  CHECK_THROWS_AS(ops::apply_sgd(g.placeholder({3, 4}), grad, lr, {}), ValueError);  // not a variable
  auto small = g.variable(make_variable("small", Tensor::zeros({3})));
  auto msg2 = message_of<ShapeError>([&] { ops::apply_adagrad(w, grad, lr, small); });
  CHECK(contains(msg2, "apply_adagrad"));
  CHECK(contains(msg2, "accumulator"));
  CHECK_THROWS_AS(ops::apply_rmsprop(w, grad, lr, m, {}, {}, 0.9, 0.0, 1e-7, true), ValueError);
  CHECK_THROWS_AS(ops::apply_adam(w, grad, lr, lr, m, {}, {}), ValueError);
  CHECK_THROWS_AS(ops::apply_adam(w, grad, lr, g.constant(Tensor::zeros({3})), m, m, {}), ShapeError);
  CHECK_THROWS_AS(ops::apply_adadelta(w, grad, lr, m, {}), ValueError);
  auto wi = g.variable(make_variable("wi", Tensor::zeros({3}, DType::int32)));
  CHECK_THROWS_AS(ops::apply_adagrad(wi, g.placeholder({3}, DType::int32), g.constant(Tensor::scalar(1, DType::int32)),
                                     g.variable(make_variable("acc", Tensor::zeros({3}, DType::int32)))),
                  DTypeError);
}

TEST_CASE("optimizer: apply_adamax, apply_nadam, apply_lion and apply_ftrl (Keras 3's rules)") {
  const double b1 = 0.8, b2 = 0.9, eps = 1e-7;
  for (DType dtype : kDTypes) {
    check_updates(
        dtype, {0.0, 0.0}, 0.01,
        [&](const Syms& v, auto& g, auto& lr, auto& t) {
          return ops::apply_adamax(v[0], g, lr, t, v[1], v[2], b1, b2, eps);
        },
        [&](std::vector<double*>& s, double g, double lr, double t) {
          *s[1] += (g - *s[1]) * (1 - b1);
          *s[2] = std::max(b2 * *s[2], std::abs(g));
          *s[0] -= lr * *s[1] / ((1 - std::pow(b1, t)) * (*s[2] + eps));
        });
    check_updates(
        dtype, {0.0, 0.0}, 0.01,
        [&](const Syms& v, auto& g, auto& lr, auto& t) {
          return ops::apply_nadam(v[0], g, lr, t, v[1], v[2], b1, b2, eps, 0.1);
        },
        [&](std::vector<double*>& s, double g, double lr, double t) {
          const auto u = [&](double k) { return b1 * (1 - 0.5 * std::pow(0.96, k)); };
          double product = 1;
          for (double k = 1; k <= t; ++k) product *= u(k);
          *s[0] -= *s[0] * 0.1 * lr;
          *s[1] += (g - *s[1]) * (1 - b1);
          *s[2] += (g * g - *s[2]) * (1 - b2);
          const double m_hat = u(t + 1) * *s[1] / (1 - product * u(t + 1)) + (1 - u(t)) * g / (1 - product);
          *s[0] -= m_hat * lr / (std::sqrt(*s[2] / (1 - std::pow(b2, t))) + eps);
        });
    check_updates(
        dtype, {0.0}, 0.01,
        [&](const Syms& v, auto& g, auto& lr, auto&) { return ops::apply_lion(v[0], g, lr, v[1], b1, b2, 0.2); },
        [&](std::vector<double*>& s, double g, double lr, double) {
          *s[0] -= *s[0] * 0.2 * lr;
          const double c = b1 * *s[1] + (1 - b1) * g;
          *s[0] -= lr * ((c > 0) - (c < 0));
          *s[1] = b2 * *s[1] + (1 - b2) * g;
        });
    const ops::FtrlParams p{.learning_rate_power = -0.6, .l1 = 0.05, .l2 = 0.1, .l2_shrinkage = 0.02, .beta = 0.3};
    check_updates(
        dtype, {0.1, 0.0}, 0.1,
        [&](const Syms& v, auto& g, auto& lr, auto&) { return ops::apply_ftrl(v[0], g, lr, v[1], v[2], p); },
        [&](std::vector<double*>& s, double g, double lr, double) {
          double& w = *s[0];
          const double l2 = p.l2 + p.beta / (2 * lr), n = *s[1] + g * g;
          *s[2] += g + 2 * p.l2_shrinkage * w - (std::pow(n, 0.6) - std::pow(*s[1], 0.6)) / lr * w;
          w = (std::clamp(*s[2], -p.l1, p.l1) - *s[2]) / (std::pow(n, 0.6) / lr + 2 * l2);
          *s[1] = n;
        });
  }
}

TEST_CASE("optimizer: weight_decay on apply_sgd, apply_rmsprop, apply_adagrad, apply_adadelta; apply_ema") {
  const double wd = 0.3;
  for (DType dtype : kDTypes) {
    check_updates(
        dtype, {0.0}, 0.1,
        [&](const Syms& v, auto& g, auto& lr, auto&) { return ops::apply_sgd(v[0], g, lr, v[1], 0.9, false, wd); },
        [&](std::vector<double*>& s, double g, double lr, double) {
          *s[0] -= *s[0] * wd * lr;
          *s[1] = 0.9 * *s[1] - lr * g;
          *s[0] += *s[1];
        });
    check_updates(
        dtype, {0.0}, 0.01,
        [&](const Syms& v, auto& g, auto& lr, auto&) {
          return ops::apply_rmsprop(v[0], g, lr, v[1], {}, {}, 0.9, 0.0, 1e-7, false, wd);
        },
        [&](std::vector<double*>& s, double g, double lr, double) {
          *s[0] -= *s[0] * wd * lr;
          *s[1] = 0.9 * *s[1] + 0.1 * g * g;
          *s[0] -= lr * g / std::sqrt(*s[1] + 1e-7);
        });
    check_updates(
        dtype, {0.1}, 0.05,
        [&](const Syms& v, auto& g, auto& lr, auto&) { return ops::apply_adagrad(v[0], g, lr, v[1], 1e-7, wd); },
        [&](std::vector<double*>& s, double g, double lr, double) {
          *s[0] -= *s[0] * wd * lr;
          *s[1] += g * g;
          *s[0] -= lr * g / std::sqrt(*s[1] + 1e-7);
        });
    check_updates(
        dtype, {0.0, 0.0}, 1.0,
        [&](const Syms& v, auto& g, auto& lr, auto&) {
          return ops::apply_adadelta(v[0], g, lr, v[1], v[2], 0.95, 1e-7, wd);
        },
        [&](std::vector<double*>& s, double g, double lr, double) {
          *s[0] -= *s[0] * wd * lr;
          *s[1] = 0.95 * *s[1] + 0.05 * g * g;
          const double delta = -std::sqrt(*s[2] + 1e-7) * g / std::sqrt(*s[1] + 1e-7);
          *s[2] = 0.95 * *s[2] + 0.05 * delta * delta;
          *s[0] += lr * delta;
        });
    // apply_ema(average, var, iteration): the first step copies, later ones average with momentum 0.9.
    check_updates(
        dtype, {0.25}, 0.0,
        [&](const Syms& v, auto&, auto&, auto& t) { return ops::apply_ema(v[0], v[1], t, 0.9); },
        [&](std::vector<double*>& s, double, double, double t) {
          const double m = t != 1 ? 0.9 : 0.0;
          *s[0] = m * *s[0] + (1 - m) * *s[1];
        },
        1);
  }
  CHECK(contains(message_of<ValueError>([] {
                   Graph g;
                   auto v = g.variable(make_variable("v", Tensor::zeros({2})));
                   ops::apply_sgd(v, v, g.constant(Tensor::scalar(0.1)), {}, 0.0, false, -1.0);
                 }),
                 "weight_decay must be >= 0"));
  CHECK(contains(message_of<ValueError>([] {
                   Graph g;
                   auto v = g.variable(make_variable("v", Tensor::zeros({2})));
                   ops::apply_ema(v, v, g.constant(Tensor::scalar(1.0)), 1.5);
                 }),
                 "momentum must be in [0, 1]"));
}
