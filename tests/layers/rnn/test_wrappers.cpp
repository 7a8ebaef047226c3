// Bidirectional: shapes, values against real Keras and against the wrapped layers run by hand, merge
// modes, states, gradients, weight names, configs of tf.keras 2 and Keras 3, weight files (with
// TimeDistributed), freezing, training and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/core/random.h"
#include "tower/io/hdf5.h"
#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tower/optimizers/optimizers.h"
#include "tests/layers/layer_testing.h"
#include "tests/layers/rnn/wrapper_testing.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using namespace tower::layers;
using namespace tower::testing;  // the wrapper helpers (wrapper_testing.h) and the shared ones
using nlohmann::json;
namespace h5 = tower::io::hdf5;

TEST_CASE("Bidirectional(LSTM): Keras's weight names and numbers, concat of the two directions") {
  clear_session();
  Bidirectional bi(LSTM(3, {.return_sequences = true}));
  CHECK(bi.name() == "bidirectional");
  CHECK(bi.forward_layer()->name() == "bidirectional/forward_lstm");
  CHECK(bi.backward_layer()->name() == "bidirectional/backward_lstm");
  CHECK(keras_shape(bi, {4, 2}) == Shape{-1, 4, 6});
  // tf_keras 2.21.0's names (model.weights of Bidirectional(LSTM(3))): forward then backward.
  CHECK(names(bi.weights()) == std::vector<std::string>{"bidirectional/forward_lstm/lstm_cell/kernel:0",
                                                        "bidirectional/forward_lstm/lstm_cell/recurrent_kernel:0",
                                                        "bidirectional/forward_lstm/lstm_cell/bias:0",
                                                        "bidirectional/backward_lstm/lstm_cell/kernel:0",
                                                        "bidirectional/backward_lstm/lstm_cell/recurrent_kernel:0",
                                                        "bidirectional/backward_lstm/lstm_cell/bias:0"});
  CHECK(bi.weights()[2]->shape() == Shape{12});
  CHECK(bi.count_params() == 2 * (2 * 12 + 3 * 12 + 12));

  // Keras 3.15.1 and tf_keras 2.21.0 printed the same (script: keras.layers.Bidirectional(
  // keras.layers.LSTM(3, return_sequences=True)) called on keras.Input((4, 2)), its weights set as
  // fill_as_keras_script does, then called on input_as_keras_script's (2, 4, 2)).
  const Tensor x = input_as_keras_script({2, 4, 2});
  fill_as_keras_script(bi);
  const Tensor y = run1(bi, x);
  CHECK(y.shape() == Shape{2, 4, 6});
  check_close(y,
              {0.090668999,  0.1008605,   0.068193205,  -0.093051895, -0.23179974, -0.28833985, 0.11695296,
               0.13394229,   0.097723037, -0.08385928,  -0.1906884,   -0.22697625, 0.11926562,  0.13552552,
               0.10350087,   -0.075551808, -0.14491247, -0.15316668,  0.11627153,  0.12411974,  0.092955612,
               -0.056170642, -0.089259498, -0.078900754, 0.065475903, 0.051608842, 0.02335638,  -0.14249584,
               -0.16226102,  -0.093685508, 0.09852419,  0.076567605,  0.032939855,  -0.14531423, -0.16791318,
               -0.096522622, 0.12043066,  0.095583618,  0.044467255,  -0.12636484,  -0.1634059,  -0.1100546,
               0.13815542,   0.1154429,   0.062472455,  -0.07884562,  -0.11872268,  -0.09679018},
              1e-5, 1e-6);

  // The same as the forward LSTM with the first three weights, concatenated with the output of an LSTM
  // with go_backwards and the last three, put back in forward time order.
  const Tensor x2 = float32_random({3, 5, 2}, 11);
  const auto [forward, backward] = run_halves(
      bi, [](bool back) { return LSTM(3, {.return_sequences = true, .go_backwards = back}).share(); }, x2);
  check_close(run1(bi, x2), concat_last(forward[0], reversed_in_time(backward[0])), 1e-6, 1e-7);

  Bidirectional fresh(LSTM(2, {.return_sequences = true}));
  check_layer_gradients(fresh, {{2, 3, 2}});
}

