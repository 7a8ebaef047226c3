// Keras 3's later optimizers (Adamax, Nadam, Lion, Ftrl, Adafactor) and the base arguments every
// optimizer takes (weight_decay, exclude_from_weight_decay, use_ema, gradient_accumulation_steps):
// three steps through a Graph and an Executor fed as the trainer feeds them, against double-precision
// transcriptions of Keras 3's rules and numbers printed by keras 3.15.1; configs, errors, and fit()'s
// final EMA overwrite.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <functional>

#include <nlohmann/json.hpp>

#include "tower/core/executor.h"
#include "tower/io/keras_model.h"
#include "tower/layers/engine/sequential.h"
#include "tower/layers/layers.h"
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

// Runs the three steps on a variable of `shape` holding kStart, as the trainer does: lr and the update
// number fed, the optimizer's step_targets run, finish_step() after each; with `finalize`, Keras's
// finalize_variable_values at the end.
Values run_steps(Optimizer& optimizer, const Shape& shape = Shape{4}, bool finalize = false,
                 const std::string& name = "w:0") {
  auto var = make_variable(name, Tensor::from_vector<float>(shape, {kStart.begin(), kStart.end()}));
  Graph graph;
  auto grad = graph.placeholder(shape, DType::float32, "grad");
  auto lr = graph.placeholder({}, DType::float32, "learning_rate");
  auto iteration = graph.placeholder({}, DType::float32, "iteration");
  auto targets = optimizer.apply_gradients(graph, {grad}, {var}, lr, iteration);
  Executor executor;
  for (const auto& g : kGrads) {
    executor.run({{grad, Tensor::from_vector<float>(shape, {g.begin(), g.end()})},
                  {lr, Tensor::scalar(optimizer.current_learning_rate())},
                  {iteration, Tensor::scalar(static_cast<double>(optimizer.update_number()))}},
                 {}, optimizer.step_targets(targets));
    optimizer.finish_step();
  }
  if (finalize) optimizer.finalize_variable_values();
  return var->value().to_vector<double>();
}

using Rule = std::function<void(std::size_t i, double& w, double g, int t)>;
Values reference(const Rule& rule) {
  auto w = kStart;
  for (std::size_t t = 0; t < kGrads.size(); ++t)
    for (std::size_t i = 0; i < w.size(); ++i) rule(i, w[i], kGrads[t][i], static_cast<int>(t) + 1);
  return w;
}

void check_same(const Values& got, const Values& want, double epsilon = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(epsilon).scale(1.0));
}

OptimizerPtr round_trip(const Optimizer& optimizer) { return from_config(to_config(optimizer)); }

}  // namespace

TEST_CASE("Adamax, Nadam, Lion and Ftrl follow Keras 3's rules") {
  Adamax adamax(0.01, {.beta_2 = 0.5});
  Values m(4), u(4);
  check_same(run_steps(adamax), reference([&](std::size_t i, double& w, double g, int t) {
               m[i] += (g - m[i]) * 0.1;
               u[i] = std::max(0.5 * u[i], std::abs(g));
               w -= 0.01 * m[i] / ((1 - std::pow(0.9, t)) * (u[i] + 1e-7));
             }));
  CHECK(adamax.variables().size() == 2);
  CHECK(adamax.variables()[0]->name() == "Adamax/momentum/w:0");
  CHECK(adamax.variables()[1]->name() == "Adamax/norm/w:0");

  Nadam nadam(0.01, {.beta_1 = 0.5, .beta_2 = 0.8});
  Values nm(4), nv(4);
  check_same(run_steps(nadam), reference([&](std::size_t i, double& w, double g, int t) {
               const auto u_at = [](int s) { return 0.5 * (1 - 0.5 * std::pow(0.96, s)); };
               double product = 1;
               for (int s = 1; s <= t; ++s) product *= u_at(s);
               nm[i] += (g - nm[i]) * 0.5;
               nv[i] += (g * g - nv[i]) * 0.2;
               const double m_hat = u_at(t + 1) * nm[i] / (1 - product * u_at(t + 1)) + (1 - u_at(t)) * g / (1 - product);
               w -= 0.01 * m_hat / (std::sqrt(nv[i] / (1 - std::pow(0.8, t))) + 1e-7);
             }));

  Lion lion(0.01, {.beta_1 = 0.5, .beta_2 = 0.9});
  Values lm(4);
  check_same(run_steps(lion), reference([&](std::size_t i, double& w, double g, int) {
               const double c = 0.5 * lm[i] + 0.5 * g;
               w -= 0.01 * ((c > 0) - (c < 0));
               lm[i] = 0.9 * lm[i] + 0.1 * g;
             }));

  Ftrl ftrl(0.1, {.learning_rate_power = -0.7,
                  .initial_accumulator_value = 0.2,
                  .l1_regularization_strength = 0.01,
                  .l2_regularization_strength = 0.1,
                  .l2_shrinkage_regularization_strength = 0.05,
                  .beta = 0.5});
  Values acc(4, 0.2), lin(4);
  check_same(run_steps(ftrl), reference([&](std::size_t i, double& w, double g, int) {
               const double l2 = 0.1 + 0.5 / (2 * 0.1), n = acc[i] + g * g;
               lin[i] += g + 2 * 0.05 * w - (std::pow(n, 0.7) - std::pow(acc[i], 0.7)) / 0.1 * w;
               w = (std::clamp(lin[i], -0.01, 0.01) - lin[i]) / (std::pow(n, 0.7) / 0.1 + 2 * l2);
               acc[i] = n;
             }));
  CHECK(ftrl.variables()[0]->value().to_vector<double>()[3] == doctest::Approx(0.2 + 1.0 + 0.09));
}

