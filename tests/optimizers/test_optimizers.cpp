// Optimizers: three steps of each configuration through a Graph and an Executor fed as the trainer
// feeds them, against a plain double-precision transcription of Keras 3's update rules and against
// numbers printed by keras 3.15; clipping, slots, clone(), learning rates, get() and schedules.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>

#include "tower/core/executor.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::optimizers;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

using Values = std::vector<double>;
const Values kStart = {0.5, -1.0, 2.0, 0.25};
const std::vector<Values> kGrads = {{0.1, -0.2, 0.3, 0.0}, {-0.4, 0.5, 0.05, 1.0}, {0.2, 0.2, -0.6, -0.3}};

Tensor vec(const Values& v) {
  return Tensor::from_vector<float>({static_cast<std::int64_t>(v.size())}, {v.begin(), v.end()});
}

// Runs one step per entry of `grads` on `var` in a fresh graph, feeding the learning rate and the
// 1-based iteration as the trainer does and calling finish_step() after each run.
void run_steps(Optimizer& optimizer, const VariablePtr& var, const std::vector<Values>& grads) {
  Graph graph;
  auto grad = graph.placeholder(var->shape(), DType::float32, "grad");
  auto lr = graph.placeholder({}, DType::float32, "learning_rate");
  auto iteration = graph.placeholder({}, DType::float32, "iteration");
  auto targets = optimizer.apply_gradients(graph, {grad}, {var}, lr, iteration);
  Executor executor;
  for (const auto& g : grads) {
    executor.run({{grad, vec(g)},
                  {lr, Tensor::scalar(optimizer.current_learning_rate())},
                  {iteration, Tensor::scalar(static_cast<double>(optimizer.iterations() + 1))}},
                 {}, targets);
    optimizer.finish_step();
  }
}

// The variable's values after len(grads) steps from kStart.
Values run_steps(Optimizer& optimizer, const std::vector<Values>& grads = kGrads) {
  auto var = make_variable("w:0", vec(kStart));
  run_steps(optimizer, var, grads);
  return var->value().to_vector<double>();
}

// The same steps in double precision with `rule(i, w, g, t)` updating element i (t is 1-based);
// state lives in the rule's captures, one entry per element.
using Rule = std::function<void(std::size_t i, double& w, double g, int t)>;
Values reference(const Rule& rule) {
  auto w = kStart;
  for (std::size_t t = 0; t < kGrads.size(); ++t)
    for (std::size_t i = 0; i < w.size(); ++i) rule(i, w[i], kGrads[t][i], static_cast<int>(t) + 1);
  return w;
}

void check_same(const Values& got, const Values& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

// Keras 3's Adam (and AdamW's decay first) for lr 0.01, beta_1 0.9.
Rule adam_rule(double beta_2, bool amsgrad, double weight_decay) {
  auto m = std::make_shared<Values>(4, 0.0), v = std::make_shared<Values>(4, 0.0),
       vhat = std::make_shared<Values>(4, 0.0);
  return [=](std::size_t i, double& w, double g, int t) {
    w -= w * weight_decay * 0.01;
    (*m)[i] += (g - (*m)[i]) * 0.1;
    (*v)[i] += (g * g - (*v)[i]) * (1 - beta_2);
    (*vhat)[i] = std::max((*vhat)[i], (*v)[i]);
    double alpha = 0.01 * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(0.9, t));
    w -= alpha * (*m)[i] / (std::sqrt(amsgrad ? (*vhat)[i] : (*v)[i]) + 1e-7);
  };
}

}  // namespace

TEST_CASE("SGD: plain, momentum and Nesterov follow Keras's rules") {
  SGD plain(0.1);
  check_same(run_steps(plain), reference([](std::size_t, double& w, double g, int) { w -= 0.1 * g; }));
  for (bool nesterov : {false, true}) {
    CAPTURE(nesterov);
    SGD sgd(0.1, {.momentum = 0.9, .nesterov = nesterov});
    Values m(4, 0.0);
    check_same(run_steps(sgd), reference([&](std::size_t i, double& w, double g, int) {
                 m[i] = 0.9 * m[i] - 0.1 * g;
                 w += nesterov ? 0.9 * m[i] - 0.1 * g : m[i];
               }));
  }
  CHECK(contains(message_of<ValueError>([] { SGD(0.1, {.momentum = 1.5}); }), "momentum"));
}

