// Model and Sequential: graph structure, summary, compile/fit/evaluate/predict, weights, trainable.
#include <doctest/doctest.h>

#include <cmath>

#include "tower/core/random.h"
#include "tower/layers/layers.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/engine/sequential.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

// y = x · w + 0.5 with a little noise: (n, 3) -> (n, 1).
std::pair<Tensor, Tensor> linear_data(std::int64_t n, std::uint64_t seed) {
  Tensor x = random_normal({n, 3}, 0.0, 1.0, seed);
  auto xs = x.to_vector<float>();
  std::vector<float> ys;
  for (std::int64_t i = 0; i < n; ++i)
    ys.push_back(0.5f + 1.5f * xs[3 * i] - 2.0f * xs[3 * i + 1] + 0.25f * xs[3 * i + 2]);
  return {x, Tensor::from_vector<float>({n, 1}, ys)};
}

// Two Gaussian blobs per class of `classes`, in 4 dimensions; int32 labels.
std::pair<Tensor, Tensor> blobs(std::int64_t n, int classes, std::uint64_t seed) {
  Generator g(seed);
  std::vector<float> xs;
  std::vector<std::int32_t> ys;
  for (std::int64_t i = 0; i < n; ++i) {
    int c = static_cast<int>(i % classes);
    for (int j = 0; j < 4; ++j) xs.push_back(static_cast<float>((j == c % 4 ? 2.0 : 0.0) + 0.5 * g.next_normal()));
    ys.push_back(c);
  }
  return {Tensor::from_vector<float>({n, 4}, xs), Tensor::from_vector<std::int32_t>({n}, ys)};
}

}  // namespace

TEST_CASE("Sequential: mnist_mlp's structure and summary match Keras") {
  clear_session();
  Sequential model({
      layers::Input({784}),
      layers::Dense(512, {.activation = "relu"}),
      layers::Dropout(0.2),
      layers::Dense(512, {.activation = "relu"}),
      layers::Dropout(0.2),
      layers::Dense(10, {.activation = "softmax"}),
  });
  CHECK(model.layers().size() == 5);
  CHECK(model.layers()[0]->name() == "dense");
  CHECK(model.layers()[2]->name() == "dense_1");
  CHECK(model.layers()[3]->name() == "dropout_1");
  CHECK(model.count_params() == 669706);
  const std::string expected =
      "Model: \"sequential\"\n"
      "_________________________________________________________________\n"
      " Layer (type)                Output Shape              Param #   \n"
      "=================================================================\n"
      " dense (Dense)               (None, 512)               401920    \n"
      "                                                                 \n"
      " dropout (Dropout)           (None, 512)               0         \n"
      "                                                                 \n"
      " dense_1 (Dense)             (None, 512)               262656    \n"
      "                                                                 \n"
      " dropout_1 (Dropout)         (None, 512)               0         \n"
      "                                                                 \n"
      " dense_2 (Dense)             (None, 10)                5130      \n"
      "                                                                 \n"
      "=================================================================\n"
      "Total params: 669,706\n"
      "Trainable params: 669,706\n"
      "Non-trainable params: 0\n"
      "_________________________________________________________________\n";
  CHECK(model.summary_string() == expected);
}

TEST_CASE("Functional: several inputs and outputs, shared layers, Connected to") {
  clear_session();
  auto a = layers::Input({4}, {.name = "a"});
  auto b = layers::Input({4}, {.name = "b"});
  layers::Dense shared(3);
  auto ha = shared(a);
  auto hb = shared(b);
  auto merged = layers::Concatenate()({ha, hb});
  auto out1 = layers::Dense(2, {.name = "out1"})(merged);
  auto out2 = layers::Dense(1, {.name = "out2"})(hb);
  Model model({a, b}, {out1, out2});
  // Shared layer counted once: 4*3+3 + 6*2+2 + 3*1+1.
  CHECK(model.count_params() == 15 + 14 + 4);
  std::vector<std::string> names;
  for (const auto& l : model.layers()) names.push_back(l->name());
  CHECK(names == std::vector<std::string>{"a", "b", "dense", "concatenate", "out1", "out2"});
  CHECK(model.output_names() == std::vector<std::string>{"out1", "out2"});
  auto text = model.summary_string();
  CHECK(contains(text, "Connected to"));
  // Long lists wrap after "'," as tf.keras prints them.
  CHECK(contains(text, " dense (Dense)               (None, 3)                    15        ['a[0][0]',                   \n"
                       "                                                                     'b[0][0]']                   \n"));
  CHECK(contains(text, "['dense[0][0]',"));
  CHECK(contains(text, " out2 (Dense)                (None, 1)                    4         ['dense[1][0]']"));

  auto x = random_normal({5, 4}, 0, 1, 1);
  auto y = random_normal({5, 4}, 0, 1, 2);
  auto outs = model.predict({x, y});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].shape() == Shape{5, 2});
  CHECK(outs[1].shape() == Shape{5, 1});
}

