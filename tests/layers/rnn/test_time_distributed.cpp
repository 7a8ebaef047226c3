// TimeDistributed: shapes, values against real Keras and against the wrapped layer run by hand,
// gradients, weight names, freezing, regularization, configs of tf.keras 2 and Keras 3, and errors.
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

// ---- TimeDistributed ------------------------------------------------------------------------------

TEST_CASE("TimeDistributed: shapes, shared weights and Keras's numbers") {
  clear_session();
  Dense dense(3);
  TimeDistributed td(dense);
  CHECK(td.name() == "time_distributed");
  CHECK(td.layer()->same_layer(dense));
  CHECK(keras_shape(td, {5, 4}) == Shape{-1, 5, 3});
  CHECK(keras_shape(TimeDistributed(Dense(2)), {5, 6, 4}) == Shape{-1, 5, 6, 2});  // Dense on the last axis
  CHECK(keras_shape(TimeDistributed(Flatten()), {5, 2, 3}) == Shape{-1, 5, 6});
  CHECK(keras_shape(TimeDistributed(Conv2D(4, 3)), {2, 6, 6, 1}) == Shape{-1, 2, 4, 4, 4});

  // The weights are the wrapped layer's own variables, in its order, named as Keras names them when
  // the wrapper builds the layer: under the wrapper's name.
  REQUIRE(td.weights().size() == 2);
  CHECK(names(td.weights()) == std::vector<std::string>{"time_distributed/kernel:0", "time_distributed/bias:0"});
  CHECK(td.weights()[0] == dense.weights()[0]);
  CHECK(td.count_params() == 4 * 3 + 3);

  // Keras 3.15.1 and tf_keras 2.21.0 printed the same (script: keras.layers.TimeDistributed(
  // keras.layers.Dense(3)) called on keras.Input((3, 4)), its weights set as fill_as_keras_script does,
  // then called on the input of shape (2, 3, 4) that input_as_keras_script makes).
  const Tensor x = input_as_keras_script({2, 3, 4});
  fill_as_keras_script(td);
  check_close(run1(td, x),
              {0.4998565, 0.31366313, -0.020050958, 0.37956655, 0.15125759, -0.14819017, 0.23906639, 0.013967961,
               -0.2176998, 0.25753373, 0.076877572, -0.13993528, 0.41141742, 0.25975877, -0.014068499, 0.50447202,
               0.329386, -0.00061541796},
              1e-5, 1e-6);
  // The same as the Dense on each step, which here is the Dense on the last axis of the whole input.
  check_close(run1(td, x), run1(dense, x), 1e-6, 1e-7);

  Dense fresh(2, {.activation = "tanh"});
  TimeDistributed td_fresh(fresh);
  check_layer_gradients(td_fresh, {{2, 3, 4}});
}

TEST_CASE("TimeDistributed: a layer with state per step (LSTM over 4-D input), set_weights and training") {
  // Each (batch, time) cell holds a sequence of its own: (batch, time, steps, features).
  LSTM lstm(3);
  TimeDistributed td(lstm);
  CHECK(keras_shape(td, {2, 5, 4}) == Shape{-1, 2, 3});
  const Tensor x = float32_random({3, 2, 5, 4}, 7);
  const Tensor y = run1(td, x);
  CHECK(y.shape() == Shape{3, 2, 3});
  // Time step 1 of sample 2 is the LSTM on x[2, 1].
  const auto xv = x.to_vector<float>();
  const std::vector<float> cell(xv.begin() + (2 * 2 + 1) * 20, xv.begin() + (2 * 2 + 2) * 20);
  const auto one = run1(lstm, Tensor::from_vector<float>({1, 5, 4}, cell)).to_vector<float>();
  const auto yv = y.to_vector<float>();
  for (int j = 0; j < 3; ++j) CHECK(yv[(2 * 2 + 1) * 3 + j] == doctest::Approx(one[j]).epsilon(1e-6));

  // set_weights goes to the wrapped layer.
  std::vector<Tensor> zeros;
  for (const auto& w : td.weights()) zeros.push_back(Tensor::zeros(w->shape()));
  td.set_weights(zeros);
  for (const auto& w : lstm.get_weights())
    for (float v : w.to_vector<float>()) CHECK(v == 0.0f);
  CHECK(contains(message_of<ValueError>([&] { td.set_weights({}); }), "TimeDistributed \"time_distributed"));

  // In a model, the optimizer trains the wrapped layer's weights.
  set_random_seed(3);
  Sequential model({Input({4, 2}), TimeDistributed(Dense(1))});
  const Tensor xs = float32_random({64, 4, 2}, 5);
  std::vector<float> targets;
  const auto xsv = xs.to_vector<float>();
  for (std::size_t i = 0; i < xsv.size(); i += 2) targets.push_back(2 * xsv[i] - xsv[i + 1] + 0.5f);
  model.compile(optimizers::Adam(0.05), "mse");
  auto history = model.fit(xs, Tensor::from_vector<float>({64, 4, 1}, targets), {.batch_size = 16, .epochs = 40, .verbose = 0});
  const auto& loss = history.history.at("loss");
  CHECK(loss.back() < 0.01 * loss.front());
}

