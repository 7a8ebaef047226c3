// Conv1D: shapes, weight names and layouts, forward values and kernel gradients against a direct loop
// (valid, same, causal, strides, dilation), input gradients, configs of every Keras version, errors; the
// 1-D layers together in a model that trains and is rebuilt from its config.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/io/model_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::check_layer_gradients;
using tower::testing::contains;
using tower::testing::evaluate;
using tower::testing::floats;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::random_tensor;
using tower::testing::run1;
using Ints = std::vector<std::int64_t>;

using tower::testing::entry;

namespace {

// Keras's Conv1D by its definition: y[n, t, f] = b[f] + sum_{j, c} x[n, t·s + j·d - left, c] K[j, c, f],
// x zero outside [0, steps). "same": TF's rule (out = ceil(steps / s), the odd pad at the end);
// "causal": left = (k - 1)·d, out = ceil(steps / s).
struct Reference {
  std::int64_t out, left;
};

Reference geometry(std::int64_t steps, std::int64_t k, std::int64_t s, std::int64_t d, const std::string& padding) {
  const std::int64_t span = (k - 1) * d + 1;
  if (padding == "valid") return {(steps - span) / s + 1, 0};
  const std::int64_t out = (steps + s - 1) / s;
  if (padding == "causal") return {out, span - 1};
  return {out, std::max<std::int64_t>((out - 1) * s + span - steps, 0) / 2};
}

std::vector<double> conv1d_loop(const std::vector<double>& x, std::int64_t batch, std::int64_t steps, std::int64_t in,
                                const std::vector<double>& kernel, std::int64_t k, std::int64_t filters,
                                const std::vector<double>& bias, std::int64_t s, std::int64_t d,
                                const std::string& padding) {
  const auto [out, left] = geometry(steps, k, s, d, padding);
  std::vector<double> y;
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t t = 0; t < out; ++t)
      for (std::int64_t f = 0; f < filters; ++f) {
        double sum = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(f)];
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t u = t * s + j * d - left;
          if (u < 0 || u >= steps) continue;
          for (std::int64_t c = 0; c < in; ++c)
            sum += x[static_cast<std::size_t>((n * steps + u) * in + c)] *
                   kernel[static_cast<std::size_t>((j * in + c) * filters + f)];
        }
        y.push_back(sum);
      }
  return y;
}

// d sum(y · r) / d kernel by the same loop: sum over n, t of r[n, t, f] x[n, t·s + j·d - left, c].
std::vector<double> kernel_grad_loop(const std::vector<double>& x, std::int64_t batch, std::int64_t steps,
                                     std::int64_t in, const std::vector<double>& r, std::int64_t k,
                                     std::int64_t filters, std::int64_t s, std::int64_t d, const std::string& padding) {
  const auto [out, left] = geometry(steps, k, s, d, padding);
  std::vector<double> g(static_cast<std::size_t>(k * in * filters), 0.0);
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t t = 0; t < out; ++t)
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t u = t * s + j * d - left;
        if (u < 0 || u >= steps) continue;
        for (std::int64_t c = 0; c < in; ++c)
          for (std::int64_t f = 0; f < filters; ++f)
            g[static_cast<std::size_t>((j * in + c) * filters + f)] +=
                r[static_cast<std::size_t>((n * out + t) * filters + f)] *
                x[static_cast<std::size_t>((n * steps + u) * in + c)];
      }
  return g;
}

}  // namespace