TEST_CASE("Functional: a disconnected graph names the missing input") {
  auto a = layers::Input({4}, {.name = "first"});
  auto b = layers::Input({4}, {.name = "second"});
  auto out = layers::Add()({layers::Dense(2)(a), layers::Dense(2)(b)});
  auto msg = message_of<ValueError>([&] { Model(a, out); });
  CHECK(contains(msg, "graph disconnected"));
  CHECK(contains(msg, "\"second\""));
}

TEST_CASE("Nested models: a model called as a layer shares its weights") {
  clear_session();
  Sequential inner({layers::Input({3}), layers::Dense(4, {.activation = "tanh"}), layers::Dense(2)});
  auto x = layers::Input({3});
  auto y = inner(x);
  auto z = layers::Dense(1)(y);
  Model outer(x, z);
  CHECK(outer.layers().size() == 3);  // input, the Sequential, dense
  CHECK(outer.layers()[1]->class_name() == "Sequential");
  CHECK(outer.count_params() == inner.count_params() + 3);
  auto data = random_normal({6, 3}, 0, 1, 3);
  auto inner_out = inner.predict(data);
  // The outer model's dense applied to the inner output by hand.
  auto w = outer.layers()[2]->get_weights();
  auto h = inner_out.to_vector<float>();
  auto k = w[0].to_vector<float>();
  float bias = w[1].to_vector<float>()[0];
  auto out = outer.predict(data).to_vector<float>();
  for (int i = 0; i < 6; ++i) CHECK(out[i] == doctest::Approx(h[2 * i] * k[0] + h[2 * i + 1] * k[1] + bias).epsilon(1e-5));
  CHECK(contains(outer.summary_string(), "sequential (Sequential)     (None, 2)"));
}

TEST_CASE("fit reduces the loss; evaluate averages batches as Keras; predict and *_on_batch") {
  clear_session();
  set_random_seed(7);
  auto [x, y] = linear_data(64, 11);
  Sequential model({layers::Input({3}), layers::Dense(1)});
  model.compile(optimizers::SGD(0.1), "mse", {"mae"});
  double before = model.evaluate(x, y, {.verbose = 0})[0];
  auto history = model.fit(x, y, {.batch_size = 16, .epochs = 20, .verbose = 0});
  REQUIRE(history.history.at("loss").size() == 20);
  CHECK(history.history.at("mae").size() == 20);
  CHECK(history.epoch.back() == 19);
  double after = model.evaluate(x, y, {.verbose = 0})[0];
  CHECK(after < before * 0.01);

  // Batch means weighted by batch size give the full-data mean.
  auto whole = model.evaluate(x, y, {.batch_size = 64, .verbose = 0});
  auto pieces = model.evaluate(x, y, {.batch_size = 10, .verbose = 0});
  CHECK(pieces.at("loss") == doctest::Approx(whole.at("loss")).epsilon(1e-5));
  CHECK(pieces.at("mae") == doctest::Approx(whole.at("mae")).epsilon(1e-5));
  CHECK(whole.entries()[0].first == "loss");

  auto p = model.predict(x, {.batch_size = 10});
  CHECK(p.shape() == Shape{64, 1});
  auto pb = model.predict_on_batch({x});
  CHECK(pb[0].to_vector<float>() == p.to_vector<float>());
  auto t = model.test_on_batch({x}, {y});
  CHECK(t.at("loss") == doctest::Approx(whole.at("loss")).epsilon(1e-5));
  std::int64_t steps = model.optimizer().iterations();
  model.train_on_batch({x}, {y});
  CHECK(model.optimizer().iterations() == steps + 1);
}