TEST_CASE("the new optimizers, weight decay, EMA and accumulation match keras 3.15.1") {
  // v = keras.Variable(start); opt.apply_gradients([(g, v)]) for each g; [opt.finalize_variable_values([v])].
  using Schedule = std::shared_ptr<const LearningRateSchedule>;
  struct Case {
    const char* keras;
    std::function<OptimizerPtr()> make;
    Shape shape;
    bool finalize;
    Values expected;
  };
  const std::vector<Case> cases = {
      {"Adamax(0.01)", [] { return Adamax(0.01).clone(); }, Shape{4}, false,
       {0.49480846524238586, -0.9969735145568848, 1.9862991571426392, 0.24252061545848846}},
      {"Nadam(0.01)", [] { return Nadam(0.01).clone(); }, Shape{4}, false,
       {0.4950239062309265, -1.0027910470962524, 1.996105432510376, 0.24203363060951233}},
      {"Lion(0.01)", [] { return Lion(0.01).clone(); }, Shape{4}, false, {0.49, -1.01, 1.99, 0.25}},
      {"Ftrl(0.1)", [] { return Ftrl(0.1).clone(); }, Shape{4}, false,
       {0.0341765470802784, -0.21195730566978455, 0.549547553062439, -0.06784530729055405}},
      {"Adafactor(0.01)", [] { return Adafactor(0.01).clone(); }, Shape{4}, false,
       {0.49314600229263306, -1.0081013441085815, 2.0024616718292236, 0.24216289818286896}},
      {"Adafactor(0.01) on a 2x2 variable (factored)", [] { return Adafactor(0.01).clone(); }, Shape{2, 2}, false,
       {0.5021523237228394, -0.997551679611206, 2.0017528533935547, 0.24380013346672058}},
      {"Adafactor(0.5, clip_threshold=0.5, beta_2_decay=-0.5, epsilon_2=0.1) 2x2",
       [] { return Adafactor(0.5, {.beta_2_decay = -0.5, .epsilon_2 = 0.1, .clip_threshold = 0.5}).clone(); },
       Shape{2, 2}, false, {0.48727476596832275, -0.8966811895370483, 2.014472723007202, 0.16973721981048584}},
      {"SGD(0.1, weight_decay=0.1)", [] { return SGD(0.1, {.weight_decay = 0.1}).clone(); }, Shape{4}, false,
       {0.49494847655296326, -1.0201970338821411, 1.9662449359893799, 0.173574760556221}},
      {"Nadam(0.01, weight_decay=0.2)", [] { return Nadam(0.01, {.weight_decay = 0.2}).clone(); }, Shape{4}, false,
       {0.49205291271209717, -0.9968269467353821, 1.984176754951477, 0.24055707454681396}},
      {"Ftrl(0.1, weight_decay=0.2)", [] { return Ftrl(0.1, {.weight_decay = 0.2}).clone(); }, Shape{4}, false,
       {0.0336713083088398, -0.20790313184261322, 0.5347539782524109, -0.067771777510643}},
      {"SGD(0.1, gradient_accumulation_steps=2)", [] { return SGD(0.1, {.gradient_accumulation_steps = 2}).clone(); },
       Shape{4}, false, {0.515, -1.015, 1.9825, 0.2}},
      {"RMSprop(0.01, gradient_accumulation_steps=3)",
       [] { return RMSprop(0.01, {.gradient_accumulation_steps = 3}).clone(); }, Shape{4}, false,
       {0.5316085815429688, -1.0316221714019775, 2.031620502471924, 0.2183775156736374}},
      {"SGD(0.1, use_ema=True, ema_momentum=0.5), not finalized",
       [] { return SGD(0.1, {.use_ema = true, .ema_momentum = 0.5}).clone(); }, Shape{4}, false,
       {0.51, -1.05, 2.025, 0.18}},
      {"SGD(0.1, use_ema=True, ema_momentum=0.5), finalized",
       [] { return SGD(0.1, {.use_ema = true, .ema_momentum = 0.5}).clone(); }, Shape{4}, true,
       {0.5099999904632568, -1.0274999141693115, 1.996250033378601, 0.1899999976158142}},
      {"Adam(0.01, use_ema=True), finalized", [] { return Adam(0.01, {.use_ema = true}).clone(); }, Shape{4}, true,
       {0.4901227653026581, -0.9901425242424011, 1.9898738861083984, 0.2498151808977127}},
      {"SGD(ExponentialDecay(0.1, 1, 0.5), gradient_accumulation_steps=3)",  // the schedule at the raw step 2
       [] {
         return SGD(Schedule(std::make_shared<ExponentialDecay>(0.1, 1, 0.5)), {.gradient_accumulation_steps = 3})
             .clone();
       },
       Shape{4}, false, {0.5 - 0.025 * (-0.1 / 3), -1.0 - 0.025 * (0.5 / 3), 2.0 - 0.025 * (-0.25 / 3), 0.25 - 0.025 * (0.7 / 3)}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.keras);
    auto optimizer = c.make();
    check_same(run_steps(*optimizer, c.shape, c.finalize), c.expected);
    auto again = round_trip(*optimizer);  // the config rebuilds an optimizer giving the same numbers
    check_same(run_steps(*again, c.shape, c.finalize), c.expected);
  }
}