TEST_CASE("Conv1D: shapes, weights in Keras's layout") {
  clear_session();
  auto x = layers::Input({10, 4});
  layers::Conv1D conv(8, 3, {.activation = "relu"});
  CHECK(conv.name() == "conv1d");
  CHECK(conv(x).shape() == Shape{-1, 8, 8});
  REQUIRE(conv.weights().size() == 2);
  CHECK(conv.weights()[0]->name() == "conv1d/kernel:0");
  CHECK(conv.weights()[0]->shape() == Shape{3, 4, 8});  // (kernel_size, in, filters), as Keras
  CHECK(conv.weights()[1]->name() == "conv1d/bias:0");
  CHECK(conv.weights()[1]->shape() == Shape{8});
  CHECK(conv.count_params() == 3 * 4 * 8 + 8);
  CHECK(layers::Conv1D(2, 3, {.use_bias = false}).name() == "conv1d_1");

  CHECK(keras_shape(layers::Conv1D(5, 3, {.strides = 2, .padding = "same"}), {10, 4}) == Shape{-1, 5, 5});
  CHECK(keras_shape(layers::Conv1D(5, 3, {.padding = "SAME"}), {7, 2}) == Shape{-1, 7, 5});
  CHECK(keras_shape(layers::Conv1D(5, 3, {.padding = "causal"}), {10, 4}) == Shape{-1, 10, 5});
  CHECK(keras_shape(layers::Conv1D(5, 3, {.strides = 3, .padding = "causal"}), {10, 4}) == Shape{-1, 4, 5});
  CHECK(keras_shape(layers::Conv1D(5, 3, {.dilation_rate = 2}), {10, 4}) == Shape{-1, 6, 5});
  CHECK(keras_shape(layers::Conv1D(5, 3, {.padding = "causal", .dilation_rate = 4}), {10, 4}) == Shape{-1, 10, 5});
  CHECK(keras_shape(layers::Conv1D(5, 2, {.strides = 2}), {9, 1}) == Shape{-1, 4, 5});
  CHECK(keras_shape(layers::Conv1D(5, 3), {3, 1}) == Shape{-1, 1, 5});
  // The stored weights keep Keras's shape after a call (the layer reads a reshaped view).
  layers::Conv1D plain(2, 3, {.use_bias = false});
  plain(layers::Input({6, 3}));
  REQUIRE(plain.weights().size() == 1);
  CHECK(plain.get_weights()[0].shape() == Shape{3, 3, 2});
}

TEST_CASE("Conv1D: causal padding and dilation by hand") {
  // One channel, one filter, kernel (2, 1, 1) = [1, 10]: y[t] = x[t - d] + 10 x[t] (x[< 0] = 0).
  Tensor x = floats({1, 4, 1}, {1, 2, 3, 4});
  Tensor kernel = floats({2, 1, 1}, {1, 10});
  layers::Conv1D causal(1, 2, {.padding = "causal", .use_bias = false});
  causal.ensure_built({{-1, 4, 1}});
  causal.set_weights({kernel});
  check_close(run1(causal, x), {10, 21, 32, 43});
  layers::Conv1D dilated(1, 2, {.padding = "causal", .dilation_rate = 2, .use_bias = false});
  dilated.ensure_built({{-1, 4, 1}});
  dilated.set_weights({kernel});
  check_close(run1(dilated, x), {10, 20, 31, 42});
  // "valid" with dilation 2: y[t] = x[t] + 10 x[t + 2].
  layers::Conv1D valid(1, 2, {.dilation_rate = 2, .use_bias = false});
  valid.ensure_built({{-1, 4, 1}});
  valid.set_weights({kernel});
  check_close(run1(valid, x), {31, 42});
  // "valid" with strides 2 and a bias: y[t] = x[2t] + 10 x[2t + 1] + 0.5.
  layers::Conv1D strided(1, 2, {.strides = 2});
  strided.ensure_built({{-1, 4, 1}});
  strided.set_weights({kernel, floats({1}, {0.5f})});
  check_close(run1(strided, x), {21.5, 43.5});
  // "same", k = 3, kernel [1, 10, 100]: one zero on each side: y[t] = x[t - 1] + 10 x[t] + 100 x[t + 1].
  layers::Conv1D same(1, 3, {.padding = "same", .use_bias = false});
  same.ensure_built({{-1, 4, 1}});
  same.set_weights({floats({3, 1, 1}, {1, 10, 100})});
  check_close(run1(same, x), {210, 321, 432, 43});
}