TEST_CASE("Bidirectional: merge modes sum, mul, ave and None, with and without return_sequences") {
  const Tensor x = float32_random({2, 4, 3}, 21);
  for (const bool sequences : {true, false}) {
    CAPTURE(sequences);
    auto make = [&](bool back) { return GRU(2, {.return_sequences = sequences, .go_backwards = back}).share(); };
    for (const char* mode : {"concat", "sum", "mul", "ave"}) {
      CAPTURE(mode);
      Bidirectional bi(GRU(2, {.return_sequences = sequences}), {.merge_mode = mode});
      CHECK(keras_shape(bi, {4, 3}) == (sequences ? Shape{-1, 4, std::string(mode) == "concat" ? 4 : 2}
                                                  : Shape{-1, std::string(mode) == "concat" ? 4 : 2}));
      const auto [forward, backward] = run_halves(bi, make, x);
      // Without return_sequences the outputs are the final steps: nothing to reverse.
      const Tensor y = forward[0], y_rev = sequences ? reversed_in_time(backward[0]) : backward[0];
      const std::string m = mode;
      const Tensor expected = m == "concat" ? concat_last(y, y_rev)
                              : m == "sum"  ? combine(y, y_rev, [](float a, float b) { return a + b; })
                              : m == "mul"  ? combine(y, y_rev, [](float a, float b) { return a * b; })
                                            : combine(y, y_rev, [](float a, float b) { return (a + b) / 2; });
      check_close(run1(bi, x), expected, 1e-6, 1e-7);
    }
    // None: both outputs, the backward one in forward time order.
    Bidirectional both(GRU(2, {.return_sequences = sequences}), {.merge_mode = std::nullopt});
    auto outputs = both.call_multi({Input({4, 3})});
    REQUIRE(outputs.size() == 2);
    CHECK(outputs[1].shape() == (sequences ? Shape{-1, 4, 2} : Shape{-1, 2}));
    const auto [forward, backward] = run_halves(both, make, x);
    const auto got = run_layer(both, {x});
    check_close(got.at(0), forward[0], 1e-6, 1e-7);
    check_close(got.at(1), sequences ? reversed_in_time(backward[0]) : backward[0], 1e-6, 1e-7);
  }
  Bidirectional ave(SimpleRNN(2, {.return_sequences = true}), {.merge_mode = "ave"});
  check_layer_gradients(ave, {{2, 3, 2}});
  Bidirectional none(SimpleRNN(2), {.merge_mode = std::nullopt});
  check_layer_gradients(none, {{2, 3, 2}});
}