TEST_CASE("RMSprop: plain, momentum, centered") {
  for (double momentum : {0.0, 0.5})
    for (bool centered : {false, true}) {
      CAPTURE(momentum);
      CAPTURE(centered);
      RMSprop rmsprop(0.01, {.rho = 0.8, .momentum = momentum, .centered = centered});
      Values v(4, 0.0), mg(4, 0.0), m(4, 0.0);
      check_same(run_steps(rmsprop), reference([&](std::size_t i, double& w, double g, int) {
                   v[i] = 0.8 * v[i] + 0.2 * g * g;
                   mg[i] = 0.8 * mg[i] + 0.2 * g;
                   double increment = 0.01 * g / std::sqrt(v[i] - (centered ? mg[i] * mg[i] : 0.0) + 1e-7);
                   m[i] = momentum * m[i] + increment;
                   w -= momentum > 0 ? m[i] : increment;
                 }));
      CHECK(rmsprop.variables().size() == 1 + (momentum > 0) + centered);
    }
}

TEST_CASE("Adam, AMSGrad and AdamW") {
  // beta_2 = 0.5 lets v shrink between steps, so AMSGrad's running maximum matters.
  for (bool amsgrad : {false, true}) {
    CAPTURE(amsgrad);
    Adam adam(0.01, {.beta_2 = 0.5, .amsgrad = amsgrad});
    check_same(run_steps(adam), reference(adam_rule(0.5, amsgrad, 0.0)));
    AdamW adamw(0.01, {.weight_decay = 0.1, .beta_2 = 0.5, .amsgrad = amsgrad});
    check_same(run_steps(adamw), reference(adam_rule(0.5, amsgrad, 0.1)));
    CHECK(adamw.variables().size() == (amsgrad ? 3u : 2u));
  }
  Adam defaults;
  check_same(run_steps(defaults),
             reference([rule = adam_rule(0.999, false, 0.0)](std::size_t i, double& w, double g, int t) {
               double before = w;
               rule(i, w, g, t);
               w = before + (w - before) / 10;  // adam_rule uses lr 0.01, the default is 0.001
             }));
  CHECK(contains(message_of<ValueError>([] { AdamW(0.01, {.weight_decay = -1.0}); }), "weight_decay"));
}

TEST_CASE("Adagrad and Adadelta") {
  Adagrad adagrad(0.1);
  Values acc(4, 0.1);  // initial_accumulator_value
  check_same(run_steps(adagrad), reference([&](std::size_t i, double& w, double g, int) {
               acc[i] += g * g;
               w -= 0.1 * g / std::sqrt(acc[i] + 1e-7);
             }));
  Adadelta adadelta(0.5, {.rho = 0.9});
  Values ag(4, 0.0), ad(4, 0.0);
  check_same(run_steps(adadelta), reference([&](std::size_t i, double& w, double g, int) {
               ag[i] = 0.9 * ag[i] + 0.1 * g * g;
               double delta = -std::sqrt(ad[i] + 1e-7) / std::sqrt(ag[i] + 1e-7) * g;
               ad[i] = 0.9 * ad[i] + 0.1 * delta * delta;
               w += 0.5 * delta;
             }));
}