TEST_CASE("Conv1D: forward values and kernel gradients against a direct loop") {
  struct Case {
    std::int64_t k, s, d;
    std::string padding;
  };
  const std::int64_t batch = 2, steps = 7, in = 3, filters = 4;
  for (const auto& c : std::vector<Case>{{3, 1, 1, "valid"},
                                         {3, 2, 1, "valid"},
                                         {2, 1, 3, "valid"},
                                         {3, 1, 1, "same"},
                                         {4, 2, 1, "same"},
                                         {3, 1, 2, "same"},
                                         {3, 1, 1, "causal"},
                                         {2, 3, 1, "causal"},
                                         {3, 1, 2, "causal"}}) {
    CAPTURE(c.k);
    CAPTURE(c.s);
    CAPTURE(c.d);
    CAPTURE(c.padding);
    layers::Conv1D layer(filters, c.k, {.strides = c.s, .padding = c.padding, .dilation_rate = c.d});
    layer.ensure_built({{-1, steps, in}});
    Tensor xv = random_tensor({batch, steps, in}, 21, 0.1, 1.0, false, DType::float32);
    Tensor kv = random_tensor({c.k, in, filters}, 22, 0.1, 1.0, false, DType::float32);
    Tensor bv = floats({filters}, {0.5f, -0.25f, 0.0f, 1.0f});
    layer.set_weights({kv, bv});
    const auto xs = xv.to_vector<double>(), ks = kv.to_vector<double>(), bs = bv.to_vector<double>();
    const auto expected = conv1d_loop(xs, batch, steps, in, ks, c.k, filters, bs, c.s, c.d, c.padding);
    const std::int64_t out = geometry(steps, c.k, c.s, c.d, c.padding).out;
    Tensor y = run1(layer, xv);
    CHECK(y.shape() == Shape{batch, out, filters});
    check_close(y, expected, 1e-5, 1e-5);

    // The kernel's gradient flows back through the reshaped read to the stored (k, in, filters) variable.
    Graph graph;
    SymbolicTensor xp = graph.placeholder({-1, steps, in});
    CallContext ctx{.graph = graph};
    SymbolicTensor ys = layer.call(ctx, {xp})[0];
    Tensor rv = random_tensor({batch, out, filters}, 23, 0.1, 1.0, false, DType::float32);
    SymbolicTensor loss = ops::reduce_sum(ops::multiply(ys, graph.constant(rv)));
    SymbolicTensor kernel = graph.variable(layer.weights()[0]);
    auto grads = gradients(loss, {kernel, graph.variable(layer.weights()[1])});
    REQUIRE(grads[0].defined());
    CHECK(grads[0].shape() == Shape{c.k, in, filters});
    auto got = evaluate({grads[0], grads[1]}, {{xp, xv}});
    check_close(got[0],
                kernel_grad_loop(xs, batch, steps, in, rv.to_vector<double>(), c.k, filters, c.s, c.d, c.padding), 1e-5,
                1e-5);
    std::vector<double> bias_grad(filters, 0.0);  // the sum of r over batch and steps
    const auto rs = rv.to_vector<double>();
    for (std::size_t i = 0; i < rs.size(); ++i) bias_grad[i % filters] += rs[i];
    check_close(got[1], bias_grad, 1e-5, 1e-5);
  }
}

TEST_CASE("Conv1D: gradients with respect to the input") {
  layers::Conv1D valid(2, 3, {.strides = 2, .activation = "tanh"});
  check_layer_gradients(valid, {{2, 7, 3}});
  layers::Conv1D same(2, 2, {.padding = "same"});
  check_layer_gradients(same, {{2, 5, 2}});
  layers::Conv1D causal(3, 3, {.padding = "causal", .dilation_rate = 2});
  check_layer_gradients(causal, {{2, 6, 2}});
}

TEST_CASE("Conv1D: bad arguments and inputs") {
  CHECK(contains(message_of<ValueError>([] { layers::Conv1D(0, 3); }), "filters must be positive"));
  auto msg = message_of<ValueError>([] { layers::Conv1D(4, -1, {.name = "c"}); });
  CHECK(contains(msg, "Conv1D \"c\""));
  CHECK(contains(msg, "kernel_size"));
  CHECK(contains(message_of<ValueError>([] { layers::Conv1D(4, 3, {.strides = 0}); }), "strides"));
  CHECK(contains(message_of<ValueError>([] { layers::Conv1D(4, 3, {.dilation_rate = -2}); }), "dilation_rate"));
  msg = message_of<ValueError>([] { layers::Conv1D(4, 3, {.padding = "full"}); });
  CHECK(contains(msg, "\"full\""));
  CHECK(contains(msg, "\"causal\""));
  msg = message_of<ValueError>([] { layers::Conv1D(4, 3, {.strides = 2, .dilation_rate = 2}); });
  CHECK(contains(msg, "strides > 1"));
  CHECK(contains(msg, "dilation_rate > 1"));
  CHECK(contains(message_of<ValueError>([] { layers::Conv1D(4, 3, {.activation = "nope"}); }), "nope"));
  msg = message_of<ShapeError>([] { layers::Conv1D(4, 3, {.name = "c2"})(layers::Input({28, 28, 1})); });
  CHECK(contains(msg, "Conv1D \"c2\""));
  CHECK(contains(msg, "rank 3"));
  CHECK(contains(msg, "(None, 28, 28, 1)"));
  msg = message_of<ShapeError>([] { layers::Conv1D(4, 3)(layers::Input({-1, 2})); });
  CHECK(contains(msg, "known number of steps"));
  msg = message_of<ShapeError>([] { layers::Conv1D(4, 3, {.dilation_rate = 2})(layers::Input({4, 2})); });
  CHECK(contains(msg, "4 steps"));
  CHECK(contains(msg, "\"causal\""));
  // Too short for "valid" is fine with "same" and "causal".
  CHECK(keras_shape(layers::Conv1D(4, 5, {.padding = "same"}), {2, 1}) == Shape{-1, 2, 4});
  CHECK(keras_shape(layers::Conv1D(4, 5, {.padding = "causal"}), {2, 1}) == Shape{-1, 2, 4});
  layers::Conv1D shared(4, 3, {.name = "c3"});
  shared(layers::Input({8, 1}));
  CHECK(contains(message_of<ShapeError>([&] { shared(layers::Input({8, 3})); }), "expected input with 1 channels"));
}