TEST_CASE("Bidirectional: return_state and initial states (Keras's halves)") {
  // Keras 3.15.1 and tf_keras 2.21.0 printed the same (script: keras.layers.Bidirectional(
  // keras.layers.GRU(2, return_state=True), merge_mode="sum") called on keras.Input((4, 2)), weights
  // as fill_as_keras_script, called on input_as_keras_script's (2, 4, 2)): output, forward h, backward h.
  Bidirectional gru(GRU(2, {.return_state = true}), {.merge_mode = "sum"});
  auto symbolic = gru.call_multi({Input({4, 2})});
  REQUIRE(symbolic.size() == 3);
  fill_as_keras_script(gru);
  const auto out = run_layer(gru, {input_as_keras_script({2, 4, 2})});
  REQUIRE(out.size() == 3);
  check_close(out[0], {0.0074319243, 0.1657207, 0.20477562, 0.24915005}, 1e-5, 1e-6);
  check_close(out[1], {-0.25560057, -0.086629249, -0.23081757, 0.016988505}, 1e-5, 1e-6);
  check_close(out[2], {0.2630325, 0.25234994, 0.43559319, 0.23216155}, 1e-5, 1e-6);

  // LSTM: output(s), then the forward h and c, then the backward h and c; initial_state is
  // [h_forward, c_forward, h_backward, c_backward].
  Bidirectional lstm(LSTM(3, {.return_sequences = true, .return_state = true}), {.merge_mode = std::nullopt});
  auto outputs = lstm.call_multi({Input({5, 2}), Input({3}), Input({3}), Input({3}), Input({3})});
  REQUIRE(outputs.size() == 6);
  CHECK(outputs[0].shape() == Shape{-1, 5, 3});
  CHECK(outputs[5].shape() == Shape{-1, 3});
  const Tensor x = float32_random({2, 5, 2}, 31);
  std::vector<Tensor> states;
  for (std::uint64_t s = 0; s < 4; ++s) states.push_back(float32_random({2, 3}, 40 + s));
  const auto [forward, backward] = run_halves(
      lstm, [](bool back) { return LSTM(3, {.return_sequences = true, .return_state = true, .go_backwards = back}).share(); },
      x, {states[0], states[1]}, {states[2], states[3]});
  const auto got = run_layer(lstm, {x, states[0], states[1], states[2], states[3]});
  REQUIRE(got.size() == 6);
  check_close(got[0], forward[0], 1e-6, 1e-7);
  check_close(got[1], reversed_in_time(backward[0]), 1e-6, 1e-7);
  check_close(got[2], forward[1], 1e-6, 1e-7);  // forward h, c
  check_close(got[3], forward[2], 1e-6, 1e-7);
  check_close(got[4], backward[1], 1e-6, 1e-7);  // backward h, c
  check_close(got[5], backward[2], 1e-6, 1e-7);
  // The states change the result.
  CHECK(run_layer(lstm, {x})[0].to_vector<float>() != got[0].to_vector<float>());

  auto odd = message_of<ValueError>([&] { lstm.call_multi({Input({5, 2}), Input({3})}); });
  CHECK(contains(odd, "an even number"));
  auto wrong = message_of<ValueError>([&] { lstm.call_multi({Input({5, 2}), Input({3}), Input({3})}); });
  CHECK(contains(wrong, "initial_state"));
  Bidirectional states_grad(SimpleRNN(2, {.return_sequences = true, .return_state = true}));
  check_layer_gradients(states_grad, {{2, 3, 2}, {2, 2}, {2, 2}});
}

