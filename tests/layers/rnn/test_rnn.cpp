// The recurrent layers SimpleRNN, LSTM and GRU: shapes, Keras's weight names, layouts and initial
// values, initial states, return_state, go_backwards, configs, errors, and training. Their numbers
// against real Keras are in tests/golden (the rnn case).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tower/core/random.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tower/optimizers/optimizers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::layers;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::float32_random;
using tower::testing::random_tensor;
using tower::testing::run_layer;
using nlohmann::json;

namespace {


std::vector<std::string> weight_names(const Layer& layer) {
  std::vector<std::string> names;
  for (const auto& w : layer.weights()) names.push_back(w->name() + " " + w->shape().to_string());
  return names;
}

}  // namespace

TEST_CASE("recurrent layers: output shapes, return_sequences and return_state") {
  auto x = Input({7, 3});
  CHECK(LSTM(4)(x).shape() == Shape{-1, 4});
  CHECK(GRU(5, {.return_sequences = true})(x).shape() == Shape{-1, 7, 5});
  CHECK(SimpleRNN(2, {.go_backwards = true})(x).shape() == Shape{-1, 2});
  auto lstm = LSTM(4, {.return_sequences = true, .return_state = true}).call_multi({x});
  REQUIRE(lstm.size() == 3);
  CHECK(lstm[0].shape() == Shape{-1, 7, 4});
  CHECK(lstm[1].shape() == Shape{-1, 4});
  CHECK(lstm[2].shape() == Shape{-1, 4});
  CHECK(GRU(3, {.return_state = true}).call_multi({x}).size() == 2);
}

TEST_CASE("recurrent layers: Keras's weight names, shapes and initial values") {
  clear_session();
  LSTM lstm(4);
  lstm.ensure_built({{-1, 7, 3}});
  CHECK(weight_names(lstm) == std::vector<std::string>{"lstm/lstm_cell/kernel:0 (3, 16)",
                                                       "lstm/lstm_cell/recurrent_kernel:0 (4, 16)",
                                                       "lstm/lstm_cell/bias:0 (16,)"});
  // unit_forget_bias: zeros for i, c and o, ones for f.
  const auto bias = lstm.get_weights()[2].to_vector<float>();
  for (int k = 0; k < 16; ++k) CHECK(bias[k] == (k >= 4 && k < 8 ? 1.0f : 0.0f));
  // The recurrent kernel is orthogonal: its rows (4 of length 16) are orthonormal.
  const auto rk = lstm.get_weights()[1].to_vector<float>();
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      double dot = 0;
      for (int k = 0; k < 16; ++k) dot += rk[a * 16 + k] * rk[b * 16 + k];
      CHECK(dot == doctest::Approx(a == b ? 1.0 : 0.0).epsilon(1e-5));
    }
  LSTM no_forget(2, {.unit_forget_bias = false});
  no_forget.ensure_built({{-1, 7, 3}});
  for (float b : no_forget.get_weights()[2].to_vector<float>()) CHECK(b == 0.0f);

  GRU gru(5, {.name = "g"});
  gru.ensure_built({{-1, 7, 3}});
  CHECK(weight_names(gru) == std::vector<std::string>{"g/gru_cell/kernel:0 (3, 15)",
                                                      "g/gru_cell/recurrent_kernel:0 (5, 15)",
                                                      "g/gru_cell/bias:0 (2, 15)"});
  GRU gru_before(5, {.reset_after = false});
  gru_before.ensure_built({{-1, 7, 3}});
  CHECK(gru_before.get_weights()[2].shape() == Shape{15});
  SimpleRNN rnn(2, {.use_bias = false, .name = "r"});
  rnn.ensure_built({{-1, 7, 3}});
  CHECK(weight_names(rnn) == std::vector<std::string>{"r/simple_rnn_cell/kernel:0 (3, 2)",
                                                      "r/simple_rnn_cell/recurrent_kernel:0 (2, 2)"});
}

TEST_CASE("recurrent layers: initial states, final states and go_backwards") {
  const Tensor x = float32_random({2, 5, 3}, 1), h0 = float32_random({2, 4}, 2), c0 = float32_random({2, 4}, 3);
  LSTM lstm(4, {.return_sequences = true, .return_state = true});
  auto out = run_layer(lstm, {x, h0, c0});
  REQUIRE(out.size() == 3);
  // The last step of the sequence is the final h.
  const auto seq = out[0].to_vector<float>(), h = out[1].to_vector<float>();
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 4; ++j) CHECK(seq[(b * 5 + 4) * 4 + j] == h[b * 4 + j]);
  // Other initial states change the result; zeros are the default.
  LSTM same(4, {.return_sequences = true, .return_state = true});
  same.ensure_built({{-1, 5, 3}});
  same.set_weights(lstm.get_weights());
  auto zero_state = run_layer(same, {x});
  auto explicit_zeros = run_layer(same, {x, Tensor::zeros({2, 4}), Tensor::zeros({2, 4})});
  check_close(zero_state[0], explicit_zeros[0], 0, 0);
  CHECK(zero_state[1].to_vector<float>() != h);

  // go_backwards reads the sequence reversed: the same as running forwards on x reversed in time,
  // with the outputs in the order they were computed.
  GRU forwards(3, {.return_sequences = true});
  forwards.ensure_built({{-1, 5, 3}});
  GRU backwards(3, {.return_sequences = true, .go_backwards = true});
  backwards.ensure_built({{-1, 5, 3}});
  backwards.set_weights(forwards.get_weights());
  std::vector<float> reversed(30);
  const auto xv = x.to_vector<float>();
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 5; ++t)
      for (int f = 0; f < 3; ++f) reversed[(b * 5 + t) * 3 + f] = xv[(b * 5 + 4 - t) * 3 + f];
  check_close(run_layer(backwards, {x})[0], run_layer(forwards, {Tensor::from_vector<float>({2, 5, 3}, reversed)})[0],
              1e-6, 1e-6);
}

