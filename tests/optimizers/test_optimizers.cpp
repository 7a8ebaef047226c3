// Optimizers: three steps of each against a plain double-precision transcription of Keras 3's update
// rules, clipping, slots, learning rates and schedules (values printed by keras 3.15).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "core/executor.h"
#include "optimizers/optimizers.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::optimizers;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

const std::vector<double> kStart = {0.5, -1.0, 2.0, 0.25};
const std::vector<std::vector<double>> kGrads = {{0.1, -0.2, 0.3, 0.0}, {-0.4, 0.5, 0.05, 1.0}, {0.2, 0.2, -0.6, -0.3}};

// Runs len(grads) steps of `optimizer` on a variable starting at kStart; returns its values.
std::vector<double> run_steps(Optimizer& optimizer, const std::vector<std::vector<double>>& grads = kGrads) {
  auto var = make_variable("w:0", Tensor::from_vector<float>({4}, {0.5f, -1.0f, 2.0f, 0.25f}));
  Graph graph;
  auto grad = graph.placeholder({4}, DType::float32, "grad");
  auto lr = graph.placeholder({}, DType::float32, "lr");
  auto iteration = graph.placeholder({}, DType::float32, "iteration");
  auto targets = optimizer.apply_gradients(graph, {grad}, {var}, lr, iteration);
  Executor executor;
  for (const auto& g : grads) {
    std::vector<float> gf(g.begin(), g.end());
    executor.run({{grad, Tensor::from_vector<float>({4}, gf)},
                  {lr, Tensor::scalar(optimizer.current_learning_rate())},
                  {iteration, Tensor::scalar(static_cast<double>(optimizer.iterations() + 1))}},
                 {}, targets);
    optimizer.finish_step();
  }
  return var->value().to_vector<double>();
}

// The same steps in double precision with `rule(w, g, t)` updating one element (t is 1-based);
// state lives in the rule's captures, one entry per element.
std::vector<double> reference(const std::function<void(std::size_t i, double& w, double g, int t)>& rule) {
  auto w = kStart;
  for (std::size_t t = 0; t < kGrads.size(); ++t)
    for (std::size_t i = 0; i < w.size(); ++i) rule(i, w[i], kGrads[t][i], static_cast<int>(t) + 1);
  return w;
}

void check_same(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

}  // namespace

TEST_CASE("SGD: plain, momentum and Nesterov follow Keras's rules") {
  SGD plain(0.1);
  check_same(run_steps(plain), reference([](std::size_t, double& w, double g, int) { w -= 0.1 * g; }));
  for (bool nesterov : {false, true}) {
    SGD sgd(0.1, {.momentum = 0.9, .nesterov = nesterov});
    std::vector<double> m(4, 0.0);
    check_same(run_steps(sgd), reference([&](std::size_t i, double& w, double g, int) {
                 m[i] = 0.9 * m[i] - 0.1 * g;
                 w += nesterov ? 0.9 * m[i] - 0.1 * g : m[i];
               }));
  }
}

TEST_CASE("RMSprop: plain and centered with momentum") {
  RMSprop plain(0.01);
  std::vector<double> v(4, 0.0);
  check_same(run_steps(plain), reference([&](std::size_t i, double& w, double g, int) {
               v[i] = 0.9 * v[i] + 0.1 * g * g;
               w -= 0.01 * g / std::sqrt(v[i] + 1e-7);
             }));
  RMSprop centered(0.01, {.rho = 0.8, .momentum = 0.5, .centered = true});
  std::vector<double> v2(4, 0.0), mg(4, 0.0), m(4, 0.0);
  check_same(run_steps(centered), reference([&](std::size_t i, double& w, double g, int) {
               v2[i] = 0.8 * v2[i] + 0.2 * g * g;
               mg[i] = 0.8 * mg[i] + 0.2 * g;
               m[i] = 0.5 * m[i] + 0.01 * g / std::sqrt(v2[i] - mg[i] * mg[i] + 1e-7);
               w -= m[i];
             }));
}

TEST_CASE("Adam, AMSGrad and AdamW") {
  for (bool amsgrad : {false, true}) {
    Adam adam(0.01, {.amsgrad = amsgrad});
    std::vector<double> m(4, 0.0), v(4, 0.0), vhat(4, 0.0);
    check_same(run_steps(adam), reference([&](std::size_t i, double& w, double g, int t) {
                 m[i] += (g - m[i]) * 0.1;
                 v[i] += (g * g - v[i]) * 0.001;
                 vhat[i] = std::max(vhat[i], v[i]);
                 double alpha = 0.01 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
                 w -= alpha * m[i] / (std::sqrt(amsgrad ? vhat[i] : v[i]) + 1e-7);
               }));
  }
  AdamW adamw(0.01, {.weight_decay = 0.1});
  std::vector<double> m(4, 0.0), v(4, 0.0);
  check_same(run_steps(adamw), reference([&](std::size_t i, double& w, double g, int t) {
               w -= w * 0.1 * 0.01;
               m[i] += (g - m[i]) * 0.1;
               v[i] += (g * g - v[i]) * 0.001;
               double alpha = 0.01 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
               w -= alpha * m[i] / (std::sqrt(v[i]) + 1e-7);
             }));
}

