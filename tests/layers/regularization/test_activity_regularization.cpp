// Activity regularization: ActivityRegularization and the activity_regularizer every layer has
// (Dense, Conv1D, Conv2D, Embedding take it as an option): the loss of evaluate and fit against a hand
// computation (Keras 3 divides the penalty by the batch), configs in tf.keras 2 and Keras 3 spellings,
// errors; and the noise layers with activity penalties on two CPU towers, which give one device's
// training.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tower/core/random.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/multi_gpu_model.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;

using tower::testing::entry;

namespace {

// mean((y - t)^2) + (l1 sum|a| + l2 sum a^2) / rows for the activations a of each penalised layer.
double penalty(const std::vector<double>& a, double l1, double l2, double rows) {
  double s1 = 0, s2 = 0;
  for (double v : a) s1 += std::abs(v), s2 += v * v;
  return (l1 * s1 + l2 * s2) / rows;
}

double mse(const std::vector<double>& y, const std::vector<double>& t) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += (y[i] - t[i]) * (y[i] - t[i]);
  return s / static_cast<double>(y.size());
}

}  // namespace

TEST_CASE("ActivityRegularization: the identity, adding (l1 sum|x| + l2 sum x^2) / batch to the loss") {
  clear_session();
  set_random_seed(3);
  layers::ActivityRegularization reg(0.01, 0.02);
  CHECK(reg.name() == "activity_regularization");
  CHECK(reg.activity_regularizer().l1 == 0.01);
  Sequential model({layers::Input({4}), layers::Dense(3, {.name = "d"}), reg});
  model.compile(optimizers::SGD(0.1), "mse");
  Tensor x = random_normal({6, 4}, 0.0, 1.0, 5), t = random_normal({6, 3}, 0.0, 1.0, 6);
  const auto y = model.predict(x, {.verbose = 0}).to_vector<double>();
  const double expected = mse(y, t.to_vector<double>()) + penalty(y, 0.01, 0.02, 6.0);
  CHECK(model.evaluate(x, t, {.batch_size = 6, .verbose = 0}).at("loss") == doctest::Approx(expected).epsilon(1e-5));
  // Batches of 4 and 2: each batch's penalty over its own rows, the batches' losses averaged by their
  // rows as Keras 3's loss tracker does.
  const auto tv = t.to_vector<double>();
  auto part = [&](std::size_t from, std::size_t rows) {
    const std::vector<double> yb(y.begin() + 3 * from, y.begin() + 3 * (from + rows));
    const std::vector<double> tb(tv.begin() + 3 * from, tv.begin() + 3 * (from + rows));
    return mse(yb, tb) + penalty(yb, 0.01, 0.02, static_cast<double>(rows));
  };
  CHECK(model.evaluate(x, t, {.batch_size = 4, .verbose = 0}).at("loss") ==
        doctest::Approx((4 * part(0, 4) + 2 * part(4, 2)) / 6).epsilon(1e-5));
  // train_on_batch reports the loss before its update.
  CHECK(model.train_on_batch({x}, {t}).at("loss") == doctest::Approx(expected).epsilon(1e-5));
}

