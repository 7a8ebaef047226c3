// The Keras layers: default names, output shapes on KerasTensors, weight names and shapes, forward
// values against independent computations (and numbers printed by Keras 3.15), gradients, the
// moving statistics of BatchNormalization, and the errors for bad arguments and shapes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layers.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::random_tensor;
using Ints = std::vector<std::int64_t>;
using Inputs = std::vector<SymbolicTensor>;

namespace {

Tensor floats(Shape shape, const std::vector<float>& values) {
  return Tensor::from_vector<float>(std::move(shape), values);
}

// Shape with the batch dimension made unknown, as a model's graph has it.
Shape with_unknown_batch(const Shape& shape) {
  auto dims = shape.dims();
  dims[0] = -1;
  return Shape(dims);
}

// Runs layer.call on placeholders fed with `inputs` (batch unknown in the graph) and returns its
// outputs; the updates the layer appends (BatchNormalization's) run with them.
std::vector<Tensor> run_layer(Layer& layer, const std::vector<Tensor>& inputs, bool training = false,
                              std::size_t* num_updates = nullptr) {
  Graph graph;
  Inputs placeholders;
  std::vector<Shape> shapes;
  FeedMap feeds;
  for (const auto& x : inputs) {
    shapes.push_back(with_unknown_batch(x.shape()));
    placeholders.push_back(graph.placeholder(shapes.back(), x.dtype()));
    feeds.emplace_back(placeholders.back(), x);
  }
  layer.ensure_built(shapes);
  std::vector<Node*> updates;
  std::vector<SymbolicTensor> losses;
  CallContext ctx{.graph = graph, .training = training, .updates = &updates, .losses = &losses};
  auto outputs = layer.call(ctx, placeholders);
  if (num_updates) *num_updates = updates.size();
  Executor executor;
  return executor.run(feeds, outputs, updates);
}

Tensor run1(Layer& layer, const Tensor& x, bool training = false) { return run_layer(layer, {x}, training).at(0); }

// Output shape of layer called on Input(input_shape).
Shape keras_shape(const Layer& layer, const Shape& input_shape) { return layer(layers::Input(input_shape)).shape(); }

// Checks input gradients of a float32 layer by casting the float64 probe in and out; float32
// rounding needs a larger step and tolerance than the float64 checks.
void check_layer_gradients(Layer& layer, const std::vector<Shape>& shapes, bool training = false) {
  std::vector<Shape> unknown;
  for (const auto& s : shapes) unknown.push_back(with_unknown_batch(s));
  layer.ensure_built(unknown);
  check_gradients(shapes,
                  [&](const Inputs& xs) {
                    Inputs cast;
                    for (const auto& x : xs) cast.push_back(ops::cast(x, DType::float32));
                    CallContext ctx{.graph = xs[0].graph(), .training = training};
                    auto ys = layer.call(ctx, cast);
                    for (auto& y : ys) y = ops::cast(y, DType::float64);
                    return ys;
                  },
                  {.delta = 1e-2, .tolerance = 5e-3});
}

// Float64 layers without weights take the standard check.
void check_weightless_gradients(Layer& layer, const std::vector<Shape>& shapes,
                                testing::GradCheckOptions options = {}) {
  check_gradients(
      shapes,
      [&](const Inputs& xs) {
        CallContext ctx{.graph = xs[0].graph()};
        return layer.call(ctx, xs);
      },
      options);
}

std::vector<double> as_doubles(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace

// ---- names ---------------------------------------------------------------------------------------

TEST_CASE("to_snake_case and default names follow Keras") {
  CHECK(to_snake_case("Conv2D") == "conv2d");
  CHECK(to_snake_case("MaxPooling2D") == "max_pooling2d");
  CHECK(to_snake_case("GlobalAveragePooling2D") == "global_average_pooling2d");
  CHECK(to_snake_case("ReLU") == "re_lu");
  CHECK(to_snake_case("LeakyReLU") == "leaky_re_lu");
  CHECK(to_snake_case("ZeroPadding2D") == "zero_padding2d");
  CHECK(to_snake_case("BatchNormalization") == "batch_normalization");
  CHECK(to_snake_case("ELU") == "elu");
  CHECK(to_snake_case("GlorotUniform") == "glorot_uniform");

  clear_session();
  // Each layer's class_name() and default name, as Keras 3.15 prints them.
  std::vector<std::pair<LayerPtr, std::string>> expected{
      {layers::Conv2D(2, 3).share(), "conv2d"},
      {layers::MaxPooling2D().share(), "max_pooling2d"},
      {layers::AveragePooling2D().share(), "average_pooling2d"},
      {layers::GlobalAveragePooling2D().share(), "global_average_pooling2d"},
      {layers::GlobalMaxPooling2D().share(), "global_max_pooling2d"},
      {layers::Flatten().share(), "flatten"},
      {layers::Reshape({2, 2}).share(), "reshape"},
      {layers::Dropout(0.1).share(), "dropout"},
      {layers::BatchNormalization().share(), "batch_normalization"},
      {layers::Activation("relu").share(), "activation"},
      {layers::ReLU().share(), "re_lu"},
      {layers::LeakyReLU().share(), "leaky_re_lu"},
      {layers::ELU().share(), "elu"},
      {layers::Softmax().share(), "softmax"},
      {layers::ZeroPadding2D().share(), "zero_padding2d"},
      {layers::Lambda([](const SymbolicTensor& x) { return x; }).share(), "lambda"},
      {layers::Concatenate().share(), "concatenate"},
      {layers::Add().share(), "add"},
      {layers::Subtract().share(), "subtract"},
      {layers::Multiply().share(), "multiply"},
      {layers::Average().share(), "average"},
      {layers::Maximum().share(), "maximum"},
      {layers::Embedding(3, 2).share(), "embedding"},
  };
  for (const auto& [layer, name] : expected) {
    CHECK(layer->name() == name);
    CHECK(to_snake_case(layer->class_name()) == name);
  }
  CHECK(layers::Conv2D(2, 3).name() == "conv2d_1");
  CHECK(layers::ReLU().name() == "re_lu_1");
  CHECK(layers::Add({.name = "sum"}).name() == "sum");
}

// ---- initializers and activations ------------------------------------------------------------------

TEST_CASE("Initializer: constants, Keras names and aliases, seeds") {
  CHECK(Initializer("zeros")({2, 3}).to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(Initializer("Ones")({4}).to_vector<float>() == std::vector<float>(4, 1.0f));
  CHECK(Initializer("one")({1}).item() == 1.0);
  CHECK(Initializer::constant(2.5)({2}, DType::float64).to_vector<double>() == std::vector<double>{2.5, 2.5});
  CHECK(Initializer("GlorotUniform").name() == "glorot_uniform");
  CHECK(Initializer("uniform").name() == "random_uniform");
  CHECK(Initializer("normal").name() == "random_normal");

  // A fixed seed reproduces the values; seed 0 draws a fresh seed each time.
  auto a = Initializer("he_normal")({20, 10}, DType::float32, 7).to_vector<float>();
  auto b = Initializer("he_normal")({20, 10}, DType::float32, 7).to_vector<float>();
  auto c = Initializer("he_normal")({20, 10}).to_vector<float>();
  auto d = Initializer("he_normal")({20, 10}).to_vector<float>();
  CHECK(a == b);
  CHECK(c != d);

  auto in_range = [](const std::vector<float>& v, double lo, double hi) {
    return std::all_of(v.begin(), v.end(), [&](float x) { return x >= lo && x < hi; });
  };
  CHECK(in_range(Initializer("uniform")({1000}).to_vector<float>(), -0.05, 0.05));
  CHECK(in_range(Initializer::random_uniform(2.0, 3.0)({100}).to_vector<float>(), 2.0, 3.0));
}

TEST_CASE("Initializer: variance scaling uses Keras's fans and truncation constant") {
  auto stats = [](const std::vector<float>& v) {
    double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    double var = 0, max_abs = 0;
    for (float x : v) var += (x - mean) * (x - mean), max_abs = std::max(max_abs, std::abs(static_cast<double>(x)));
    return std::tuple{mean, std::sqrt(var / static_cast<double>(v.size())), max_abs};
  };
  // glorot_uniform on a (3, 3, 16, 32) kernel: fan_in = 144, fan_out = 288, limit sqrt(6 / 432).
  {
    auto [mean, std, max_abs] = stats(Initializer("glorot_uniform")({3, 3, 16, 32}).to_vector<float>());
    double limit = std::sqrt(6.0 / (144 + 288));
    CHECK(max_abs <= limit);
    CHECK(max_abs > 0.98 * limit);
    CHECK(std == doctest::Approx(limit / std::sqrt(3.0)).epsilon(0.03));
    CHECK(std::abs(mean) < 0.01);
  }
  // he_normal on (200, 100): truncated at 2 stddev of sqrt(2 / 200) / 0.8796..., so the spread is sqrt(2 / 200).
  {
    auto [mean, std, max_abs] = stats(Initializer("he_normal")({200, 100}).to_vector<float>());
    double stddev = std::sqrt(2.0 / 200.0) / 0.87962566103423978;
    CHECK(max_abs <= 2.0 * stddev + 1e-6);
    CHECK(std == doctest::Approx(std::sqrt(2.0 / 200.0)).epsilon(0.02));
  }
  // lecun_uniform of a bias (rank 1): fan_in = fan_out = its length.
  {
    auto [mean, std, max_abs] = stats(Initializer("lecun_uniform")({3000}).to_vector<float>());
    CHECK(max_abs <= std::sqrt(3.0 / 3000.0));
  }
  // variance_scaling fan_out, untruncated: stddev sqrt(scale / fan_out).
  {
    auto [mean, std, max_abs] =
        stats(Initializer::variance_scaling(4.0, "fan_out", "untruncated_normal")({100, 400}).to_vector<float>());
    CHECK(std == doctest::Approx(std::sqrt(4.0 / 400.0)).epsilon(0.02));
    CHECK(max_abs > 3.0 * std::sqrt(4.0 / 400.0));  // not truncated
  }
}

TEST_CASE("Initializer: bad names and arguments") {
  auto msg = message_of<ValueError>([] { Initializer("glorot"); });
  CHECK(contains(msg, "unknown initializer \"glorot\""));
  CHECK(contains(msg, "glorot_uniform"));
  CHECK(contains(message_of<ValueError>([] { Initializer::variance_scaling(1.0, "fan_sum"); }), "fan_sum"));
  CHECK(contains(message_of<ValueError>([] { Initializer::variance_scaling(1.0, "fan_in", "normal"); }), "normal"));
  CHECK(contains(message_of<ValueError>([] { Initializer::variance_scaling(0.0); }), "scale"));
  CHECK(contains(message_of<ValueError>([] { Initializer::random_uniform(1.0, 1.0); }), "minval"));
}

TEST_CASE("activations: values as Keras 3 computes them") {
  const std::vector<float> x{-4.f, -2.f, -0.5f, 0.f, 0.3f, 1.f, 2.5f, 7.f};
  // Printed by keras.activations.get(name)(x.reshape(2, 4)) with Keras 3.15.
  const std::vector<std::pair<std::string, std::vector<double>>> expected{
      {"hard_sigmoid", {0.0, 0.16666667, 0.41666666, 0.5, 0.55, 0.66666669, 0.91666669, 1.0}},
      {"selu", {-1.72589862, -1.52016652, -0.69175816, 0.0, 0.31521031, 1.05070102, 2.62675261, 7.35490704}},
      {"softplus", {0.01814993, 0.12692800, 0.47407699, 0.69314718, 0.85435522, 1.31326163, 2.57888985, 7.00091171}},
      {"softsign", {-0.8, -0.66666669, -0.33333334, 0.0, 0.23076925, 0.5, 0.71428573, 0.875}},
      {"swish", {-0.07194484, -0.23840588, -0.18877034, 0.0, 0.17233273, 0.73105854, 2.31035447, 6.99362278}},
      {"leaky_relu", {-0.8, -0.4, -0.1, 0.0, 0.3, 1.0, 2.5, 7.0}},
      {"hard_silu", {0.0, -0.33333334, -0.20833333, 0.0, 0.165, 0.66666669, 2.29166675, 7.0}},
      {"relu6", {0.0, 0.0, 0.0, 0.0, 0.3, 1.0, 2.5, 6.0}},
      {"elu", {-0.98168439, -0.86466473, -0.39346933, 0.0, 0.3, 1.0, 2.5, 7.0}},
      {"exponential", {0.01831564, 0.13533528, 0.60653067, 1.0, 1.34985876, 2.71828175, 12.18249416, 1096.63317871}},
      {"log_softmax",
       {-4.56541729, -2.56541705, -1.06541705, -0.56541705, -6.71470976, -6.01470995, -4.51470995, -0.01470994}},
      {"softmax", {0.01040554, 0.07688712, 0.34458411, 0.56812322, 0.00121294, 0.00244256, 0.01094678, 0.98539770}},
      {"relu", {0, 0, 0, 0, 0.3, 1, 2.5, 7}},
      {"linear", {-4, -2, -0.5, 0, 0.3, 1, 2.5, 7}},
      {"", {-4, -2, -0.5, 0, 0.3, 1, 2.5, 7}},
  };
  for (const auto& [name, values] : expected) {
    CAPTURE(name);
    Graph g;
    auto in = g.constant(floats({2, 4}, x));
    check_close(testing::evaluate({apply_activation(name, in)})[0], values, 1e-5, 1e-6);
  }
  // Large inputs stay finite where a naive log(1 + exp(x)) overflows.
  Graph g;
  auto big = g.constant(floats({2}, {100.f, -100.f}));
  check_close(testing::evaluate({apply_activation("softplus", big)})[0], {100.0, 0.0}, 1e-6, 1e-6);
}

TEST_CASE("activations: gradients of the composed ones, and unknown names") {
  for (const char* name : {"softplus", "selu", "softsign", "swish", "hard_sigmoid", "hard_silu", "relu6"}) {
    CAPTURE(name);
    check_gradients({{3, 4}}, [&](const Inputs& xs) { return Inputs{apply_activation(name, ops::scale(xs[0], 2.0))}; });
  }
  auto msg = message_of<ValueError>([] { check_activation_name("gelu"); });
  CHECK(contains(msg, "unknown activation \"gelu\""));
  CHECK(contains(msg, "relu"));
  CHECK(contains(message_of<ValueError>([] { layers::Dense(3, {.activation = "rleu"}); }), "rleu"));
}

// ---- convolution and pooling ------------------------------------------------------------------------

TEST_CASE("Conv2D: shapes, weights, forward values, gradients") {
  clear_session();
  auto x = layers::Input({28, 28, 1});
  layers::Conv2D conv(32, {3, 3}, {.activation = "relu"});
  CHECK(conv(x).shape() == Shape{-1, 26, 26, 32});
  REQUIRE(conv.weights().size() == 2);
  CHECK(conv.weights()[0]->name() == "conv2d/kernel:0");
  CHECK(conv.weights()[0]->shape() == Shape{3, 3, 1, 32});
  CHECK(conv.weights()[1]->name() == "conv2d/bias:0");
  CHECK(conv.weights()[1]->shape() == Shape{32});
  CHECK(conv.count_params() == 320);
  CHECK(conv.get_weights()[1].to_vector<float>() == std::vector<float>(32, 0.0f));

  CHECK(keras_shape(layers::Conv2D(8, 3, {.strides = {2}, .padding = "same"}), {28, 28, 1}) == Shape{-1, 14, 14, 8});
  CHECK(keras_shape(layers::Conv2D(4, {3, 5}, {.padding = "SAME"}), {7, 9, 2}) == Shape{-1, 7, 9, 4});
  CHECK(keras_shape(layers::Conv2D(4, {3, 3}, {.dilation_rate = {2, 2}}), {9, 9, 2}) == Shape{-1, 5, 5, 4});
  CHECK(keras_shape(layers::Conv2D(4, {2, 2}, {.strides = {2, 1}, .use_bias = false}), {6, 6, 3}) ==
        Shape{-1, 3, 5, 4});

  SUBCASE("handles share the weights, whichever handle built them") {
    layers::Conv2D original(2, 3);
    layers::Conv2D copy = original;  // as a Sequential's layer list holds it
    copy(layers::Input({5, 5, 1}));
    CHECK(original.built());
    CHECK(original(layers::Input({6, 6, 1})).shape() == Shape{-1, 4, 4, 2});
    CHECK(original.weights()[0] == copy.weights()[0]);
  }
  SUBCASE("forward against a direct loop") {
    // x (2, 4, 3, 2), kernel (2, 2, 2, 3), "valid", strides (1, 1): y (2, 3, 2, 3).
    layers::Conv2D layer(3, {2, 2}, {.activation = "relu"});
    layer.ensure_built({{-1, 4, 3, 2}});
    Tensor xv = random_tensor({2, 4, 3, 2}, 11, 0.1, 1.0, false, DType::float32);
    Tensor kv = random_tensor({2, 2, 2, 3}, 12, 0.1, 1.0, false, DType::float32);
    Tensor bv = floats({3}, {0.5f, -0.25f, 0.0f});
    layer.set_weights({kv, bv});
    auto xs = xv.to_vector<double>(), ks = kv.to_vector<double>(), bs = bv.to_vector<double>();
    std::vector<double> expected;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j)
          for (int f = 0; f < 3; ++f) {
            double sum = bs[f];
            for (int di = 0; di < 2; ++di)
              for (int dj = 0; dj < 2; ++dj)
                for (int c = 0; c < 2; ++c)
                  sum += xs[((n * 4 + i + di) * 3 + j + dj) * 2 + c] * ks[((di * 2 + dj) * 2 + c) * 3 + f];
            expected.push_back(std::max(sum, 0.0));
          }
    Tensor y = run1(layer, xv);
    CHECK(y.shape() == Shape{2, 3, 2, 3});
    check_close(y, expected, 1e-5, 1e-5);
  }
  SUBCASE("gradient with respect to the input") {
    layers::Conv2D layer(2, {2, 2}, {.strides = {2, 2}, .padding = "same"});
    check_layer_gradients(layer, {{2, 3, 3, 2}});
  }
}

TEST_CASE("Conv2D: bad arguments and inputs") {
  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(0, 3); }), "filters must be positive"));
  auto msg = message_of<ValueError>([] { layers::Conv2D(4, {3, 3, 3}, {.name = "c"}); });
  CHECK(contains(msg, "Conv2D \"c\""));
  CHECK(contains(msg, "kernel_size"));
  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(4, 3, {.padding = "full"}); }), "\"full\""));
  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(4, 3, {.strides = {2}, .dilation_rate = {2}}); }),
                 "dilation_rate"));
  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(4, 3, {.activation = "nope"}); }), "nope"));
  msg = message_of<ShapeError>([] { layers::Conv2D(4, 3, {.name = "c2"})(layers::Input({28, 28})); });
  CHECK(contains(msg, "Conv2D \"c2\""));
  CHECK(contains(msg, "rank 4"));
  CHECK(contains(msg, "(None, 28, 28)"));
  // A second call with other channels than the kernel was built for.
  layers::Conv2D shared(4, 3, {.name = "c3"});
  shared(layers::Input({8, 8, 1}));
  msg = message_of<ShapeError>([&] { shared(layers::Input({8, 8, 3})); });
  CHECK(contains(msg, "expected input with 1 channels"));
  // Too small for the kernel with "valid" padding.
  CHECK(contains(message_of<ShapeError>([] { layers::Conv2D(4, 5)(layers::Input({3, 3, 1})); }), "\"same\""));
}