TEST_CASE("fit: classification with validation, accuracy and class weights") {
  clear_session();
  set_random_seed(3);
  auto [x, y] = blobs(120, 3, 5);
  Sequential model({layers::Input({4}), layers::Dense(16, {.activation = "relu"}), layers::Dense(3, {.activation = "softmax"})});
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  auto history = model.fit(x, y, {.batch_size = 16, .epochs = 30, .verbose = 0, .validation_split = 0.25});
  CHECK(history.history.count("val_loss") == 1);
  CHECK(history.history.count("val_accuracy") == 1);
  CHECK(history.history.at("accuracy").back() > 0.9);
  CHECK(history.history.at("val_accuracy").back() > 0.9);

  // class_weight multiplies each sample's loss: weight 2 for every class doubles the loss.
  auto plain = model.test_on_batch({x}, {y});
  auto doubled = model.test_on_batch({x}, {y}, Tensor::full({120}, 2.0));
  CHECK(doubled.at("loss") == doctest::Approx(2 * plain.at("loss")).epsilon(1e-5));
  CHECK(doubled.at("accuracy") == doctest::Approx(plain.at("accuracy")));
}

TEST_CASE("multi-output training reports per-output losses and weighted totals") {
  clear_session();
  auto x = layers::Input({3});
  auto h = layers::Dense(4)(x);
  auto o1 = layers::Dense(1, {.name = "reg"})(h);
  auto o2 = layers::Dense(2, {.activation = "softmax", .name = "cls"})(h);
  Model both({x}, {o1, o2});
  both.compile("sgd", {losses::Loss("mse"), losses::Loss("sparse_categorical_crossentropy")}, {"accuracy"},
               {.loss_weights = {1.0, 0.5}});
  auto data = random_normal({8, 3}, 0, 1, 9);
  auto t1 = random_normal({8, 1}, 0, 1, 10);
  auto t2 = Tensor::from_vector<std::int32_t>({8}, {0, 1, 1, 0, 1, 0, 0, 1});
  auto logs = both.test_on_batch({data}, {t1, t2});
  std::vector<std::string> keys;
  for (const auto& [k, v] : logs.entries()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"loss", "reg_loss", "cls_loss", "reg_accuracy", "cls_accuracy"});
  CHECK(logs.at("loss") == doctest::Approx(logs.at("reg_loss") + 0.5 * logs.at("cls_loss")).epsilon(1e-5));
}

TEST_CASE("trainable = false freezes weights; regularizers add to the loss") {
  clear_session();
  auto [x, y] = linear_data(16, 2);
  layers::Dense frozen(4, {.kernel_regularizer = regularizers::l2(0.1)});
  Sequential model({layers::Input({3}), frozen, layers::Dense(1)});
  frozen.set_trainable(false);
  model.compile("sgd", "mse");
  CHECK(model.trainable_weights().size() == 2);
  CHECK(model.non_trainable_weights().size() == 2);
  auto before = frozen.get_weights();
  model.fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0});
  auto after = frozen.get_weights();
  CHECK(before[0].to_vector<float>() == after[0].to_vector<float>());

  // The l2 penalty is in the reported loss: loss = mse + 0.1 * sum(k^2).
  auto k = frozen.get_weights()[0].to_vector<float>();
  double penalty = 0;
  for (float v : k) penalty += 0.1 * v * v;
  auto pred = model.predict(x).to_vector<float>();
  auto target = y.to_vector<float>();
  double mse = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) mse += (pred[i] - target[i]) * (pred[i] - target[i]) / 16.0;
  CHECK(model.evaluate(x, y, {.verbose = 0})[0] == doctest::Approx(mse + penalty).epsilon(1e-4));
}

TEST_CASE("Sequential: add, pop, build from data, set_weights errors") {
  clear_session();
  Sequential model;
  model.add(layers::Dense(5, {.activation = "relu"}));
  model.add(layers::Dense(2));
  auto x = random_normal({4, 7}, 0, 1, 1);
  CHECK(model.predict(x).shape() == Shape{4, 2});  // built from the data: (None, 7)
  CHECK(model.count_params() == 7 * 5 + 5 + 5 * 2 + 2);
  model.pop();
  CHECK(model.layers().size() == 1);
  CHECK(model.predict(x).shape() == Shape{4, 5});

  auto msg = message_of<ShapeError>([&] { model.layers()[0]->set_weights({Tensor::zeros({7, 4}), Tensor::zeros({5})}); });
  CHECK(contains(msg, "(7, 5)"));
  CHECK(contains(msg, "(7, 4)"));
  auto count = message_of<ValueError>([&] { model.set_weights({Tensor::zeros({7, 5})}); });
  CHECK(contains(count, "got 1 arrays"));
  auto wrong_input = message_of<ShapeError>([&] { model.predict(random_normal({2, 6}, 0, 1, 1)); });
  CHECK(contains(wrong_input, "(None, 7)"));
  auto no_compile = message_of<ValueError>([&] { model.evaluate(x, x, {.verbose = 0}); });
  CHECK(contains(no_compile, "compile()"));
}