TEST_CASE("activity_regularizer on Dense, Conv1D, Conv2D and Embedding joins the loss") {
  clear_session();
  set_random_seed(4);
  const Regularizer l1l2 = regularizers::l1_l2(0.003, 0.004);
  {
    Sequential model({layers::Input({5}), layers::Dense(4, {.activation = "tanh", .activity_regularizer = l1l2})});
    model.compile(optimizers::SGD(0.1), "mse");
    Tensor x = random_normal({7, 5}, 0.0, 1.0, 1), t = random_normal({7, 4}, 0.0, 1.0, 2);
    const auto y = model.predict(x, {.verbose = 0}).to_vector<double>();
    const double expected = mse(y, t.to_vector<double>()) + penalty(y, 0.003, 0.004, 7.0);
    CHECK(model.evaluate(x, t, {.batch_size = 7, .verbose = 0}).at("loss") == doctest::Approx(expected).epsilon(1e-5));
  }
  const std::vector<std::pair<std::string, std::function<LayerRef()>>> cases = {
      {"Conv1D", [&] { return LayerRef(layers::Conv1D(2, 3, {.activity_regularizer = l1l2})); }},
      {"Conv2D",
       [&] {
         return LayerRef(layers::Conv2D(2, {3, 3}, {.activity_regularizer = l1l2}));
       }},
  };
  for (const auto& [name, make] : cases) {
    CAPTURE(name);
    const bool two_d = name == "Conv2D";
    Sequential model({layers::Input(two_d ? Shape{5, 5, 2} : Shape{6, 2}), make(), layers::Flatten()});
    model.compile(optimizers::SGD(0.1), "mse");
    Tensor x = random_normal(two_d ? Shape{3, 5, 5, 2} : Shape{3, 6, 2}, 0.0, 1.0, 3);
    const auto y = model.predict(x, {.verbose = 0}).to_vector<double>();
    Tensor t = random_normal({3, static_cast<std::int64_t>(y.size() / 3)}, 0.0, 1.0, 4);
    const double expected = mse(y, t.to_vector<double>()) + penalty(y, 0.003, 0.004, 3.0);
    CHECK(model.evaluate(x, t, {.batch_size = 3, .verbose = 0}).at("loss") == doctest::Approx(expected).epsilon(1e-5));
  }
  Sequential embed({layers::Input({3}, {.dtype = DType::int32}),
                    layers::Embedding(10, 2, {.activity_regularizer = l1l2}), layers::Flatten()});
  embed.compile(optimizers::SGD(0.1), "mse");
  Tensor ids = Tensor::from_vector<std::int32_t>({2, 3}, {1, 2, 3, 4, 5, 9});
  const auto y = embed.predict(ids, {.verbose = 0}).to_vector<double>();
  Tensor t = random_normal({2, 6}, 0.0, 1.0, 5);
  const double expected = mse(y, t.to_vector<double>()) + penalty(y, 0.003, 0.004, 2.0);
  CHECK(embed.evaluate(ids, t, {.batch_size = 2, .verbose = 0}).at("loss") == doctest::Approx(expected).epsilon(1e-5));
}

TEST_CASE("activity_regularizer: configs of tf.keras 2 and Keras 3 round-trip") {
  layers::Dense dense(3, {.activity_regularizer = regularizers::l2(0.01), .name = "de"});
  json c = dense.get_config();
  CHECK(c["activity_regularizer"]["class_name"] == "L2");
  CHECK(c["activity_regularizer"]["config"]["l2"] == layers::float32_value(0.01));
  LayerPtr back = layers::layer_from_config(entry(dense));
  CHECK(back->activity_regularizer().l2 == doctest::Approx(0.01));
  CHECK(back->get_config().dump() == c.dump());
  // tf.keras 2: {"class_name": "L1L2", "config": {...}} in Dense, Conv2D, Embedding.
  LayerPtr tf2 = layers::layer_from_config(json::parse(R"({"class_name": "Conv2D", "config": {"name": "c",
      "filters": 2, "kernel_size": [3, 3], "activity_regularizer": {"class_name": "L1L2", "config":
      {"l1": 0.01, "l2": 0.02}}}})"));
  CHECK(tf2->activity_regularizer().l1 == doctest::Approx(0.01));
  CHECK(tf2->activity_regularizer().l2 == doctest::Approx(0.02));
  LayerPtr emb = layers::layer_from_config(json::parse(R"({"class_name": "Embedding", "config": {"name": "e",
      "input_dim": 5, "output_dim": 2, "activity_regularizer": {"class_name": "L1", "config": {"l1": 0.5}}}})"));
  CHECK(emb->activity_regularizer().l1 == 0.5);
  CHECK(emb->get_config()["activity_regularizer"]["class_name"] == "L1");
  // Keras 3, as keras.saving.serialize_keras_object writes Dense(activity_regularizer=L1L2(0.01, 0.02)).
  LayerPtr k3 = layers::layer_from_config(json::parse(R"({"module": "keras.layers", "class_name": "Dense",
      "config": {"name": "de", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "activity_regularizer": {"module":
      "keras.regularizers", "class_name": "L1L2", "config": {"l1": 0.01, "l2": 0.02}, "registered_name": null},
      "units": 3, "activation": "linear", "use_bias": true, "kernel_regularizer": null, "bias_regularizer": null,
      "kernel_constraint": null, "bias_constraint": null, "quantization_config": null}, "registered_name": null})"));
  CHECK(k3->activity_regularizer().l1 == doctest::Approx(0.01));
  CHECK(k3->activity_regularizer().l2 == doctest::Approx(0.02));
  // A layer without the option in its C++ struct takes it from a config all the same (Keras's base Layer).
  LayerPtr flat = layers::layer_from_config(json::parse(
      R"({"class_name": "Flatten", "config": {"name": "f", "activity_regularizer": {"class_name": "L2", "config": {"l2": 0.1}}}})"));
  CHECK(flat->activity_regularizer().l2 == doctest::Approx(0.1));
  CHECK(flat->get_config()["activity_regularizer"]["config"]["l2"] == doctest::Approx(0.1));

  // ActivityRegularization: {l1, l2}, no activity_regularizer, in both versions.
  layers::ActivityRegularization reg(0.01, 0.0, {.name = "ar"});
  c = reg.get_config();
  CHECK(c["l1"] == 0.01);
  CHECK(c["l2"] == 0.0);
  CHECK(!c.contains("activity_regularizer"));
  CHECK(layers::layer_from_config(entry(reg))->get_config().dump() == c.dump());
  LayerPtr ar3 = layers::layer_from_config(json::parse(R"({"module": "keras.layers", "class_name":
      "ActivityRegularization", "config": {"name": "ar", "trainable": true, "dtype": {"module": "keras", "class_name":
      "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "l1": 0.01, "l2": 0.02},
      "registered_name": null})"));
  CHECK(dynamic_cast<layers::ActivityRegularization&>(*ar3).l2() == 0.02);
  CHECK(ar3->activity_regularizer().l2 == 0.02);
}

TEST_CASE("activity_regularizer: bad values say what is wrong") {
  auto msg = message_of<ValueError>([] { layers::ActivityRegularization(-1.0, 0.0, {.name = "ar"}); });
  CHECK(contains(msg, "ActivityRegularization \"ar\""));
  CHECK(contains(msg, ">= 0"));
  msg = message_of<ValueError>([] {
    layers::layer_from_config(json::parse(R"({"class_name": "Dense", "config": {"name": "d", "units": 2,
        "activity_regularizer": {"class_name": "OrthogonalRegularizer", "config": {"factor": 0.01}}}})"));
  });
  CHECK(contains(msg, "Dense \"d\""));
  CHECK(contains(msg, "activity_regularizer"));
}