TEST_CASE("Bidirectional: backward_layer, go_backwards, freezing and configs") {
  clear_session();
  GRU gru(2);
  GRU gru_back(2, {.go_backwards = true});  // "gru_1"
  Bidirectional bi(gru, {.merge_mode = std::nullopt, .backward_layer = gru_back});
  bi.ensure_built({{-1, 4, 3}});
  // tf_keras 2.21.0's names for Bidirectional(GRU(2), backward_layer=GRU(2, go_backwards=True)).
  CHECK(names(bi.weights()) == std::vector<std::string>{"bidirectional/forward_gru/gru_cell/kernel:0",
                                                        "bidirectional/forward_gru/gru_cell/recurrent_kernel:0",
                                                        "bidirectional/forward_gru/gru_cell/bias:0",
                                                        "bidirectional/backward_gru_1/gru_cell/kernel:0",
                                                        "bidirectional/backward_gru_1/gru_cell/recurrent_kernel:0",
                                                        "bidirectional/backward_gru_1/gru_cell/bias:0"});
  // A backward layer of another class and width: concat is fine.
  Bidirectional mixed(LSTM(3, {.return_sequences = true}),
                      {.backward_layer = SimpleRNN(2, {.return_sequences = true, .go_backwards = true})});
  CHECK(keras_shape(mixed, {4, 3}) == Shape{-1, 4, 5});
  // A wrapped layer with go_backwards: the forward copy keeps it, the backward copy reads forwards.
  Bidirectional flipped(SimpleRNN(2, {.go_backwards = true}));
  CHECK(static_cast<const Recurrent&>(*flipped.forward_layer()).options().go_backwards);
  CHECK_FALSE(static_cast<const Recurrent&>(*flipped.backward_layer()).options().go_backwards);

  // Freezing the wrapper freezes both directions.
  bi.set_trainable(false);
  CHECK(bi.trainable_weights().empty());
  CHECK(bi.non_trainable_weights().size() == 6);
  CHECK_FALSE(bi.forward_layer()->trainable());
  CHECK_FALSE(bi.backward_layer()->trainable());
  bi.set_trainable(true);
  CHECK(bi.trainable_weights().size() == 6);
  // Regularizers of the wrapped layer apply to both copies.
  Bidirectional regularized(LSTM(2, {.kernel_regularizer = regularizers::l2(0.01)}));
  regularized.ensure_built({{-1, 3, 2}});
  Graph graph;
  CHECK(regularized.regularization_losses(graph).size() == 2);

  // tf.keras 2's config: the wrapped layer's config as given, merge_mode, and the given backward layer.
  const json config = bi.get_config();
  CHECK(config["name"] == "bidirectional");
  CHECK(config["layer"]["class_name"] == "GRU");
  CHECK(config["layer"]["config"] == gru.get_config());
  CHECK(config["layer"]["config"]["name"] == "gru");
  CHECK(config["merge_mode"].is_null());
  CHECK(config["backward_layer"]["config"]["name"] == "gru_1");
  CHECK(config["backward_layer"]["config"]["go_backwards"] == true);
  const LayerPtr back = layer_from_config({{"class_name", "Bidirectional"}, {"config", config}});
  CHECK(back->get_config() == config);
  back->ensure_built({{-1, 4, 3}});
  CHECK(names(back->weights()) == names(bi.weights()));
  const json plain = Bidirectional(LSTM(2, {.name = "l"}), {.name = "b"}).get_config();
  CHECK(plain["merge_mode"] == "concat");
  CHECK_FALSE(plain.contains("backward_layer"));
  CHECK(layer_from_config({{"class_name", "Bidirectional"}, {"config", plain}})->get_config() == plain);

  // Keras 3.15.1's config of Bidirectional(LSTM(2, return_sequences=True, name="l"), merge_mode="ave",
  // name="bi"): the copies' configs ("forward_l", "backward_l", zero_output_for_mask forced to true).
  std::string k3_lstm = R"({"module": "keras.layers", "class_name": "LSTM", "config": {"name": "NAME", "trainable": true,
      "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
      "return_sequences": true, "return_state": false, "go_backwards": BACK, "stateful": false, "unroll": false,
      "zero_output_for_mask": true, "units": 2, "activation": "tanh", "recurrent_activation": "sigmoid", "use_bias":
      true, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed":
      null, "input_axes": null, "output_axes": null}, "registered_name": null}, "recurrent_initializer": {"module":
      "keras.initializers", "class_name": "Orthogonal", "config": {"seed": null, "gain": 1.0}, "registered_name":
      null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {},
      "registered_name": null}, "unit_forget_bias": true, "kernel_regularizer": null, "recurrent_regularizer": null,
      "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null, "recurrent_constraint":
      null, "bias_constraint": null, "dropout": 0.0, "recurrent_dropout": 0.0, "seed": null}, "registered_name": null,
      "build_config": {"input_shape": [null, 3, 4]}})";
  auto lstm_config = [&](const char* name, const char* backwards) {
    std::string s = k3_lstm;
    s.replace(s.find("NAME"), 4, name);
    s.replace(s.find("BACK"), 4, backwards);
    return json::parse(s);
  };
  const json keras3{{"name", "bi"},
                    {"trainable", true},
                    {"dtype", json::parse(R"({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null})")},
                    {"merge_mode", "ave"},
                    {"layer", lstm_config("forward_l", "false")},
                    {"backward_layer", lstm_config("backward_l", "true")}};
  const LayerPtr read3 = layer_from_config({{"class_name", "Bidirectional"}, {"config", keras3}});
  CHECK(keras_shape(*read3, {3, 4}) == Shape{-1, 3, 2});
  // Keras 3's variable paths: bi/forward_l/lstm_cell/kernel, ..., bi/backward_l/lstm_cell/bias.
  CHECK(read3->weights().at(0)->name() == "bi/forward_l/lstm_cell/kernel:0");
  CHECK(read3->weights().at(5)->name() == "bi/backward_l/lstm_cell/bias:0");
}