TEST_CASE("an op's error inside a layer names the layer") {
  clear_session();
  auto x = layers::Input({2, 2, 1});
  auto msg = message_of<ShapeError>([&] { layers::Conv2D(4, {3, 3}, {.name = "too_big"})(x); });
  CHECK(contains(msg, "Conv2D \"too_big\""));
}

TEST_CASE("a Sequential copied into a Model keeps Sequential's layers and name") {
  clear_session();
  Sequential seq({layers::Input({3}), layers::Dense(2)});
  Model copy = seq;
  CHECK(copy.layers().size() == 1);
  CHECK(copy.class_name() == "Sequential");
  CHECK(copy.layers()[0]->name() == "dense");
}

TEST_CASE("fit: bad data gets clear errors") {
  clear_session();
  Sequential model({layers::Input({4}), layers::Dense(3, {.activation = "softmax"})});
  model.compile("sgd", "sparse_categorical_crossentropy", {"accuracy"});
  auto x = random_normal({6, 4}, 0, 1, 1);
  auto counts = message_of<ShapeError>(
      [&] { model.fit(x, Tensor::from_vector<std::int32_t>({5}, {0, 1, 2, 0, 1}), {.verbose = 0}); });
  CHECK(contains(counts, "same number of samples"));
  CHECK(contains(counts, "6, 5"));
  auto range = message_of<ValueError>(
      [&] { model.fit(x, Tensor::from_vector<std::int32_t>({6}, {0, 1, 2, 7, 1, 0}), {.verbose = 0}); });
  CHECK(contains(range, "7"));
  CHECK(contains(message_of<ValueError>([&] { model.fit(x, x, {.batch_size = 0}); }), "batch_size"));
  CHECK(contains(message_of<ValueError>([&] { model.fit(x, x, {.validation_split = 1.0}); }), "validation_split"));
  CHECK(contains(message_of<ValueError>([&] { model.fit(x, x, {.validation_split = std::nan("")}); }),
                 "validation_split must be in [0, 1), got nan"));
  auto arity = message_of<ValueError>([&] { model.fit(std::vector<Tensor>{x, x}, std::vector<Tensor>{x}, {.verbose = 0}); });
  CHECK(contains(arity, "expects 1 input arrays, got 2"));
}