TEST_CASE("gradient accumulation: slots, iterations and the update number as Keras counts them") {
  SGD sgd(0.1, {.gradient_accumulation_steps = 2});
  run_steps(sgd);
  CHECK(sgd.iterations() == 3);     // Keras's _iterations (saved, read by schedules)
  CHECK(sgd.update_number() == 2);  // Keras's iterations + 1 = 3 // 2 + 1
  REQUIRE(sgd.variables().size() == 1);
  CHECK(sgd.variables()[0]->name() == "SGD/gradient_accumulator/w:0");
  check_same(sgd.variables()[0]->value().to_vector<double>(), kGrads[2]);  // the third step's, not yet applied

  // EMA with accumulation: the average copies while Keras's iterations is 0 (two raw steps).
  Adam adam(0.01, {.use_ema = true, .gradient_accumulation_steps = 2});
  const Values before_finalize = run_steps(adam);
  const auto average = adam.variables().back();
  CHECK(average->name() == "Adam/average/w:0");
  check_same(average->value().to_vector<double>(), before_finalize);  // 0.99 avg + 0.01 var, var unchanged
}

TEST_CASE("exclude_from_weight_decay skips matching variables, as Keras 3") {
  SGD decayed(0.1, {.weight_decay = 0.1});
  decayed.exclude_from_weight_decay({"bias"});
  const Values plain = reference([](std::size_t, double& w, double g, int) { w -= 0.1 * g; });
  check_same(run_steps(decayed, Shape{4}, false, "dense/bias:0"), plain);
  SGD kernel(0.1, {.weight_decay = 0.1});
  kernel.exclude_from_weight_decay({"bias", "gamma$"});
  check_same(run_steps(kernel, Shape{4}, false, "dense/kernel:0"),
             {0.49494847655296326, -1.0201970338821411, 1.9662449359893799, 0.173574760556221});
  CHECK(contains(message_of<ValueError>([&] { kernel.exclude_from_weight_decay({"(bias"}); }),
                 "not a regular expression"));
}