TEST_CASE("Conv1D: configs of every Keras version") {
  layers::Conv1D conv(3, 5,
                      {.padding = "causal",
                       .dilation_rate = 2,
                       .activation = "relu",
                       .use_bias = false,
                       .kernel_initializer = "he_normal",
                       .kernel_regularizer = regularizers::l2(0.01),
                       .name = "conv_a"});
  json c = conv.get_config();  // tf.keras 2's spelling
  CHECK(c["filters"] == 3);
  CHECK(c["kernel_size"] == json::array({5}));
  CHECK(c["strides"] == json::array({1}));
  CHECK(c["padding"] == "causal");
  CHECK(c["dilation_rate"] == json::array({2}));
  CHECK(c["data_format"] == "channels_last");
  CHECK(c["groups"] == 1);
  CHECK(c["activation"] == "relu");
  CHECK(c["use_bias"] == false);
  CHECK(c["kernel_initializer"]["class_name"] == "HeNormal");
  CHECK(c["kernel_regularizer"]["class_name"] == "L2");
  CHECK(c["dtype"] == "float32");
  LayerPtr back = layers::layer_from_config(entry(conv));
  CHECK(back->get_config().dump() == c.dump());

  // tf.keras 2, kernel_size and strides as lists.
  LayerPtr tf2 = layers::layer_from_config(json::parse(R"({"class_name": "Conv1D", "config": {"name": "conv1d_7",
      "trainable": true, "dtype": "float32", "filters": 16, "kernel_size": [3], "strides": [2], "padding": "same",
      "data_format": "channels_last", "dilation_rate": [1], "groups": 1, "activation": "linear", "use_bias": true,
      "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
      "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": null,
      "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null}})"));
  const auto& t2 = dynamic_cast<layers::Conv1D&>(*tf2);
  CHECK(t2.name() == "conv1d_7");
  CHECK(t2.filters() == 16);
  CHECK(t2.kernel_size() == 3);
  CHECK(t2.options().strides == 2);
  CHECK(t2.options().padding == "same");
  CHECK(keras_shape(t2, {9, 2}) == Shape{-1, 5, 16});

  // Keras 3: DTypePolicy, initializers with module and registered_name, causal with dilation.
  LayerPtr k3 = layers::layer_from_config(json::parse(R"({"module": "keras.layers", "class_name": "Conv1D",
      "config": {"name": "conv1d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float32"}, "registered_name": null}, "filters": 4, "kernel_size": [3], "strides": [1],
      "padding": "causal", "data_format": "channels_last", "dilation_rate": [2], "groups": 1, "activation": "relu",
      "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
      "config": {"seed": null}, "registered_name": null}, "bias_initializer": {"module": "keras.initializers",
      "class_name": "Zeros", "config": {}, "registered_name": null}, "kernel_regularizer": null,
      "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null},
      "registered_name": null, "build_config": {"input_shape": [null, 10, 3]}})"));
  const auto& t3 = dynamic_cast<layers::Conv1D&>(*k3);
  CHECK(t3.options().padding == "causal");
  CHECK(t3.options().dilation_rate == 2);
  CHECK(t3.options().activation == "relu");
  CHECK(keras_shape(t3, {10, 3}) == Shape{-1, 10, 4});

  // Keras 1: Convolution1D(nb_filter, filter_length, subsample_length, border_mode, init, W_regularizer, bias).
  LayerPtr k1 = layers::layer_from_config(json::parse(R"({"class_name": "Convolution1D", "config": {
      "name": "convolution1d_1", "trainable": true, "nb_filter": 6, "filter_length": 4, "init": "he_normal",
      "activation": "tanh", "border_mode": "same", "subsample_length": 2,
      "W_regularizer": {"name": "WeightRegularizer", "l1": 0.0, "l2": 0.01}, "b_regularizer": null,
      "activity_regularizer": null, "W_constraint": null, "b_constraint": null, "bias": false,
      "input_dim": 3, "input_length": 12}})"));
  REQUIRE(dynamic_cast<layers::Conv1D*>(k1.get()));
  const auto& t1 = dynamic_cast<layers::Conv1D&>(*k1);
  CHECK(t1.class_name() == "Conv1D");
  CHECK(t1.filters() == 6);
  CHECK(t1.kernel_size() == 4);
  CHECK(t1.options().strides == 2);
  CHECK(t1.options().padding == "same");
  CHECK_FALSE(t1.options().use_bias);
  CHECK(t1.options().kernel_initializer.name() == "he_normal");
  CHECK(t1.options().kernel_regularizer.l2 == 0.01);
  CHECK(keras_shape(t1, {12, 3}) == Shape{-1, 6, 6});

  // What tower does not have, named with the layer and field.
  auto bad = [](const char* fields) {
    return message_of<ValueError>([&] {
      layers::layer_from_config(json::parse(
          std::string(R"({"class_name": "Conv1D", "config": {"name": "cb", "filters": 2, )") + fields + "}}"));
    });
  };
  auto msg = bad(R"("kernel_size": [3, 3])");
  CHECK(contains(msg, "Conv1D \"cb\""));
  CHECK(contains(msg, "kernel_size"));
  CHECK(contains(bad(R"("kernel_size": 3, "groups": 3)"), "divisor of filters"));
  CHECK(contains(bad(R"("kernel_size": 3, "data_format": "NCW")"), "data_format"));
  CHECK(contains(bad(R"("kernel_size": 3, "padding": "full")"), "\"full\""));
  CHECK(contains(bad(R"("kernel_size": 3, "strides": [2], "dilation_rate": [2])"), "dilation_rate"));
  CHECK(contains(bad(R"("padding": "same")"), "\"kernel_size\""));
}