TEST_CASE("recurrent layers: configs round-trip in tf.keras 2's spelling") {
  LSTM lstm(3, {.recurrent_activation = "hard_sigmoid", .unit_forget_bias = false, .return_sequences = true,
                .go_backwards = true, .dropout = 0.25, .recurrent_dropout = 0.5, .seed = 9, .name = "enc"});
  auto config = lstm.get_config();
  CHECK(config["units"] == 3);
  CHECK(config["recurrent_activation"] == "hard_sigmoid");
  CHECK(config["unit_forget_bias"] == false);
  CHECK(config["implementation"] == 2);
  CHECK(config["dropout"] == 0.25);
  CHECK(config["recurrent_dropout"] == 0.5);
  CHECK(config["seed"] == 9);
  CHECK(config["recurrent_initializer"]["class_name"] == "Orthogonal");
  CHECK(!config.contains("reset_after"));
  auto back = layer_from_config({{"class_name", "LSTM"}, {"config", config}});
  CHECK(back->get_config() == config);

  GRU gru(2, {.reset_after = false, .name = "g2"});
  auto gconfig = gru.get_config();
  CHECK(gconfig["reset_after"] == false);
  CHECK(!gconfig.contains("unit_forget_bias"));
  CHECK(layer_from_config({{"class_name", "GRU"}, {"config", gconfig}})->get_config() == gconfig);
  SimpleRNN rnn(2, {.activation = "relu", .name = "s"});
  auto sconfig = rnn.get_config();
  CHECK(!sconfig.contains("recurrent_activation"));
  CHECK(layer_from_config({{"class_name", "SimpleRNN"}, {"config", sconfig}})->get_config() == sconfig);
}

TEST_CASE("recurrent layers: bad arguments and input are named") {
  CHECK(contains(message_of<ValueError>([] { LSTM(4, {.reset_after = false, .name = "l"}); }), "reset_after is not an argument of LSTM"));
  CHECK(contains(message_of<ValueError>([] { GRU(4, {.unit_forget_bias = true}); }), "only of LSTM"));
  CHECK(contains(message_of<ValueError>([] { SimpleRNN(4, {.recurrent_activation = "sigmoid"}); }), "LSTM and GRU"));
  CHECK(contains(message_of<ValueError>([] { LSTM(0); }), "units must be positive"));
  CHECK(contains(message_of<ValueError>([] { GRU(3, {.activation = "gelu", .name = "gg"}); }), "GRU \"gg\""));
  CHECK(contains(message_of<ShapeError>([] { LSTM(3)(Input({4})); }), "(batch, time, features)"));
  CHECK(LSTM(3)(Input({-1, 4})).shape() == Shape{-1, 3});  // any number of steps (test_unknown_steps.cpp)
  CHECK(contains(message_of<ValueError>([] { LSTM(3).call_multi({Input({5, 4}), Input({3})}); }), "initial_state"));
  CHECK(contains(message_of<ValueError>([] { LSTM(2, {.recurrent_dropout = 1.0}); }), "recurrent_dropout"));
  CHECK(contains(message_of<ValueError>([] {
          Sequential model({Input({5, 2}), LSTM(3, {.stateful = true})});
          model.predict(Tensor::zeros({2, 5, 2}));
        }),
        "fixed batch size"));
}