TEST_CASE("Bidirectional and TimeDistributed: save_weights / load_weights in Keras's layout") {
  clear_session();
  TempDir dir("wrappers");
  auto build = [] {
    auto x = Input({4, 3});
    auto h = TimeDistributed(Dense(5, {.activation = "tanh"}))(x);
    auto y = Bidirectional(LSTM(2))(h);
    return Model(x, Dense(1)(y));
  };
  Model model = build();
  const Tensor x = float32_random({3, 4, 3}, 51);
  const std::string path = dir / "w.h5";
  model.save_weights(path);

  // The wrapper's group holds the weights of the layers inside it, as Keras's files do.
  {
    h5::File file = h5::File::open(path);
    const auto layers = io::read_weight_file_layers(io::find_weights_group(file, "test"));
    REQUIRE(layers.size() == 4);
    CHECK(layers[1].name == "time_distributed");
    CHECK(layers[1].weight_names ==
          std::vector<std::string>{"time_distributed/kernel:0", "time_distributed/bias:0"});
    CHECK(layers[2].name == "bidirectional");
    CHECK(layers[2].weight_names == std::vector<std::string>{"bidirectional/forward_lstm/lstm_cell/kernel:0",
                                                             "bidirectional/forward_lstm/lstm_cell/recurrent_kernel:0",
                                                             "bidirectional/forward_lstm/lstm_cell/bias:0",
                                                             "bidirectional/backward_lstm/lstm_cell/kernel:0",
                                                             "bidirectional/backward_lstm/lstm_cell/recurrent_kernel:0",
                                                             "bidirectional/backward_lstm/lstm_cell/bias:0"});
    CHECK(layers[2].shapes[3] == Shape{5, 8});
  }
  Model other = build();
  CHECK(other.predict(x).to_vector<float>() != model.predict(x).to_vector<float>());
  other.load_weights(path);
  check_close(other.predict(x), model.predict(x), 0, 0);
  Model by_name = build();  // other layer names (time_distributed_2, ...): by position only
  CHECK(contains(message_of<ValueError>([&] { by_name.load_weights(path, {.by_name = true}); }), "no layer"));

  // The whole model: its config rebuilds both wrappers (and the layers inside) through the registry.
  const std::string model_path = dir / "m.h5";
  model.compile("adam", "mse");
  model.save(model_path);
  Model loaded = models::load_model(model_path);
  CHECK(names(loaded.weights()) == names(model.weights()));
  check_close(loaded.predict(x), model.predict(x), 0, 0);

  // A file laid out as tf.keras 2 writes it (TimeDistributed's weights named time_distributed/kernel:0)
  // loads by position.
  const std::string keras_path = dir / "keras.h5";
  {
    h5::File file = h5::File::create(keras_path);
    file.write_string_array_attr("layer_names", {"input_1", "time_distributed", "bidirectional", "dense_1"});
    file.write_string_attr("backend", "tensorflow");
    file.write_string_attr("keras_version", "2.15.0");
    const std::vector<std::vector<std::string>> weight_names{
        {},
        {"time_distributed/kernel:0", "time_distributed/bias:0"},
        names(model.get_layer("bidirectional")->weights()),
        {"dense_1/kernel:0", "dense_1/bias:0"}};
    const std::vector<std::string> groups{"input_1", "time_distributed", "bidirectional", "dense_1"};
    const std::vector<LayerPtr> owners{nullptr, model.get_layer("time_distributed"), model.get_layer("bidirectional"),
                                       model.layers().back()};
    for (std::size_t l = 0; l < groups.size(); ++l) {
      h5::Group g = file.create_group(groups[l]);
      g.write_string_array_attr("weight_names", weight_names[l]);
      if (!owners[l]) continue;
      const auto values = owners[l]->get_weights();
      for (std::size_t k = 0; k < values.size(); ++k)
        g.write_dataset(weight_names[l][k], combine(values[k], values[k], [](float a, float) { return 2 * a; }));
    }
    file.close();
  }
  Model doubled = build();
  doubled.load_weights(keras_path);
  const auto expected = model.get_weights();
  const auto got = doubled.get_weights();
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    check_close(got[i], combine(expected[i], expected[i], [](float a, float) { return 2 * a; }), 0, 0);
}