TEST_CASE("every configuration matches keras 3.15") {
  // /work/venv-tf/bin/python with KERAS_BACKEND=tensorflow: v = keras.Variable(np.array(kStart, "float32")),
  // opt.apply_gradients([(g, v)]) for each g of kGrads (float32), then print(np.array(v)).
  using Schedule = std::shared_ptr<const LearningRateSchedule>;
  const std::vector<std::tuple<const char*, std::function<OptimizerPtr()>, Values>> cases = {
      {"SGD(0.1)",
       [] { return SGD(0.1).clone(); },
       {0.5100000500679016, -1.0499999523162842, 2.0250000953674316, 0.18000000715255737}},
      {"SGD(0.1, momentum=0.9)",
       [] { return SGD(0.1, {.momentum = 0.9}).clone(); },
       {0.5289000272750854, -1.0607999563217163, 1.9692001342773438, 0.09000001102685928}},
      {"SGD(0.1, momentum=0.9, nesterov=True)",
       [] { return SGD(0.1, {.momentum = 0.9, .nesterov = true}).clone(); },
       {0.5360100269317627, -1.1047199964523315, 1.9972800016403198, 0.03600000962615013}},
      {"RMSprop(0.01)",
       [] { return RMSprop(0.01).clone(); },
       {0.48471799492836, -1.0095405578613281, 1.991668462753296, 0.22791185975074768}},
      {"RMSprop(0.01, momentum=0.5)",
       [] { return RMSprop(0.01, {.momentum = 0.5}).clone(); },
       {0.4763866662979126, -1.0006065368652344, 1.9652155637741089, 0.21210047602653503}},
      {"RMSprop(0.01, rho=0.8, momentum=0.5, centered=True)",
       [] { return RMSprop(0.01, {.rho = 0.8, .momentum = 0.5, .centered = true}).clone(); },
       {0.48045414686203003, -0.9987231492996216, 1.97068190574646, 0.21981926262378693}},
      {"Adam(0.01)",
       [] { return Adam(0.01).clone(); },
       {0.4966970682144165, -0.9998517036437988, 1.9851305484771729, 0.23888583481311798}},
      {"Adam(0.01, beta_2=0.5)",
       [] { return Adam(0.01, {.beta_2 = 0.5}).clone(); },
       {0.49602121114730835, -0.9996641874313354, 1.9829941987991333, 0.23974090814590454}},
      {"Adam(0.01, beta_2=0.5, amsgrad=True)",
       [] { return Adam(0.01, {.beta_2 = 0.5, .amsgrad = true}).clone(); },
       {0.4958687424659729, -0.9985541701316833, 1.9855828285217285, 0.24062511324882507}},
      {"AdamW(0.01, weight_decay=0.1)",
       [] { return AdamW(0.01, {.weight_decay = 0.1}).clone(); },
       {0.49521297216415405, -0.9968702793121338, 1.9791643619537354, 0.23814404010772705}},
      {"AdamW(0.01, weight_decay=0.1, beta_2=0.5, amsgrad=True)",
       [] { return AdamW(0.01, {.weight_decay = 0.1, .beta_2 = 0.5, .amsgrad = true}).clone(); },
       {0.494385302066803, -0.9955731630325317, 1.9796156883239746, 0.23988232016563416}},
      {"Adagrad(0.1)",
       [] { return Adagrad(0.1).clone(); },
       {0.5109078288078308, -1.0571115016937256, 2.000499963760376, 0.18215471506118774}},
      {"Adadelta(0.5)",
       [] { return Adadelta(0.5).clone(); },
       {0.4996465742588043, -1.0007094144821167, 2.0000267028808594, 0.2495870739221573}},
      {"SGD(0.1, clipnorm=0.3)",
       [] { return SGD(0.1, {.clipnorm = 0.3}).clone(); },
       {0.4938373863697052, -1.0048270225524902, 1.9994094371795654, 0.23712025582790375}},
      {"SGD(0.1, clipvalue=0.25)",
       [] { return SGD(0.1, {.clipvalue = 0.25}).clone(); },
       {0.4949999749660492, -1.024999976158142, 1.9950000047683716, 0.25}},
      {"Adam(0.01, global_clipnorm=0.5)",
       [] { return Adam(0.01, {.global_clipnorm = 0.5}).clone(); },
       {0.4911884665489197, -0.9940565228462219, 1.9846761226654053, 0.24020422995090485}},
      {"SGD(ExponentialDecay(0.1, 1, 0.5))",
       [] { return SGD(Schedule(std::make_shared<ExponentialDecay>(0.1, 1, 0.5))).clone(); },
       {0.5049999952316284, -1.0099999904632568, 1.9824999570846558, 0.20750001072883606}},
  };
  for (const auto& [name, make, keras] : cases) {
    CAPTURE(name);
    auto optimizer = make();
    check_same(run_steps(*optimizer), keras);
  }
}