TEST_CASE("fit honours set_initial_position set in on_train_begin (BackupAndRestore's hook)") {
  clear_session();
  auto [x, y] = linear_data(20, 3);
  struct Resume : Callback {
    Resume(int epoch, std::int64_t step) : epoch_(epoch), step_(step) {}
    void on_train_begin(const Logs&) override { model().set_initial_position(epoch_, step_); }
    void on_epoch_begin(int epoch, const Logs&) override { epochs.push_back(epoch); }
    void on_train_batch_begin(std::int64_t batch, const Logs&) override { batches.push_back(batch); }
    int epoch_;
    std::int64_t step_;
    std::vector<int> epochs;
    std::vector<std::int64_t> batches;
  };
  Sequential model({layers::Input({3}), layers::Dense(1)});
  model.compile("sgd", "mse");
  auto resume = std::make_shared<Resume>(1, 2);
  auto history = model.fit(x, y, {.batch_size = 5, .epochs = 3, .verbose = 0, .callbacks = {resume}});
  CHECK(resume->epochs == std::vector<int>{1, 2});
  CHECK(resume->batches == std::vector<std::int64_t>{2, 3, 0, 1, 2, 3});
  CHECK(model.optimizer().iterations() == 6);
  CHECK(history.epoch == std::vector<int>{1, 2});
  // A position at the end of an epoch trains none of it and goes on with the next.
  auto at_end = std::make_shared<Resume>(0, 4);
  model.fit(x, y, {.batch_size = 5, .epochs = 2, .verbose = 0, .callbacks = {at_end}});
  CHECK(at_end->batches == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(model.optimizer().iterations() == 10);
}

TEST_CASE("fit on arrays: each epoch's order is epoch_permutation(n, seed, epoch)") {
  clear_session();
  // y = the sample id and a model that predicts 0 and never learns (learning rate 0): the loss of a
  // batch of one sample is its squared id, so the running averages tell which sample came when.
  auto ids = Tensor::from_vector<float>({6, 1}, {0, 1, 2, 3, 4, 5});
  Sequential model({layers::Input({1}), layers::Dense(1, {.kernel_initializer = "zeros"})});
  model.compile(optimizers::SGD(0.0), "mse");
  struct Losses : Callback {
    void on_train_batch_end(std::int64_t, const Logs& logs) override { running.push_back(logs.at("loss")); }
    std::vector<double> running;
  };
  auto seen = std::make_shared<Losses>();
  model.fit(ids, ids, {.batch_size = 1, .epochs = 2, .verbose = 0, .callbacks = {seen}, .seed = 17});
  // The running average after batch k times (k + 1), minus the sum before it: sample k's squared id.
  std::vector<std::int64_t> order;
  double sum = 0.0;
  for (std::size_t i = 0; i < seen->running.size(); ++i) {
    const std::size_t k = i % 6;
    if (k == 0) sum = 0.0;
    const double total = seen->running[i] * static_cast<double>(k + 1);
    order.push_back(std::llround(std::sqrt(total - sum)));
    sum = total;
  }
  auto e0 = epoch_permutation(6, 17, 0), e1 = epoch_permutation(6, 17, 1);
  CHECK(std::vector<std::int64_t>(order.begin(), order.begin() + 6) == e0);
  CHECK(std::vector<std::int64_t>(order.begin() + 6, order.end()) == e1);
}

TEST_CASE("DefaultDeviceScope: a model built under it keeps its weights there and trains there, as on cpu:0") {
  auto [x, y] = blobs(96, 3, 7);
  const auto train = [&](const char* where) {
    clear_session();
    set_random_seed(11);
    DefaultDeviceScope scope(where);
    Sequential model({layers::Input({4}), layers::Dense(8, {.activation = "relu"}), layers::Dropout(0.2),
                      layers::Dense(3, {.activation = "softmax"})});
    for (const auto& w : model.weights()) CHECK(w->value().device().name() == where);
    model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
    auto history = model.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0});
    return std::make_pair(history.history.at("loss"), model.get_weights());
  };
  const auto [loss_0, weights_0] = train("cpu:0");
  CHECK(default_device().name() == "cpu:0");  // the scope has ended
  const auto [loss_1, weights_1] = train("cpu:1");
  REQUIRE(loss_1.size() == loss_0.size());
  for (std::size_t i = 0; i < loss_0.size(); ++i) CHECK(loss_1[i] == doctest::Approx(loss_0[i]).epsilon(1e-5));
  for (std::size_t i = 0; i < weights_0.size(); ++i) {
    CHECK(weights_1[i].device().name() == "cpu:0");  // get_weights gives host arrays
    tower::testing::check_close(weights_1[i], weights_0[i], 1e-4, 1e-5);
  }
}

TEST_CASE("DefaultDeviceScope: a model whose weights live on two devices trains with each layer where it is") {
  // Refused before issue 38 (placement by scope, tests/parallel/test_placement.cpp has the numbers).
  clear_session();
  Sequential inner({layers::Input({4}), layers::Dense(3)});  // on cpu:0
  DefaultDeviceScope scope("cpu:1");
  Sequential outer({layers::Input({4}), inner, layers::Dense(2)});  // the new Dense on cpu:1
  outer.compile("sgd", "mean_squared_error");
  auto [x, y] = blobs(8, 2, 1);
  const auto history = outer.fit(x, Tensor::full({8, 2}, 0.5), {.epochs = 2, .verbose = 0});
  CHECK(std::isfinite(history.history.at("loss").back()));
  CHECK(inner.weights()[0]->value().device().name() == "cpu:0");
  CHECK(outer.layers().back()->weights()[0]->value().device().name() == "cpu:1");
}