TEST_CASE("Adagrad and Adadelta") {
  Adagrad adagrad(0.1);
  std::vector<double> acc(4, 0.1);
  check_same(run_steps(adagrad), reference([&](std::size_t i, double& w, double g, int) {
               acc[i] += g * g;
               w -= 0.1 * g / std::sqrt(acc[i] + 1e-7);
             }));
  Adadelta adadelta(1.0);
  std::vector<double> ag(4, 0.0), ad(4, 0.0);
  check_same(run_steps(adadelta), reference([&](std::size_t i, double& w, double g, int) {
               ag[i] = 0.95 * ag[i] + 0.05 * g * g;
               double delta = -std::sqrt(ad[i] + 1e-7) / std::sqrt(ag[i] + 1e-7) * g;
               ad[i] = 0.95 * ad[i] + 0.05 * delta * delta;
               w += delta;
             }));
}

TEST_CASE("clipnorm, clipvalue and global_clipnorm") {
  const std::vector<std::vector<double>> big = {{3.0, 4.0, 0.0, 0.0}};  // norm 5
  SGD clipnorm(1.0, {.clipnorm = 1.0});
  check_same(run_steps(clipnorm, big), {0.5 - 0.6, -1.0 - 0.8, 2.0, 0.25});
  SGD clipvalue(1.0, {.clipvalue = 3.5});
  check_same(run_steps(clipvalue, big), {0.5 - 3.0, -1.0 - 3.5, 2.0, 0.25});
  SGD global(1.0, {.global_clipnorm = 2.5});
  check_same(run_steps(global, big), {0.5 - 1.5, -1.0 - 2.0, 2.0, 0.25});
  SGD small(1.0, {.clipnorm = 10.0});  // below the limit: unchanged
  check_same(run_steps(small, big), {0.5 - 3.0, -1.0 - 4.0, 2.0, 0.25});
  CHECK(contains(message_of<ValueError>([] { SGD(0.1, {.clipnorm = 1.0, .global_clipnorm = 1.0}); }), "not both"));
}

TEST_CASE("slots persist across graphs; names; learning rate; get()") {
  Adam adam(0.01);
  auto first = run_steps(adam);
  CHECK(adam.iterations() == 3);
  CHECK(adam.variables().size() == 2);
  CHECK(adam.variables()[0]->name() == "Adam/w/m:0");
  CHECK(adam.variables()[1]->name() == "Adam/w/v:0");
  CHECK(first != kStart);

  // A second graph for another variable adds its own slots; the same variable reuses them.
  auto var = make_variable("dense/kernel:0", Tensor::zeros({2}));
  for (int i = 0; i < 2; ++i) {
    Graph graph;
    auto lr = graph.placeholder({});
    auto it = graph.placeholder({});
    adam.apply_gradients(graph, {graph.constant(Tensor::zeros({2}))}, {var}, lr, it);
  }
  CHECK(adam.variables().size() == 4);
  CHECK(adam.variables()[2]->name() == "Adam/dense/kernel/m:0");

  adam.set_learning_rate(0.5);
  CHECK(adam.current_learning_rate() == 0.5);
  auto scheduled = Adam(std::make_shared<ExponentialDecay>(0.1, 10, 0.5));
  CHECK(scheduled.has_schedule());
  scheduled.set_iterations(10);
  CHECK(scheduled.current_learning_rate() == doctest::Approx(0.05));

  CHECK(get("Adam")->name() == "Adam");
  CHECK(get("rmsprop")->name() == "RMSprop");
  CHECK(get("ADADELTA")->name() == "Adadelta");
  CHECK(get("adamw")->current_learning_rate() == doctest::Approx(0.001));
  CHECK(get("sgd")->current_learning_rate() == doctest::Approx(0.01));
  auto msg = message_of<ValueError>([] { get("adamax"); });
  CHECK(contains(msg, "\"adamax\""));
  CHECK(contains(msg, "rmsprop"));
}

TEST_CASE("schedules match Keras 3") {
  // keras.optimizers.schedules.*(...)(step) for steps 0, 5, 10, 15, 25, 30 (keras 3.15).
  const std::vector<std::int64_t> steps = {0, 5, 10, 15, 25, 30};
  ExponentialDecay exp(0.1, 10, 0.5), stair(0.1, 10, 0.5, true);
  PiecewiseConstantDecay piecewise({5, 10}, {1.0, 0.5, 0.1});
  CosineDecay cosine(0.1, 20, {.alpha = 0.1});
  CosineDecay warm(0.0, 20, {.warmup_target = 0.2, .warmup_steps = 5});
  const std::vector<std::vector<double>> keras = {
      {0.1, 0.0707106813788414, 0.05, 0.0353553406894207, 0.01767767034471035, 0.0125},
      {0.1, 0.1, 0.05, 0.05, 0.025, 0.0125},
      {1.0, 1.0, 0.5, 0.1, 0.1, 0.1},
      {0.1, 0.08681981265544891, 0.05499999597668648, 0.023180196061730385, 0.010000000707805157, 0.010000000707805157},
      {0.0, 0.2, 0.17071068286895752, 0.09999999403953552, 0.0, 0.0},
  };
  const std::vector<const LearningRateSchedule*> schedules = {&exp, &stair, &piecewise, &cosine, &warm};
  for (std::size_t s = 0; s < schedules.size(); ++s)
    for (std::size_t i = 0; i < steps.size(); ++i) {
      CAPTURE(s);
      CAPTURE(steps[i]);
      CHECK((*schedules[s])(steps[i]) == doctest::Approx(keras[s][i]).epsilon(1e-6).scale(1.0));
    }
  CHECK(contains(message_of<ValueError>([] { PiecewiseConstantDecay({1, 2}, {1.0}); }), "one value more"));
}