TEST_CASE("clipnorm, clipvalue and global_clipnorm") {
  const std::vector<Values> big = {{3.0, 4.0, 0.0, 0.0}};  // norm 5
  SGD clipnorm(1.0, {.clipnorm = 1.0});
  check_same(run_steps(clipnorm, big), {0.5 - 0.6, -1.0 - 0.8, 2.0, 0.25});
  SGD clipvalue(1.0, {.clipvalue = 3.5});
  check_same(run_steps(clipvalue, big), {0.5 - 3.0, -1.0 - 3.5, 2.0, 0.25});
  SGD small(1.0, {.clipnorm = 10.0});  // below the limit: unchanged
  check_same(run_steps(small, big), {0.5 - 3.0, -1.0 - 4.0, 2.0, 0.25});

  // global_clipnorm: one scale over all gradients (global norm 5 -> 2.5 halves both, keras 3.15 gives
  // a = [-1.5, 0], b = [-2]); an undefined gradient is skipped and its variable gets no update or slot.
  SGD global(1.0, {.momentum = 0.5, .global_clipnorm = 2.5});
  auto a = make_variable("a:0", Tensor::zeros({2})), b = make_variable("b:0", Tensor::zeros({1}));
  auto skipped = make_variable("c:0", Tensor::zeros({1}));
  Graph graph;
  auto lr = graph.placeholder({}), it = graph.placeholder({});
  auto targets = global.apply_gradients(
      graph, {graph.constant(vec({3.0, 0.0})), SymbolicTensor{}, graph.constant(vec({4.0}))}, {a, skipped, b}, lr, it);
  CHECK(targets.size() == 2);
  Executor().run({{lr, Tensor::scalar(1.0)}, {it, Tensor::scalar(1.0)}}, {}, targets);
  check_same(a->value().to_vector<double>(), {-1.5, 0.0});
  check_same(b->value().to_vector<double>(), {-2.0});
  CHECK(skipped->value().to_vector<double>() == Values{0.0});
  CHECK(global.variables().size() == 2);  // momentum of a and b only

  CHECK(contains(message_of<ValueError>([] { SGD(0.1, {.clipnorm = 1.0, .global_clipnorm = 1.0}); }), "only one of"));
  CHECK(contains(message_of<ValueError>([] { Adam(0.1, {.clipnorm = 1.0, .clipvalue = 1.0}); }), "only one of"));
  CHECK(contains(message_of<ValueError>([] { RMSprop(0.1, {.clipvalue = 0.0}); }), "clipvalue must be > 0"));
  CHECK(contains(message_of<ShapeError>([&] {
                   Graph g;
                   global.apply_gradients(g, {g.constant(Tensor::zeros({3}))}, {a}, g.placeholder({}),
                                          g.placeholder({}));
                 }),
                 "\"a:0\""));
}