TEST_CASE("recurrent layers: recurrent dropout runs the cell step by step, with the fused op's numbers") {
  // Rates so small that every mask is 1 / (1 - rate) ~ 1: the step-by-step cell (training) must give
  // the fused op's outputs (inference), for every cell and both GRU variants.
  const Tensor x = float32_random({3, 4, 2}, 21);
  const double tiny = 1e-7;
  auto check = [&](Recurrent& dropped, Recurrent& plain) {
    CAPTURE(dropped.class_name());
    plain.ensure_built({{-1, 4, 2}});
    dropped.ensure_built({{-1, 4, 2}});
    dropped.set_weights(plain.get_weights());
    auto trained = run_layer(dropped, {x}, /*training=*/true);
    auto inferred = run_layer(plain, {x});
    for (std::size_t i = 0; i < trained.size(); ++i) check_close(trained[i], inferred[i], 1e-5, 1e-6);
  };
  const RecurrentOptions all{.return_sequences = true, .return_state = true, .go_backwards = true};
  RecurrentOptions with_dropout = all;
  with_dropout.dropout = tiny;
  with_dropout.recurrent_dropout = tiny;
  SimpleRNN s1(3, with_dropout), s2(3, all);
  check(s1, s2);
  LSTM l1(3, with_dropout), l2(3, all);
  check(l1, l2);
  GRU g1(3, with_dropout), g2(3, all);
  check(g1, g2);
  with_dropout.reset_after = false;
  RecurrentOptions before = all;
  before.reset_after = false;
  GRU g3(3, with_dropout), g4(3, before);
  check(g3, g4);
}

TEST_CASE("recurrent layers: input dropout drops whole features of a sequence, in training only") {
  // A linear SimpleRNN with kernel I and recurrent kernel 0 returns its (dropped) input.
  const Tensor x = float32_random({8, 5, 4}, 31);
  SimpleRNN rnn(4, {.activation = "linear", .use_bias = false, .return_sequences = true, .dropout = 0.5, .seed = 3});
  rnn.ensure_built({{-1, 5, 4}});
  std::vector<float> eye(16, 0.0f);
  for (int i = 0; i < 4; ++i) eye[i * 5] = 1.0f;
  rnn.set_weights({Tensor::from_vector<float>({4, 4}, eye), Tensor::zeros({4, 4})});
  check_close(run_layer(rnn, {x})[0], x, 0, 0);
  const auto y = run_layer(rnn, {x}, /*training=*/true)[0].to_vector<float>();
  const auto xv = x.to_vector<float>();
  int dropped = 0;
  for (int b = 0; b < 8; ++b)
    for (int f = 0; f < 4; ++f) {
      const bool zero = y[(b * 5) * 4 + f] == 0.0f;
      dropped += zero;
      for (int t = 0; t < 5; ++t) {
        const int e = (b * 5 + t) * 4 + f;
        CHECK(y[e] == doctest::Approx(zero ? 0.0f : 2.0f * xv[e]));
      }
    }
  CHECK(dropped > 4);
  CHECK(dropped < 28);
}

TEST_CASE("recurrent layers: stateful layers carry their states from batch to batch") {
  // Two halves of a sequence through a stateful LSTM give what the whole sequence gives.
  const Tensor x = float32_random({2, 6, 3}, 41);
  std::vector<float> first, second;
  const auto xv = x.to_vector<float>();
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 6; ++t)
      for (int f = 0; f < 3; ++f) (t < 3 ? first : second).push_back(xv[(b * 6 + t) * 3 + f]);
  Sequential whole({Input({6, 3}), LSTM(4, {.name = "whole"})});
  Sequential halves({Input({3, 3}, {.batch_size = 2}), LSTM(4, {.stateful = true, .name = "halves"})});
  halves.set_weights(whole.get_weights());
  const Tensor a = Tensor::from_vector<float>({2, 3, 3}, first), b = Tensor::from_vector<float>({2, 3, 3}, second);
  const Tensor start = halves.predict(a, {.batch_size = 2});
  check_close(halves.predict(b, {.batch_size = 2}), whole.predict(x), 1e-6, 1e-6);
  auto& lstm = dynamic_cast<LSTM&>(*halves.get_layer("halves"));
  REQUIRE(lstm.states().size() == 2);
  CHECK(lstm.states()[0]->shape() == Shape{2, 4});
  CHECK(lstm.weights().size() == 3);  // the states are not weights
  halves.reset_states();
  check_close(halves.predict(a, {.batch_size = 2}), start, 0, 0);
  // Training carries them too, and the config says stateful.
  halves.compile("sgd", "mse");
  halves.reset_states();
  halves.train_on_batch({a}, {Tensor::zeros({2, 4})});
  CHECK(lstm.states()[0]->value().to_vector<float>() != std::vector<float>(8, 0.0f));
  CHECK(lstm.get_config()["stateful"] == true);
}

TEST_CASE("recurrent layers: an LSTM learns to sum a sequence") {
  set_random_seed(5);
  // y = sum of x over time: a recurrent layer must carry it through the steps.
  const std::int64_t n = 256, time = 6;
  Tensor x = float32_random({n, time, 1}, 11);
  std::vector<float> y(n);
  const auto xv = x.to_vector<float>();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t t = 0; t < time; ++t) y[i] += xv[i * time + t];
  Sequential model({Input({time, 1}), LSTM(16), Dense(1)});
  model.compile(optimizers::Adam(0.01), "mse");
  auto history = model.fit(x, Tensor::from_vector<float>({n, 1}, y), {.batch_size = 32, .epochs = 30, .verbose = 0});
  const auto& loss = history.history.at("loss");
  CHECK(loss.back() < 0.05 * loss.front());
}