TEST_CASE("configs: Keras 3's keys round-trip and Keras 3's own configs load") {
  // print(json.dumps(keras.optimizers.Nadam(0.01, use_ema=True, ema_overwrite_frequency=5,
  //     gradient_accumulation_steps=2, weight_decay=0.01, clipnorm=1.0).get_config()))
  const auto keras = nlohmann::json::parse(R"({"name": "nadam_3", "learning_rate": 0.009999999776482582,
      "weight_decay": 0.01, "clipnorm": 1.0, "global_clipnorm": null, "clipvalue": null, "use_ema": true,
      "ema_momentum": 0.99, "ema_overwrite_frequency": 5, "loss_scale_factor": null,
      "gradient_accumulation_steps": 2, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07})");
  auto nadam = from_config({{"class_name", "Nadam"}, {"config", keras}});
  CHECK(nadam->name() == "Nadam");
  const auto c = nadam->get_config();
  for (const char* key : {"weight_decay", "clipnorm", "use_ema", "ema_momentum", "ema_overwrite_frequency",
                          "gradient_accumulation_steps", "beta_1", "beta_2", "epsilon"})
    CHECK_MESSAGE(c.at(key) == keras.at(key), key);
  CHECK(nadam->base_options().gradient_accumulation_steps == 2);

  const std::vector<OptimizerPtr> all = {
      Adamax(0.02, {.beta_1 = 0.8, .epsilon = 1e-6}).clone(),
      Nadam(0.02, {.beta_2 = 0.9}).clone(),
      Lion(0.02, {.beta_1 = 0.8, .beta_2 = 0.9, .weight_decay = 0.3}).clone(),
      Ftrl(0.02, {.learning_rate_power = -0.3, .l1_regularization_strength = 0.1, .beta = 0.2}).clone(),
      Adafactor(0.02, {.beta_2_decay = -0.6, .clip_threshold = 2.0, .relative_step = false}).clone(),
      RMSprop(0.02, {.use_ema = true, .ema_momentum = 0.9, .ema_overwrite_frequency = 4}).clone(),
      AdamW(0.02, {.weight_decay = 0.05, .gradient_accumulation_steps = 3}).clone(),
      Adam(0.02, {.weight_decay = 0.05}).clone(),
  };
  for (const auto& optimizer : all) {
    CAPTURE(to_config(*optimizer).dump());
    auto again = round_trip(*optimizer);
    CHECK(again->name() == optimizer->name());
    CHECK(again->get_config() == optimizer->get_config());
  }
  CHECK(Adam(0.01).get_config().at("weight_decay").is_null());
  CHECK(AdamW().get_config().at("weight_decay") == 0.004);
  CHECK_FALSE(Adam(0.01).get_config().contains("gradient_accumulation_steps"));  // tf.keras 2 refuses the key
  CHECK(contains(message_of<ValueError>([] {
                   from_config({{"class_name", "SGD"}, {"config", {{"loss_scale_factor", 128.0}}}});
                 }),
                 "loss_scale_factor"));
  CHECK(contains(message_of<ValueError>([] {
                   from_config({{"class_name", "SGD"}, {"config", {{"gradient_accumulation_steps", 2.5}}}});
                 }),
                 "must be an integer"));
}

TEST_CASE("bad arguments say what is wrong") {
  const auto says = [](const std::function<void()>& make, const char* text) {
    CAPTURE(text);
    CHECK(contains(message_of<ValueError>(make), text));
  };
  says([] { SGD(0.1, {.weight_decay = -0.1}); }, "weight_decay must be >= 0");
  says([] { Adam(0.1, {.use_ema = true, .ema_momentum = 1.5}); }, "ema_momentum must be in [0, 1]");
  says([] { Adam(0.1, {.use_ema = true, .ema_overwrite_frequency = 0}); }, "ema_overwrite_frequency must be");
  says([] { Adam(0.1, {.gradient_accumulation_steps = 1}); }, "gradient_accumulation_steps must be an integer >= 2");
  says([] { Lion(0.1, {.beta_1 = 0.0}); }, "SignSGD");
  says([] { Ftrl(0.1, {.learning_rate_power = 0.5}); }, "learning_rate_power must be <= 0");
  says([] { Ftrl(0.1, {.initial_accumulator_value = -1}); }, "initial_accumulator_value must be >= 0");
  says([] { Ftrl(0.1, {.l1_regularization_strength = -1}); }, "l1_regularization_strength must be >= 0");
  says([] { Adafactor(0.1, {.clip_threshold = 0}); }, "clip_threshold must be > 0");
  says([] { Adamax(0.1, {.beta_1 = 1.0}); }, "beta_1 must be in [0, 1)");
  says([] { Nadam(0.1, {.beta_2 = 1.0}); }, "beta_2 must be in [0, 1)");
  says([] { AdamW(0.1, {.weight_decay = -1}); }, "weight_decay");
}