TEST_CASE("TimeDistributed: freezing, regularization and configs (tf.keras 2 and Keras 3)") {
  clear_session();
  Dense dense(2, {.kernel_regularizer = regularizers::l2(0.1)});
  TimeDistributed td(dense);
  td.ensure_built({{-1, 3, 4}});
  Graph graph;
  CHECK(td.regularization_losses(graph).size() == 1);
  td.set_trainable(false);
  CHECK_FALSE(dense.trainable());  // as Keras's trainable setter
  CHECK(td.trainable_weights().empty());
  CHECK(td.non_trainable_weights().size() == 2);
  td.set_trainable(true);
  CHECK(td.trainable_weights().size() == 2);

  // tf.keras 2's layout: the base fields and the serialized wrapped layer.
  const json config = td.get_config();
  CHECK(config["name"] == "time_distributed");
  CHECK(config["trainable"] == true);
  CHECK(config["dtype"] == "float32");
  CHECK(config["layer"]["class_name"] == "Dense");
  CHECK(config["layer"]["module"] == "keras.layers");
  CHECK(config["layer"]["config"] == dense.get_config());
  const LayerPtr back = layer_from_config({{"class_name", "TimeDistributed"}, {"config", config}});
  CHECK(back->get_config() == config);
  const auto& inner = *dynamic_cast<TimeDistributed&>(*back).layer();
  CHECK(inner.class_name() == "Dense");
  CHECK(inner.name() == "dense");

  // What tf_keras 2.21.0 writes in a model file (model_config) for TimeDistributed(Dense(4)).
  const json tf_keras = json::parse(R"({"name": "time_distributed", "trainable": true, "dtype": "float32",
      "layer": {"module": "keras.layers", "class_name": "Dense", "config": {"name": "dense", "trainable": true,
      "dtype": "float32", "units": 4, "activation": "linear", "use_bias": true, "kernel_initializer": {"module":
      "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null}, "registered_name": null},
      "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name":
      null}, "kernel_regularizer": null, "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint":
      null, "bias_constraint": null}, "registered_name": null, "build_config": {"input_shape": [null, 5]}}})");
  const LayerPtr read = layer_from_config({{"class_name", "TimeDistributed"}, {"config", tf_keras}});
  CHECK(read->name() == "time_distributed");
  CHECK(keras_shape(*read, {3, 5}) == Shape{-1, 3, 4});
  CHECK(read->count_params() == 24);
  // Keras 3.15.1's serialize_keras_object(TimeDistributed(Dense(4, name="d"), name="td")), its config.
  const json keras3 = json::parse(R"({"name": "td", "trainable": true, "dtype": {"module": "keras", "class_name":
      "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "layer": {"module": "keras.layers",
      "class_name": "Dense", "config": {"name": "d", "trainable": true, "dtype": {"module": "keras", "class_name":
      "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "units": 4, "activation": "linear",
      "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
      "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null},
      "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name":
      null}, "kernel_regularizer": null, "bias_regularizer": null, "kernel_constraint": null, "bias_constraint":
      null, "quantization_config": null}, "registered_name": null, "build_config": {"input_shape": [null, 5]}}})");
  const LayerPtr read3 = layer_from_config({{"class_name", "TimeDistributed"}, {"config", keras3}});
  CHECK(names(dynamic_cast<TimeDistributed&>(*read3).layer()->weights()).empty());
  CHECK(keras_shape(*read3, {3, 5}) == Shape{-1, 3, 4});
  CHECK(names(read3->weights()) == std::vector<std::string>{"td/kernel:0", "td/bias:0"});
  // A frozen wrapper comes back frozen, its wrapped layer too.
  td.set_trainable(false);
  const LayerPtr frozen = layer_from_config({{"class_name", "TimeDistributed"}, {"config", td.get_config()}});
  CHECK_FALSE(frozen->trainable());
  CHECK_FALSE(dynamic_cast<TimeDistributed&>(*frozen).layer()->trainable());
}

TEST_CASE("TimeDistributed: errors") {
  auto rank = message_of<ShapeError>([] { TimeDistributed(Dense(2), {.name = "td2"})(Input({4})); });
  CHECK(contains(rank, "TimeDistributed \"td2\""));
  CHECK(contains(rank, "(batch, time, ...)"));
  CHECK(TimeDistributed(Dense(2))(Input({-1, 4})).shape() == Shape{-1, -1, 2});  // any number of steps
  CHECK(contains(message_of<ShapeError>([] { TimeDistributed{Flatten()}(Input({3, -1, 2})); }), "known sizes after the time axis"));
  CHECK(contains(message_of<ValueError>([] { TimeDistributed{Add()}({Input({3, 2}), Input({3, 2})}); }), "takes one input"));
  CHECK(contains(message_of<ValueError>([] {
          TimeDistributed(LSTM(2, {.return_state = true}))(Input({3, 5, 2}));
        }),
        "takes a layer with one output"));
  // The wrapped layer's own error, with the wrapper named in front.
  auto inner = message_of<ShapeError>([] {
    Dense d(2, {.name = "d_in"});
    d(Input({3}));
    TimeDistributed(d, {.name = "td_in"})(Input({5, 4}));
  });
  CHECK(contains(inner, "\"td_in\""));
  CHECK(contains(inner, "Dense \"d_in\""));
  CHECK(contains(message_of<ValueError>([] {
          layer_from_config({{"class_name", "TimeDistributed"}, {"config", {{"name", "t"}}}});
        }),
        "\"layer\""));
}

// ---- Bidirectional --------------------------------------------------------------------------------