TEST_CASE("the 1-D layers in a model: fit lowers the loss, the rebuilt config predicts the same") {
  clear_session();
  set_random_seed(3);
  Sequential model({layers::Input({12, 3}), layers::Conv1D(4, 3, {.padding = "causal", .activation = "relu"}),
                    layers::MaxPooling1D(2), layers::SpatialDropout1D(0.1), layers::UpSampling1D(2),
                    layers::ZeroPadding1D(1), layers::Cropping1D({2, 0}),
                    layers::Conv1D(4, 3, {.strides = 2, .padding = "same"}), layers::AveragePooling1D(2),
                    layers::GlobalAveragePooling1D(), layers::Dense(1)});
  CHECK(model.outputs().at(0).shape() == Shape{-1, 1});
  // y: the mean of the first channel over the steps.
  Tensor x = random_tensor({64, 12, 3}, 31, 0.1, 1.0, false, DType::float32);
  const auto xs = x.to_vector<float>();
  std::vector<float> ys(64, 0.0f);
  for (std::size_t n = 0; n < 64; ++n)
    for (std::size_t t = 0; t < 12; ++t) ys[n] += xs[(n * 12 + t) * 3] / 12.0f;
  Tensor y = floats({64, 1}, ys);
  model.compile(optimizers::SGD(0.05), "mse");
  const double before = model.evaluate(x, y, {.verbose = 0})[0];
  model.fit(x, y, {.batch_size = 16, .epochs = 15, .verbose = 0});
  CHECK(model.evaluate(x, y, {.verbose = 0})[0] < before);

  Model rebuilt = io::model_from_config(io::model_to_config(model));
  CHECK(rebuilt.count_params() == model.count_params());
  rebuilt.set_weights(model.get_weights());
  const auto expected = model.predict(x).to_vector<float>(), got = rebuilt.predict(x).to_vector<float>();
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6));
}