TEST_CASE("noise layers and activity penalties on two CPU towers train as one device") {
  clear_session();
  auto make = [] {
    set_random_seed(12);
    return Sequential({layers::Input({6}),
                       layers::Dense(16, {.activation = "relu", .activity_regularizer = regularizers::l2(0.01)}),
                       layers::GaussianNoise(0.1), layers::GaussianDropout(0.2), layers::AlphaDropout(0.1),
                       layers::Dropout(0.3, {.noise_shape = {1, -1}}), layers::ActivityRegularization(0.01, 0.001),
                       layers::Dense(3, {.activation = "softmax"})});
  };
  Sequential single = make();
  single.compile(optimizers::SGD(0.05), "sparse_categorical_crossentropy");
  Sequential inner = make();
  Model towers = parallel::multi_gpu_model(inner, std::vector<std::string>{"cpu:0", "cpu:1"});
  towers.compile(optimizers::SGD(0.05), "sparse_categorical_crossentropy");
  Tensor x = random_normal({23, 6}, 0.0, 1.0, 7);
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 23; ++i) labels.push_back(i % 3);
  Tensor y = Tensor::from_vector<std::int32_t>({23}, labels);
  // Batches of 9 (5 + 4 rows) and the last of 5 (3 + 2).
  const auto h1 = single.fit(x, y, {.batch_size = 9, .epochs = 3, .verbose = 0, .shuffle = false});
  const auto h2 = towers.fit(x, y, {.batch_size = 9, .epochs = 3, .verbose = 0, .shuffle = false});
  for (int e = 0; e < 3; ++e)
    CHECK(h2.history.at("loss")[e] == doctest::Approx(h1.history.at("loss")[e]).epsilon(1e-5));
  const auto w1 = single.get_weights(), w2 = inner.get_weights();
  for (std::size_t i = 0; i < w1.size(); ++i) check_close(w2[i].to(cpu_device()), w1[i], 1e-5, 1e-6);
  CHECK(towers.evaluate(x, y, {.batch_size = 9, .verbose = 0}).at("loss") ==
        doctest::Approx(single.evaluate(x, y, {.batch_size = 9, .verbose = 0}).at("loss")).epsilon(1e-5));
}