TEST_CASE("Bidirectional(LSTM) learns which end of the sequence holds the signal") {
  set_random_seed(7);
  // y = x[:, 0] - x[:, T-1]: a forward LSTM alone must carry x[:, 0] through every step; with the
  // backward direction both ends are one step from an output.
  const std::int64_t n = 128, time = 6;
  const Tensor x = float32_random({n, time, 1}, 61);
  const auto xv = x.to_vector<float>();
  std::vector<float> y(n);
  for (std::int64_t i = 0; i < n; ++i) y[i] = xv[i * time] - xv[i * time + time - 1];
  Sequential model({Input({time, 1}), Bidirectional(LSTM(8)), Dense(1)});
  model.compile(optimizers::Adam(0.02), "mse");
  auto history = model.fit(x, Tensor::from_vector<float>({n, 1}, y), {.batch_size = 32, .epochs = 30, .verbose = 0});
  const auto& loss = history.history.at("loss");
  CHECK(loss.back() < 0.05 * loss.front());
}

TEST_CASE("Bidirectional: errors") {
  auto dense = message_of<ValueError>([] { Bidirectional(Dense(2, {.name = "d"}), {.name = "b"}); });
  CHECK(contains(dense, "Bidirectional \"b\""));
  CHECK(contains(dense, "must be a recurrent layer (SimpleRNN, LSTM or GRU), got Dense \"d\""));
  CHECK(contains(message_of<ValueError>([] { Bidirectional(LSTM(2), {.merge_mode = "max"}); }), "merge_mode \"max\""));
  CHECK(contains(message_of<ValueError>([] { Bidirectional(LSTM(2), {.backward_layer = LSTM(2)}); }),
                 "must have go_backwards = true"));
  CHECK(contains(message_of<ValueError>([] {
          Bidirectional(LSTM(2), {.backward_layer = LSTM(2, {.return_sequences = true, .go_backwards = true})});
        }),
        "return_sequences"));
  CHECK(contains(message_of<ValueError>([] { Bidirectional(LSTM(2), {.backward_layer = Dense(2)}); }),
                 "the backward_layer must be a recurrent layer"));
  auto sum = message_of<ShapeError>([] {
    Bidirectional(LSTM(3), {.merge_mode = "sum", .backward_layer = GRU(2, {.go_backwards = true})})(Input({4, 2}));
  });
  CHECK(contains(sum, "one shape"));
  CHECK(Bidirectional(LSTM(2))(Input({-1, 3})).shape() == Shape{-1, 4});  // any number of steps
  CHECK(contains(message_of<ShapeError>([] { Bidirectional(LSTM(2))(Input({3})); }), "(batch, time, features)"));
}