TEST_CASE("slots: Keras names, creation order, persistence across graphs, clone()") {
  Adam adam(0.01);
  auto kernel = make_variable("dense/kernel:0", vec(kStart));
  auto bias = make_variable("dense/bias:0", Tensor::zeros({2}));
  {
    Graph graph;
    auto lr = graph.placeholder({}), it = graph.placeholder({});
    adam.apply_gradients(graph, {graph.placeholder({4}), graph.placeholder({2})}, {kernel, bias}, lr, it);
  }
  // tf.keras 2.11+'s names, "<optimizer>/<slot>/<variable>:0", per variable in apply order.
  std::vector<std::string> names;
  for (const auto& v : adam.variables()) names.push_back(v->name());
  CHECK(names == std::vector<std::string>{"Adam/m/dense/kernel:0", "Adam/v/dense/kernel:0", "Adam/m/dense/bias:0",
                                          "Adam/v/dense/bias:0"});
  CHECK(!adam.variables()[0]->trainable());

  // One step in a first graph and two in a second give the three steps of a single graph: the second
  // apply_gradients reuses the slots (and the iteration count goes on).
  run_steps(adam, kernel, {kGrads[0]});
  run_steps(adam, kernel, {kGrads[1], kGrads[2]});
  CHECK(adam.variables().size() == 4);
  CHECK(adam.iterations() == 3);
  Adam fresh(0.01);
  check_same(kernel->value().to_vector<double>(), run_steps(fresh));

  // A clone has the same state in new variables: stepping it leaves the original's slots alone.
  auto copy = adam.clone();
  CHECK(copy->iterations() == 3);
  REQUIRE(copy->variables().size() == 4);
  CHECK(copy->variables()[0] != adam.variables()[0]);
  CHECK(copy->variables()[0]->name() == "Adam/m/dense/kernel:0");
  auto m_before = adam.variables()[0]->value().to_vector<double>();
  check_same(copy->variables()[0]->value().to_vector<double>(), m_before);
  run_steps(*copy, kernel, {kGrads[0]});  // finds the copied slots of `kernel`: no new ones
  CHECK(copy->variables().size() == 4);
  CHECK(copy->variables()[0]->value().to_vector<double>() != m_before);
  CHECK(adam.variables()[0]->value().to_vector<double>() == m_before);
  CHECK(adam.iterations() == 3);

  // Adagrad's accumulator starts at initial_accumulator_value; SGD keeps "m" only with momentum.
  Adagrad adagrad(0.1, {.initial_accumulator_value = 0.25});
  SGD sgd(0.1), sgd_momentum(0.1, {.momentum = 0.9});
  for (Optimizer* o : std::vector<Optimizer*>{&adagrad, &sgd, &sgd_momentum}) run_steps(*o, {});
  CHECK(adagrad.variables()[0]->name() == "Adagrad/accumulator/w:0");
  CHECK(adagrad.variables()[0]->value().to_vector<double>() == Values(4, 0.25));
  CHECK(sgd.variables().empty());
  CHECK(sgd_momentum.variables()[0]->name() == "SGD/m/w:0");
}

TEST_CASE("learning rate: constant, schedule, set_learning_rate") {
  SGD sgd;
  CHECK(sgd.current_learning_rate() == doctest::Approx(0.01));
  CHECK(!sgd.has_schedule());

  // The schedule is read at iterations(), the steps taken before this one (Keras's optimizer.iterations).
  SGD scheduled(std::make_shared<PiecewiseConstantDecay>(std::vector<std::int64_t>{1}, Values{0.5, 0.1}));
  CHECK(scheduled.has_schedule());
  check_same(run_steps(scheduled, {{1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}}),
             {0.5 - 1.1, -1.0 - 1.1, 2.0 - 1.1, 0.25 - 1.1});  // steps 0 and 1 at 0.5, step 2 at 0.1
  CHECK(scheduled.current_learning_rate() == doctest::Approx(0.1));

  // set_learning_rate replaces the schedule by a constant (ReduceLROnPlateau's way), keeping the state.
  scheduled.set_learning_rate(0.25);
  CHECK(!scheduled.has_schedule());
  CHECK(scheduled.iterations() == 3);
  scheduled.set_iterations(0);
  CHECK(scheduled.current_learning_rate() == 0.25);
  check_same(run_steps(scheduled, {{1.0, 0.0, 0.0, 0.0}}), {0.25, -1.0, 2.0, 0.25});
  CHECK(contains(message_of<ValueError>([&] { scheduled.set_learning_rate(-1.0); }), "learning_rate"));
  CHECK(contains(message_of<ValueError>([] { Adam(std::shared_ptr<const LearningRateSchedule>{}); }), "null"));
}