TEST_CASE("MaxPooling2D and AveragePooling2D: shapes and values") {
  CHECK(keras_shape(layers::MaxPooling2D({2, 2}), {26, 26, 32}) == Shape{-1, 13, 13, 32});
  CHECK(keras_shape(layers::MaxPooling2D(3), {7, 7, 1}) == Shape{-1, 2, 2, 1});
  CHECK(keras_shape(layers::MaxPooling2D({2, 2}, {.strides = {1, 1}}), {4, 5, 2}) == Shape{-1, 3, 4, 2});
  CHECK(keras_shape(layers::AveragePooling2D({2, 2}, {.padding = "same"}), {5, 5, 1}) == Shape{-1, 3, 3, 1});
  CHECK(layers::MaxPooling2D({3, 2}).strides() == Ints{3, 2});
  CHECK(layers::MaxPooling2D().weights().empty());

  // x (1, 3, 3, 1) = 1..9.
  Tensor x = floats({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  layers::MaxPooling2D max_valid;
  check_close(run1(max_valid, x), {5});
  layers::MaxPooling2D max_same({2, 2}, {.padding = "same"});
  check_close(run1(max_same, x), {5, 6, 8, 9});
  layers::AveragePooling2D avg_same({2, 2}, {.padding = "same"});  // padding excluded from the mean, as Keras
  check_close(run1(avg_same, x), {3, 4.5, 7.5, 9});
  layers::AveragePooling2D avg_strided({2, 2}, {.strides = {1, 1}});
  check_close(run1(avg_strided, x), {3, 4, 6, 7});

  layers::MaxPooling2D grad_max({2, 2}, {.strides = {1, 1}});
  check_weightless_gradients(grad_max, {{2, 3, 3, 2}});
  layers::AveragePooling2D grad_avg({2, 2}, {.padding = "same"});
  check_weightless_gradients(grad_avg, {{1, 3, 3, 2}});
}

TEST_CASE("pooling: bad arguments and inputs") {
  CHECK(contains(message_of<ValueError>([] { layers::MaxPooling2D({0, 2}); }), "pool_size"));
  CHECK(contains(message_of<ValueError>([] { layers::AveragePooling2D({2, 2}, {.strides = {1, 2, 3}}); }), "strides"));
  CHECK(contains(message_of<ValueError>([] { layers::MaxPooling2D({2, 2}, {.padding = "causal"}); }), "causal"));
  auto msg = message_of<ShapeError>([] { layers::MaxPooling2D({2, 2}, {.name = "pool"})(layers::Input({10})); });
  CHECK(contains(msg, "MaxPooling2D \"pool\""));
  CHECK(contains(msg, "(None, 10)"));
}

TEST_CASE("GlobalAveragePooling2D and GlobalMaxPooling2D") {
  CHECK(keras_shape(layers::GlobalAveragePooling2D(), {4, 4, 3}) == Shape{-1, 3});
  CHECK(keras_shape(layers::GlobalMaxPooling2D({.keepdims = true}), {4, 4, 3}) == Shape{-1, 1, 1, 3});
  // x (1, 2, 2, 2): channel 0 = 1, 2, 3, 4 and channel 1 = -1, 5, 0, 2.
  Tensor x = floats({1, 2, 2, 2}, {1, -1, 2, 5, 3, 0, 4, 2});
  layers::GlobalAveragePooling2D avg;
  check_close(run1(avg, x), {2.5, 1.5});
  layers::GlobalMaxPooling2D max({.keepdims = true});
  Tensor y = run1(max, x);
  CHECK(y.shape() == Shape{1, 1, 1, 2});
  check_close(y, {4, 5});
  check_weightless_gradients(avg, {{2, 3, 2, 2}});
  CHECK(contains(message_of<ShapeError>([] { layers::GlobalMaxPooling2D()(layers::Input({4, 4})); }), "rank 4"));
}

// ---- reshaping --------------------------------------------------------------------------------------

TEST_CASE("Flatten and Reshape") {
  CHECK(keras_shape(layers::Flatten(), {12, 12, 64}) == Shape{-1, 9216});
  CHECK(keras_shape(layers::Flatten(), {4}) == Shape{-1, 4});
  CHECK(keras_shape(layers::Reshape({3, 4}), {12}) == Shape{-1, 3, 4});
  CHECK(keras_shape(layers::Reshape({-1, 2}), {2, 3}) == Shape{-1, 3, 2});  // as Keras: (None, 3, 2)

  Tensor x = floats({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  layers::Flatten flatten;
  Tensor flat = run1(flatten, x);
  CHECK(flat.shape() == Shape{2, 6});
  check_close(flat, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  layers::Reshape reshape({3, -1});
  Tensor r = run1(reshape, x);
  CHECK(r.shape() == Shape{2, 3, 2});
  check_close(r, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  check_weightless_gradients(reshape, {{2, 2, 3}});

  CHECK(contains(message_of<ValueError>([] { layers::Reshape({-1, -1}); }), "at most one -1"));
  CHECK(contains(message_of<ValueError>([] { layers::Reshape({0, 2}); }), "target_shape"));
  auto msg = message_of<ShapeError>([] { layers::Reshape({5}, {.name = "r"})(layers::Input({2, 3})); });
  CHECK(contains(msg, "Reshape \"r\""));
  CHECK(contains(msg, "6 elements"));
  CHECK(contains(message_of<ShapeError>([] { layers::Reshape({4, -1})(layers::Input({2, 3})); }), "[4, -1]"));
}

TEST_CASE("ZeroPadding2D: Keras's three padding forms") {
  CHECK(keras_shape(layers::ZeroPadding2D({{1, 2}, {3, 4}}), {5, 5, 1}) == Shape{-1, 8, 12, 1});
  CHECK(keras_shape(layers::ZeroPadding2D(2), {5, 5, 1}) == Shape{-1, 9, 9, 1});
  CHECK(keras_shape(layers::ZeroPadding2D({1, 2}), {5, 5, 1}) == Shape{-1, 7, 9, 1});
  CHECK(layers::ZeroPadding2D().padding() == Ints{1, 1, 1, 1});

  layers::ZeroPadding2D pad({{1, 0}, {0, 1}});
  Tensor y = run1(pad, floats({1, 2, 2, 1}, {1, 2, 3, 4}));
  CHECK(y.shape() == Shape{1, 3, 3, 1});
  check_close(y, {0, 0, 0, 1, 2, 0, 3, 4, 0});
  check_weightless_gradients(pad, {{2, 2, 2, 2}});

  CHECK(contains(message_of<ValueError>([] { layers::ZeroPadding2D(-1); }), "padding"));
  CHECK(contains(message_of<ValueError>([] { layers::ZeroPadding2D({{1, 2, 3}, {1, 2}}); }), "(top, bottom)"));
  CHECK(contains(message_of<ShapeError>([] { layers::ZeroPadding2D()(layers::Input({5, 5})); }), "rank 4"));
}

// ---- dropout and batch normalization ----------------------------------------------------------------

TEST_CASE("Dropout: identity at inference, inverted dropout while training, seeds") {
  CHECK(keras_shape(layers::Dropout(0.5), {7, 3}) == Shape{-1, 7, 3});
  Tensor x = Tensor::full({50, 40}, 2.0);
  layers::Dropout dropout(0.25);
  check_close(run1(dropout, x, /*training=*/false), x);

  auto y = run1(dropout, x, /*training=*/true).to_vector<float>();
  std::size_t zeros = 0;
  for (float v : y) {
    CHECK((v == 0.0f || std::abs(v - 2.0f / 0.75f) < 1e-5f));
    zeros += v == 0.0f;
  }
  CHECK(static_cast<double>(zeros) / static_cast<double>(y.size()) == doctest::Approx(0.25).epsilon(0.2));

  // One seed, one mask: two layers with the same seed drop the same elements.
  layers::Dropout a(0.5, {.seed = 42}), b(0.5, {.seed = 42});
  CHECK(a.seed() == 42);
  CHECK(run1(a, x, true).to_vector<float>() == run1(b, x, true).to_vector<float>());
  // Unseeded layers draw different seeds from the global one.
  CHECK(layers::Dropout(0.5).seed() != layers::Dropout(0.5).seed());
  // rate 0 trains as the identity.
  layers::Dropout none(0.0);
  check_close(run1(none, x, true), x);

  auto msg = message_of<ValueError>([] { layers::Dropout(-0.1, {.name = "drop"}); });
  CHECK(contains(msg, "Dropout \"drop\""));
  CHECK(contains(msg, "rate must be in [0, 1)"));
  CHECK(contains(message_of<ValueError>([] { layers::Dropout(1.0); }), "got 1"));
}

TEST_CASE("BatchNormalization: weights, training values and moving statistics as Keras 3") {
  clear_session();
  layers::BatchNormalization bn;
  CHECK(keras_shape(bn, {2}) == Shape{-1, 2});
  REQUIRE(bn.weights().size() == 4);
  const std::vector<std::string> names{"batch_normalization/gamma:0", "batch_normalization/beta:0",
                                       "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"};
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(bn.weights()[i]->name() == names[i]);
    CHECK(bn.weights()[i]->shape() == Shape{2});
  }
  CHECK(bn.trainable_weights().size() == 2);
  CHECK(bn.non_trainable_weights().size() == 2);

  // The numbers Keras 3.15 printed for BatchNormalization()(x, training=True) on this x.
  Tensor x = floats({3, 2}, {1, 2, 3, 5, 0, -1});
  std::size_t num_updates = 0;
  Tensor y = run_layer(bn, {x}, /*training=*/true, &num_updates)[0];
  CHECK(num_updates == 2);
  check_close(y, {-0.26717538, 0.0, 1.335877, 1.2246429, -1.0687015, -1.2246428}, 1e-5, 1e-5);
  // moving = 0.99 * moving + 0.01 * batch, with the biased batch variance (1.5556, 6).
  auto w = bn.get_weights();
  check_close(w[2], {0.01333333, 0.02}, 1e-5, 1e-7);
  check_close(w[3], {1.0055555, 1.05}, 1e-6, 1e-7);

  // Inference normalizes with the moving statistics: (x - mean) / sqrt(var + 1e-3).
  Tensor inference = run1(bn, x, /*training=*/false);
  std::vector<double> expected;
  auto xs = x.to_vector<double>(), mm = w[2].to_vector<double>(), mv = w[3].to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) expected.push_back((xs[i] - mm[i % 2]) / std::sqrt(mv[i % 2] + 1e-3));
  check_close(inference, expected, 1e-5, 1e-6);
  CHECK(bn.get_weights()[2].to_vector<float>() == w[2].to_vector<float>());  // inference updates nothing
}

TEST_CASE("BatchNormalization: images, options, frozen layers, gradients, errors") {
  clear_session();
  SUBCASE("rank 4: statistics per channel over batch, height and width") {
    layers::BatchNormalization bn({.momentum = 0.5, .epsilon = 0.01});
    Tensor x = random_tensor({2, 3, 3, 2}, 5, 0.1, 2.0, false, DType::float32);
    Tensor y = run1(bn, x, true);
    auto xs = x.to_vector<double>();
    std::vector<double> mean(2, 0), var(2, 0);
    for (std::size_t i = 0; i < xs.size(); ++i) mean[i % 2] += xs[i] / 18.0;
    for (std::size_t i = 0; i < xs.size(); ++i) var[i % 2] += (xs[i] - mean[i % 2]) * (xs[i] - mean[i % 2]) / 18.0;
    std::vector<double> expected;
    for (std::size_t i = 0; i < xs.size(); ++i)
      expected.push_back((xs[i] - mean[i % 2]) / std::sqrt(var[i % 2] + 0.01));
    check_close(y, expected, 1e-4, 1e-5);
    check_close(bn.get_weights()[2], {0.5 * mean[0], 0.5 * mean[1]}, 1e-5, 1e-6);
    check_close(bn.get_weights()[3], {0.5 + 0.5 * var[0], 0.5 + 0.5 * var[1]}, 1e-5, 1e-6);
  }
  SUBCASE("center and scale off: only the moving statistics") {
    layers::BatchNormalization bn({.center = false, .scale = false});
    bn(layers::Input({4}));
    CHECK(bn.weights().size() == 2);
    CHECK(bn.trainable_weights().empty());
    check_close(run1(bn, floats({2, 4}, {1, 2, 3, 4, 3, 2, 1, 0}), true),
                {-0.999500, 0.0, 0.999500, 0.999875, 0.999500, 0.0, -0.999500, -0.999875}, 1e-5, 1e-5);
  }
  SUBCASE("gamma and beta apply; a frozen layer uses the moving statistics while training") {
    layers::BatchNormalization bn;
    bn(layers::Input({2}));
    bn.set_weights({floats({2}, {2, 3}), floats({2}, {1, -1}), floats({2}, {1, 2}), floats({2}, {4, 9})});
    Tensor x = floats({2, 2}, {3, 2, -1, 5});
    auto expect = [&](double v, int c) {
      double g[] = {2, 3}, b[] = {1, -1}, m[] = {1, 2}, s[] = {4, 9};
      return g[c] * (v - m[c]) / std::sqrt(s[c] + 1e-3) + b[c];
    };
    std::vector<double> expected{expect(3, 0), expect(2, 1), expect(-1, 0), expect(5, 1)};
    check_close(run1(bn, x, false), expected, 1e-5, 1e-5);
    bn.set_trainable(false);
    std::size_t num_updates = 1;
    check_close(run_layer(bn, {x}, true, &num_updates)[0], expected, 1e-5, 1e-5);
    CHECK(num_updates == 0);
  }
  SUBCASE("gradient with respect to the input, training and inference") {
    layers::BatchNormalization bn;
    check_layer_gradients(bn, {{4, 3}}, /*training=*/true);
    check_layer_gradients(bn, {{2, 2, 2, 3}}, /*training=*/false);
  }
  SUBCASE("errors") {
    auto msg = message_of<ValueError>([] {
      layers::BatchNormalization({.axis = 1, .name = "bn"})(layers::Input({3, 4}));
    });
    CHECK(contains(msg, "BatchNormalization \"bn\""));
    CHECK(contains(msg, "axis=1"));
    CHECK_NOTHROW(layers::BatchNormalization({.axis = 1})(layers::Input({3})));  // axis 1 is the last one here
    CHECK(contains(message_of<ValueError>([] { layers::BatchNormalization({.momentum = 1.5}); }), "momentum"));
    CHECK(contains(message_of<ValueError>([] { layers::BatchNormalization({.epsilon = 0}); }), "epsilon"));
    CHECK(contains(message_of<ShapeError>([] { layers::BatchNormalization()(layers::Input({})); }), "(None,)"));
  }
}

// ---- activation layers -----------------------------------------------------------------------------

TEST_CASE("Activation, ReLU, LeakyReLU, ELU, Softmax: values as Keras") {
  const Tensor x = floats({2, 4}, {-4.f, -2.f, -0.5f, 0.f, 0.3f, 1.f, 2.5f, 7.f});
  layers::Activation tanh("tanh");
  std::vector<double> tanh_x;
  for (double v : as_doubles(x)) tanh_x.push_back(std::tanh(v));
  check_close(run1(tanh, x), tanh_x, 1e-6, 1e-6);
  CHECK(contains(message_of<ValueError>([] { layers::Activation("relu7"); }), "relu7"));

  // Printed by keras.layers.ReLU(**options)(x) with Keras 3.15.
  const std::vector<std::pair<layers::ReLUOptions, std::vector<double>>> relu_cases{
      {{}, {0, 0, 0, 0, 0.3, 1, 2.5, 7}},
      {{.max_value = 6.0}, {0, 0, 0, 0, 0.3, 1, 2.5, 6}},
      {{.threshold = 1.0}, {0, 0, 0, 0, 0, 0, 2.5, 7}},
      {{.max_value = 1.0, .negative_slope = 0.2}, {-0.8, -0.4, -0.1, 0, 0.3, 1, 1, 1}},
      {{.negative_slope = 0.1, .threshold = 1.0}, {-0.5, -0.3, -0.15, -0.1, -0.07, 0, 2.5, 7}},
      {{.max_value = 2.0, .threshold = 0.5}, {0, 0, 0, 0, 0, 1, 2, 2}},
      {{.negative_slope = 0.5}, {-2, -1, -0.25, 0, 0.3, 1, 2.5, 7}},
  };
  for (const auto& [options, expected] : relu_cases) {
    layers::ReLU relu(options);
    check_close(run1(relu, x), expected, 1e-6, 1e-6);
  }

  layers::LeakyReLU leaky;
  CHECK(leaky.negative_slope() == 0.3);
  check_close(run1(leaky, x), {-1.2, -0.6, -0.15, 0, 0.3, 1, 2.5, 7}, 1e-6, 1e-6);
  CHECK(layers::LeakyReLU({.alpha = 0.1}).negative_slope() == 0.1);
  CHECK(layers::LeakyReLU({.negative_slope = 0.2, .alpha = 0.1}).negative_slope() == 0.1);  // alpha wins, as Keras
  CHECK(layers::LeakyReLU(0.05).negative_slope() == 0.05);

  layers::ELU elu(0.5);
  std::vector<double> elu_x;
  for (double v : as_doubles(x)) elu_x.push_back(v > 0 ? v : 0.5 * (std::exp(v) - 1));
  check_close(run1(elu, x), elu_x, 1e-6, 1e-6);
  CHECK(layers::ELU().alpha() == 1.0);

  layers::Softmax softmax_rows;
  check_close(run1(softmax_rows, x),
              {0.01040554, 0.07688712, 0.34458411, 0.56812322, 0.00121294, 0.00244256, 0.01094678, 0.98539770}, 1e-5,
              1e-7);
  layers::Softmax softmax_batch({.axis = 0});  // over the first axis: each column sums to 1
  auto cols = run1(softmax_batch, x).to_vector<double>();
  for (int j = 0; j < 4; ++j) CHECK(cols[j] + cols[4 + j] == doctest::Approx(1.0));
  CHECK(cols[0] == doctest::Approx(1.0 / (1.0 + std::exp(4.3))));
}

TEST_CASE("activation layers: gradients and bad arguments") {
  layers::ReLU relu({.max_value = 0.8, .negative_slope = 0.1, .threshold = 0.05});
  // Inputs away from the kinks (|x| >= 0.1, != 0.8 by the random draw) so finite differences are exact.
  check_weightless_gradients(relu, {{3, 5}}, {.min_abs = 0.1, .max_abs = 0.75});
  layers::LeakyReLU leaky(0.2);
  check_weightless_gradients(leaky, {{3, 5}});
  layers::ELU elu(0.7);
  check_weightless_gradients(elu, {{3, 5}});
  layers::Softmax softmax({.axis = 1});
  check_weightless_gradients(softmax, {{2, 3, 4}});

  CHECK(contains(message_of<ValueError>([] { layers::ReLU({.max_value = -1.0}); }), "max_value"));
  CHECK(contains(message_of<ValueError>([] { layers::ReLU({.negative_slope = -0.1}); }), "negative_slope"));
  CHECK(contains(message_of<ValueError>([] { layers::ReLU({.threshold = -1.0}); }), "threshold"));
  auto msg = message_of<ValueError>([] { layers::LeakyReLU({.alpha = -0.3, .name = "lr"}); });
  CHECK(contains(msg, "LeakyReLU \"lr\""));
  CHECK(contains(message_of<ValueError>([] { layers::ELU(NAN); }), "alpha"));
  CHECK(contains(message_of<ValueError>([] { layers::Softmax({.axis = 2})(layers::Input({4})); }), "axis 2"));
}

// ---- Lambda --------------------------------------------------------------------------------------

TEST_CASE("Lambda: one or several tensors, output_shape checks") {
  layers::Lambda twice([](const SymbolicTensor& x) { return ops::scale(x, 2.0); });
  CHECK(keras_shape(twice, {3}) == Shape{-1, 3});
  check_close(run1(twice, floats({1, 3}, {1, 2, 3})), {2, 4, 6});

  // Several inputs and outputs: the sum and the difference.
  layers::Lambda both([](const Inputs& xs) { return Inputs{ops::add(xs[0], xs[1]), ops::subtract(xs[0], xs[1])}; });
  auto a = layers::Input({2}), b = layers::Input({2});
  auto outs = both.call_multi({a, b});
  REQUIRE(outs.size() == 2);
  CHECK(outs[1].shape() == Shape{-1, 2});
  auto values = run_layer(both, {floats({1, 2}, {5, 1}), floats({1, 2}, {2, 3})});
  check_close(values[0], {7, 4});
  check_close(values[1], {3, -2});

  // Slicing the batch, as multi_gpu_model's towers do; output_shape agrees.
  layers::Lambda first_two(
      [](const SymbolicTensor& x) {
        return ops::slice(x, {0, 0}, {2, -1});
      },
      {.output_shape = [](const std::vector<Shape>& s) {
        return Shape{2, s[0][1]};
      }});
  check_close(run1(first_two, floats({3, 2}, {1, 2, 3, 4, 5, 6})), {1, 2, 3, 4});

  layers::Lambda wrong([](const SymbolicTensor& x) { return ops::reduce_sum(x, {1}); },
                       {.output_shape = [](const std::vector<Shape>& s) { return s[0]; }, .name = "summed"});
  auto msg = message_of<ShapeError>([&] { wrong(layers::Input({4})); });
  CHECK(contains(msg, "Lambda \"summed\""));
  CHECK(contains(msg, "returned shape (None,)"));
  CHECK(contains(msg, "output_shape says (None, 4)"));

  CHECK(contains(message_of<ValueError>([] { layers::Lambda(layers::Lambda::UnaryFunction{}); }), "empty"));
  CHECK(contains(message_of<ValueError>([&] { twice({layers::Input({2}), layers::Input({2})}); }), "one input"));
}

// ---- merge layers ---------------------------------------------------------------------------------

TEST_CASE("Add, Subtract, Multiply, Average, Maximum: values, broadcasting, ranks") {
  Tensor a = floats({2, 3}, {1, -2, 3, 4, 5, -6});
  Tensor b = floats({2, 3}, {0.5, 2, -1, 4, -5, 1});
  Tensor c = floats({2, 3}, {2, 2, 2, -1, -1, -1});
  auto keras = [&](const Layer& layer) {
    return layer({layers::Input({3}), layers::Input({3}), layers::Input({3})}).shape();
  };
  CHECK(keras(layers::Add()) == Shape{-1, 3});
  CHECK(keras(layers::Maximum()) == Shape{-1, 3});

  layers::Add add;
  check_close(run_layer(add, {a, b, c})[0], {3.5, 2, 4, 7, -1, -6});
  layers::Subtract subtract;
  check_close(run_layer(subtract, {a, b})[0], {0.5, -4, 4, 0, 10, -7});
  layers::Multiply multiply;
  check_close(run_layer(multiply, {a, b, c})[0], {1, -8, -6, -16, 25, 6});
  layers::Average average;
  check_close(run_layer(average, {a, b, c})[0], {3.5 / 3, 2.0 / 3, 4.0 / 3, 7.0 / 3, -1.0 / 3, -2}, 1e-6, 1e-6);
  layers::Maximum maximum;
  check_close(run_layer(maximum, {a, b, c})[0], {2, 2, 3, 4, 5, 1});

  // As Keras: a size of 1 broadcasts, and a lower-rank input lines up after the batch axis.
  CHECK(layers::Add()({layers::Input({3}), layers::Input({1})}).shape() == Shape{-1, 3});
  CHECK(layers::Add()({layers::Input({2, 3}), layers::Input({3})}).shape() == Shape{-1, 2, 3});
  layers::Multiply scale_rows;
  Tensor rows = floats({2, 2, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});
  Tensor per_sample = floats({2, 3}, {1, 2, 3, -1, 0, 1});
  check_close(run_layer(scale_rows, {rows, per_sample})[0], {1, 2, 3, 2, 4, 6, -3, 0, 3, -4, 0, 4});

  check_weightless_gradients(average, {{2, 3}, {2, 3}, {2, 3}});
  check_weightless_gradients(maximum, {{2, 3}, {2, 3}});
  check_weightless_gradients(scale_rows, {{2, 2, 3}, {2, 3}});
  check_weightless_gradients(subtract, {{2, 3}, {2, 1}});
}

TEST_CASE("merge layers: bad inputs name the shapes that differ") {
  auto msg = message_of<ShapeError>([] {
    layers::Add({.name = "sum"})({layers::Input({3}), layers::Input({3}), layers::Input({4})});
  });
  CHECK(contains(msg, "Add \"sum\""));
  CHECK(contains(msg, "input 0 has shape (None, 3) but input 2 has shape (None, 4)"));
  msg = message_of<ShapeError>([] {
    layers::Multiply()({layers::Input({1}), layers::Input({3}), layers::Input({4})});
  });
  CHECK(contains(msg, "input 1 has shape (None, 3) but input 2 has shape (None, 4)"));
  msg = message_of<ShapeError>([] {
    layers::Maximum()({layers::Input({3}, {.batch_size = 4}), layers::Input({3}, {.batch_size = 5})});
  });
  CHECK(contains(msg, "(4, 3)"));
  msg = message_of<ValueError>([] {
    layers::Subtract()({layers::Input({3}), layers::Input({3}), layers::Input({3})});
  });
  CHECK(contains(msg, "exactly 2 inputs"));
  CHECK(contains(msg, "got 3"));
  CHECK(contains(message_of<ValueError>([] { layers::Add()(std::vector<KerasTensor>{}); }), "at least one input"));
}

TEST_CASE("Concatenate") {
  CHECK(layers::Concatenate()({layers::Input({3}), layers::Input({4})}).shape() == Shape{-1, 7});
  CHECK(layers::Concatenate({.axis = 1})({layers::Input({2, 5}), layers::Input({3, 5})}).shape() == Shape{-1, 5, 5});
  CHECK(layers::Concatenate({.axis = 0})({layers::Input({2}), layers::Input({2})}).shape() == Shape{-1, 2});

  layers::Concatenate last;
  check_close(run_layer(last, {floats({2, 1}, {1, 2}), floats({2, 2}, {3, 4, 5, 6})})[0], {1, 3, 4, 2, 5, 6});
  layers::Concatenate batch({.axis = 0});  // joins towers' outputs
  Tensor joined = run_layer(batch, {floats({1, 2}, {1, 2}), floats({2, 2}, {3, 4, 5, 6})})[0];
  CHECK(joined.shape() == Shape{3, 2});
  check_close(joined, {1, 2, 3, 4, 5, 6});
  layers::Concatenate middle({.axis = 1});
  check_weightless_gradients(middle, {{2, 1, 3}, {2, 2, 3}});

  auto msg = message_of<ShapeError>([] {
    layers::Concatenate({.name = "cat"})({layers::Input({3, 2}), layers::Input({4, 3})});
  });
  CHECK(contains(msg, "Concatenate \"cat\""));
  CHECK(contains(msg, "input 0 has shape (None, 3, 2) and input 1 has shape (None, 4, 3)"));
  CHECK(contains(message_of<ShapeError>([] {
                   layers::Concatenate()({layers::Input({3}), layers::Input({3, 1})});
                 }),
                 "except along axis -1"));
  CHECK(contains(message_of<ValueError>([] {
                   layers::Concatenate({.axis = 2})({layers::Input({3}), layers::Input({3})});
                 }),
                 "axis 2 is out of range"));
}

// ---- Embedding -----------------------------------------------------------------------------------

TEST_CASE("Embedding: weights, lookups, float indices") {
  clear_session();
  layers::Embedding embedding(10, 3);
  CHECK(keras_shape(embedding, {4}) == Shape{-1, 4, 3});
  REQUIRE(embedding.weights().size() == 1);
  CHECK(embedding.weights()[0]->name() == "embedding/embeddings:0");
  CHECK(embedding.weights()[0]->shape() == Shape{10, 3});
  for (float v : embedding.get_weights()[0].to_vector<float>()) CHECK((v >= -0.05f && v < 0.05f));

  std::vector<float> table(30);
  std::iota(table.begin(), table.end(), 0.0f);  // row i = (3i, 3i + 1, 3i + 2)
  embedding.set_weights({floats({10, 3}, table)});
  Tensor ids = Tensor::from_vector<std::int32_t>({2, 2}, {1, 9, 0, 1});
  Tensor y = run1(embedding, ids);
  CHECK(y.shape() == Shape{2, 2, 3});
  check_close(y, {3, 4, 5, 27, 28, 29, 0, 1, 2, 3, 4, 5});
  // Float indices (an Input's default dtype) are cast to int32, as Keras does.
  check_close(run1(embedding, floats({1, 2}, {2, 3})), {6, 7, 8, 9, 10, 11});

  CHECK(contains(message_of<ValueError>([] { layers::Embedding(0, 3, {.name = "emb"}); }), "Embedding \"emb\""));
  CHECK(contains(message_of<ValueError>([&] {
                   run1(embedding, Tensor::from_vector<std::int32_t>({1, 1}, {10}));
                 }),
                 "10"));
}

// ---- layers together -------------------------------------------------------------------------------

TEST_CASE("a small CNN: shapes through the stack and gradients through several layers") {
  clear_session();
  auto x = layers::Input({8, 8, 1});
  auto h = layers::ZeroPadding2D(1)(x);
  h = layers::Conv2D(4, 3, {.activation = "relu"})(h);
  h = layers::BatchNormalization()(h);
  h = layers::MaxPooling2D()(h);
  auto skip = layers::Conv2D(4, 1, {.strides = {2}})(x);
  h = layers::Add()({h, skip});
  h = layers::Dropout(0.5)(h);
  h = layers::Flatten()(h);
  auto y = layers::Dense(3, {.activation = "softmax"})(h);
  CHECK(y.shape() == Shape{-1, 3});
  CHECK(y.layer().name() == "dense");

  // Gradients through padding, pooling, a merge and a reshape in float64.
  layers::ZeroPadding2D pad(1);
  layers::MaxPooling2D pool({2, 2}, {.strides = {1, 1}});
  layers::Average mean;
  layers::Flatten flatten;
  check_gradients({{2, 3, 3, 2}, {2, 4, 4, 2}}, [&](const Inputs& xs) {
    CallContext ctx{.graph = xs[0].graph()};
    auto padded = pad.call(ctx, {xs[0]})[0];           // (2, 5, 5, 2)
    auto pooled = pool.call(ctx, {padded})[0];         // (2, 4, 4, 2)
    auto merged = mean.call(ctx, {pooled, xs[1]})[0];  // (2, 4, 4, 2)
    return flatten.call(ctx, {merged});
  });
}