TEST_CASE("fit() ends with the weights replaced by their moving averages (use_ema), as keras 3.15.1") {
  // m = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]); m.set_weights([[[0.5], [-0.3]], [0.1]])
  // m.compile(opt, "mse"); m.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0); m.get_weights()
  const Tensor x = Tensor::from_vector<float>({4, 2}, {1, 2, -1, 0.5, 0.3, -2, 2, 1});
  const Tensor y = Tensor::from_vector<float>({4, 1}, {1, -1, 0.5, 2});
  const std::vector<std::pair<OptimizerPtr, Values>> cases = {
      {SGD(0.1, {.use_ema = true, .ema_momentum = 0.5}).clone(),
       {0.8189548254013062, -0.03912807255983353, 0.19066967070102692}},
      {Adam(0.05, {.use_ema = true, .ema_momentum = 0.8, .ema_overwrite_frequency = 3}).clone(),
       {0.5874501466751099, -0.2128935307264328, 0.18535536527633667}},
  };
  for (const auto& [optimizer, keras] : cases) {
    CAPTURE(optimizer->name());
    clear_session();
    Sequential model({layers::Input({2}), layers::Dense(1)});
    model.compile(optimizer, "mse");
    model.trainable_weights()[0]->assign(Tensor::from_vector<float>({2, 1}, {0.5, -0.3}));
    model.trainable_weights()[1]->assign(Tensor::from_vector<float>({1}, {0.1}));
    model.fit(x, y, {.batch_size = 2, .epochs = 2, .verbose = 0, .shuffle = false});
    CHECK(model.optimizer().iterations() == 4);
    Values got;
    for (const auto& weight : model.trainable_weights())
      for (double v : weight->value().to_vector<double>()) got.push_back(v);
    check_same(got, keras);
    int checked = 0;  // each weight is its "average" slot now
    for (const auto& weight : model.trainable_weights()) {
      std::string base = weight->name();
      if (base.ends_with(":0")) base.resize(base.size() - 2);
      for (const auto& slot : model.optimizer().variables())
        if (slot->name() == model.optimizer().name() + "/average/" + base + ":0") {
          CHECK(weight->value().to_vector<double>() == slot->value().to_vector<double>());
          ++checked;
        }
    }
    CHECK(checked == 2);
    // train_on_batch does not finalize (Keras 3 neither): the next step leaves weight and average apart.
    model.train_on_batch({x}, {y});
    CHECK(model.trainable_weights()[1]->value().to_vector<double>() !=
          model.optimizer().variables().back()->value().to_vector<double>());
  }
}

TEST_CASE("a model saved with the new optimizers, EMA and accumulation loads with its optimizer state") {
  const Tensor x = Tensor::from_vector<float>({4, 2}, {1, 2, -1, 0.5, 0.3, -2, 2, 1});
  const Tensor y = Tensor::from_vector<float>({4, 1}, {1, -1, 0.5, 2});
  const std::string path = "/tmp/tower_test_optimizers_keras3.h5";
  for (const auto& optimizer :
       {Nadam(0.01, {.use_ema = true}).clone(), Adamax(0.01, {.gradient_accumulation_steps = 2}).clone(),
        Lion(0.01).clone(), Ftrl(0.1).clone(), Adafactor(0.01).clone()}) {
    CAPTURE(optimizer->name());
    clear_session();
    Sequential model({layers::Input({2}), layers::Dense(3), layers::Dense(1)});
    model.compile(optimizer, "mse");
    model.train_on_batch({x}, {y});
    model.train_on_batch({x}, {y});
    model.train_on_batch({x}, {y});
    io::save_model_hdf5(model, path);
    Model loaded = io::load_model_hdf5(path);
    CHECK(loaded.optimizer().name() == optimizer->name());
    CHECK(loaded.optimizer().get_config() == model.optimizer().get_config());
    CHECK(loaded.optimizer().iterations() == 3);
    // One more step on each gives the same weights (the state, accumulators and averages included).
    model.train_on_batch({x}, {y});
    loaded.train_on_batch({x}, {y});
    const auto a = model.trainable_weights(), b = loaded.trainable_weights();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      check_same(b[i]->value().to_vector<double>(), a[i]->value().to_vector<double>(), 1e-6);
  }
  std::remove(path.c_str());
}