TEST_CASE("get() by Keras name or class name") {
  const std::map<std::string, std::pair<std::string, double>> known = {
      {"sgd", {"SGD", 0.01}},          {"rmsprop", {"RMSprop", 0.001}}, {"adam", {"Adam", 0.001}},
      {"adamw", {"AdamW", 0.001}},     {"adagrad", {"Adagrad", 0.001}}, {"adadelta", {"Adadelta", 0.001}},
      {"RMSprop", {"RMSprop", 0.001}}, {"AdamW", {"AdamW", 0.001}},     {"ADADELTA", {"Adadelta", 0.001}},
      {"adamax", {"Adamax", 0.001}},   {"Nadam", {"Nadam", 0.001}},     {"lion", {"Lion", 0.001}},
      {"ftrl", {"Ftrl", 0.001}},       {"adafactor", {"Adafactor", 0.001}},
  };
  for (const auto& [identifier, expected] : known) {
    CAPTURE(identifier);
    auto optimizer = get(identifier);
    CHECK(optimizer->name() == expected.first);
    CHECK(optimizer->current_learning_rate() == doctest::Approx(expected.second));
    CHECK(optimizer->iterations() == 0);
  }
  auto msg = message_of<ValueError>([] { get("lamb"); });
  CHECK(contains(msg, "\"lamb\""));
  CHECK(contains(msg, "sgd, rmsprop, adam, adamw, adagrad, adadelta, adamax, nadam, lion, ftrl, adafactor"));
}

TEST_CASE("schedules match Keras 3") {
  // print([float(schedule(step)) for step in steps]) with keras.optimizers.schedules (keras 3.15).
  const std::vector<std::int64_t> steps = {0, 1, 5, 10, 15, 25, 30};
  ExponentialDecay exp(0.1, 10, 0.5), stair(0.1, 10, 0.5, true);
  InverseTimeDecay inverse(0.1, 10, 0.5), inverse_stair(0.1, 10, 0.5, true);
  PolynomialDecay poly(0.1, 20, {.end_learning_rate = 0.01, .power = 2.0}), poly_cycle(0.1, 20, {.cycle = true});
  PiecewiseConstantDecay piecewise({5, 10}, {1.0, 0.5, 0.1});
  CosineDecay cosine(0.1, 20, {.alpha = 0.1});
  CosineDecay warm(0.0, 20, {.warmup_target = 0.2, .warmup_steps = 5});
  const std::vector<std::pair<const LearningRateSchedule*, Values>> cases = {
      {&exp, {0.1, 0.09330330044031143, 0.0707106813788414, 0.05, 0.0353553406894207, 0.01767767034471035, 0.0125}},
      {&stair, {0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.0125}},
      {&inverse, {0.1, 0.0952381044626236, 0.08, 0.06666667014360428, 0.05714285746216774, 0.04444444552063942, 0.04}},
      {&inverse_stair, {0.1, 0.1, 0.1, 0.06666667014360428, 0.06666667014360428, 0.05, 0.04}},
      {&poly, {0.1, 0.09122499823570251, 0.06062500178813934, 0.032499998807907104, 0.015625, 0.01, 0.01}},
      {&poly_cycle,
       {0.1, 0.09500499814748764, 0.07502499967813492, 0.050050001591444016, 0.025074999779462814, 0.037562500685453415,
        0.025074999779462814}},
      {&piecewise, {1.0, 1.0, 1.0, 0.5, 0.1, 0.1, 0.1}},  // step == boundary keeps the earlier value
      {&cosine,
       {0.1, 0.09944597631692886, 0.08681981265544891, 0.05499999597668648, 0.023180196061730385, 0.010000000707805157,
        0.010000000707805157}},
      {&warm, {0.0, 0.04, 0.2, 0.17071068286895752, 0.09999999403953552, 0.0, 0.0}},
  };
  for (std::size_t s = 0; s < cases.size(); ++s)
    for (std::size_t i = 0; i < steps.size(); ++i) {
      CAPTURE(s);
      CAPTURE(steps[i]);
      CHECK((*cases[s].first)(steps[i]) == doctest::Approx(cases[s].second[i]).epsilon(1e-6).scale(1.0));
    }
  CHECK(contains(message_of<ValueError>([] { PiecewiseConstantDecay({1, 2}, {1.0}); }), "one value more"));
  CHECK(contains(message_of<ValueError>([] { PiecewiseConstantDecay({2, 1}, {1.0, 2.0, 3.0}); }), "increasing"));
  CHECK(contains(message_of<ValueError>([] { ExponentialDecay(0.1, 0, 0.5); }), "decay_steps must be > 0"));
  CHECK(contains(message_of<ValueError>([] { CosineDecay(0.1, -1); }), "decay_steps must be > 0"));
}
