// LocallyConnected1D/2D (tf.keras 2): shapes, weight layouts (implementations 1, 2, 3), forward values and
// weight gradients against a direct loop (strides, channels_first's flattening and bias quirk), input
// gradients (padding "same" too), configs, errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/layers/locally_connected/local_conv.h"
#include "tower/layers/registry.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::check_layer_gradients;
using tower::testing::contains;
using tower::testing::evaluate;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::random_tensor;
using tower::testing::run1;
using tower::layers::local_conv_geometry;
using tower::layers::local_conv_kernel_shape;
using tower::layers::local_conv_kernel_table;
using tower::layers::LocalConvGeometry;
using Ints = std::vector<std::int64_t>;

using tower::testing::entry;

namespace {

// tf.keras's local_conv by its definition, on x given in the layer's data_format: for output position
// p = r * ow + c, patch[b, p, e] with e over (i, j, ch) (channels_last) or (ch, i, j) (channels_first),
// y[b, p, f] = sum_e patch[b, p, e] K[p, e, f] (+ bias, reshaped as Keras's bias_add does).
struct LocalConv {
  std::int64_t batch, rows, cols, in, kh, kw, sh, sw, filters;
  bool channels_first;
  std::int64_t oh() const { return (rows - kh) / sh + 1; }
  std::int64_t ow() const { return (cols - kw) / sw + 1; }
  std::int64_t features() const { return kh * kw * in; }
  double x_at(const std::vector<double>& x, std::int64_t b, std::int64_t h, std::int64_t w, std::int64_t ch) const {
    const std::int64_t i = channels_first ? ((b * in + ch) * rows + h) * cols + w : ((b * rows + h) * cols + w) * in + ch;
    return x[static_cast<std::size_t>(i)];
  }
  // (batch, positions, features)
  std::vector<double> patches(const std::vector<double>& x) const {
    std::vector<double> p(static_cast<std::size_t>(batch * oh() * ow() * features()));
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t r = 0; r < oh(); ++r)
        for (std::int64_t c = 0; c < ow(); ++c)
          for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j)
              for (std::int64_t ch = 0; ch < in; ++ch) {
                const std::int64_t e = channels_first ? (ch * kh + i) * kw + j : (i * kw + j) * in + ch;
                p[static_cast<std::size_t>(((b * oh() + r) * ow() + c) * features() + e)] =
                    x_at(x, b, r * sh + i, c * sw + j, ch);
              }
    return p;
  }
  // y in the layer's data_format: (batch, oh, ow, filters) or (batch, filters, oh, ow).
  std::vector<double> forward(const std::vector<double>& x, const std::vector<double>& k,
                              const std::vector<double>& bias) const {
    const auto p = patches(x);
    const std::int64_t P = oh() * ow(), F = features();
    std::vector<double> y(static_cast<std::size_t>(batch * P * filters));
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t q = 0; q < P; ++q)
        for (std::int64_t f = 0; f < filters; ++f) {
          double s = 0;
          for (std::int64_t e = 0; e < F; ++e)
            s += p[static_cast<std::size_t>((b * P + q) * F + e)] * k[static_cast<std::size_t>((q * F + e) * filters + f)];
          const std::int64_t out = channels_first ? (b * filters + f) * P + q : (b * P + q) * filters + f;
          // The bias's flat element at the output's flat position within a sample (Keras's reshape).
          if (!bias.empty()) s += bias[static_cast<std::size_t>(channels_first ? f * P + q : q * filters + f)];
          y[static_cast<std::size_t>(out)] = s;
        }
    return y;
  }
  // d sum(y * r) / d kernel with r in channels-last order (batch, P, filters).
  std::vector<double> kernel_grad(const std::vector<double>& x, const std::vector<double>& r) const {
    const auto p = patches(x);
    const std::int64_t P = oh() * ow(), F = features();
    std::vector<double> g(static_cast<std::size_t>(P * F * filters), 0.0);
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t q = 0; q < P; ++q)
        for (std::int64_t e = 0; e < F; ++e)
          for (std::int64_t f = 0; f < filters; ++f)
            g[static_cast<std::size_t>((q * F + e) * filters + f)] +=
                p[static_cast<std::size_t>((b * P + q) * F + e)] * r[static_cast<std::size_t>((b * P + q) * filters + f)];
    return g;
  }
};

}  // namespace

TEST_CASE("LocallyConnected2D: shapes and weights in tf.keras's layout") {
  clear_session();
  layers::LocallyConnected2D lc(4, {3, 2}, {.strides = {2, 1}});
  CHECK(lc.name() == "locally_connected2d");
  CHECK(keras_shape(lc, {7, 5, 3}) == Shape{-1, 3, 4, 4});
  REQUIRE(lc.weights().size() == 2);
  CHECK(lc.weights()[0]->name() == "locally_connected2d/kernel:0");
  CHECK(lc.weights()[0]->shape() == Shape{12, 18, 4});  // (oh * ow, kh * kw * in, filters)
  CHECK(lc.weights()[1]->name() == "locally_connected2d/bias:0");
  CHECK(lc.weights()[1]->shape() == Shape{3, 4, 4});  // (oh, ow, filters)
  CHECK(keras_shape(layers::LocallyConnected2D(2, 3, {.data_format = "channels_first"}), {3, 6, 5}) ==
        Shape{-1, 2, 4, 3});
  layers::LocallyConnected1D lc1(5, 3, {.strides = 2, .use_bias = false});
  CHECK(lc1.name() == "locally_connected1d");
  CHECK(keras_shape(lc1, {10, 2}) == Shape{-1, 4, 5});
  REQUIRE(lc1.weights().size() == 1);
  CHECK(lc1.weights()[0]->shape() == Shape{4, 6, 5});  // (out_steps, k * in, filters)
  layers::LocallyConnected1D lc1b(5, 3);
  keras_shape(lc1b, {6, 2});
  CHECK(lc1b.weights()[1]->shape() == Shape{4, 5});
}

TEST_CASE("LocallyConnected2D/1D: values and weight gradients against a direct loop") {
  struct Case {
    std::int64_t rows, cols, in, kh, kw, sh, sw;
    bool channels_first, one_d;
  };
  const std::vector<Case> cases = {{5, 4, 3, 2, 2, 1, 1, false, false}, {7, 6, 2, 3, 2, 2, 3, false, false},
                                   {6, 5, 3, 2, 3, 2, 1, true, false},  {1, 9, 3, 1, 3, 1, 2, false, true},
                                   {1, 8, 2, 1, 3, 1, 1, true, true},   {4, 4, 1, 4, 4, 1, 1, false, false}};
  for (const Case& c : cases) {
    CAPTURE(c.rows);
    CAPTURE(c.cols);
    CAPTURE(c.channels_first);
    CAPTURE(c.one_d);
    const LocalConv g{2, c.rows, c.cols, c.in, c.kh, c.kw, c.sh, c.sw, 3, c.channels_first};
    const std::string df = c.channels_first ? "channels_first" : "channels_last";
    LayerPtr layer;
    Shape xshape;
    Shape yshape;
    if (c.one_d) {
      layer = layers::LocallyConnected1D(3, c.kw, {.strides = c.sw, .data_format = df}).share();
      xshape = c.channels_first ? Shape{2, c.in, c.cols} : Shape{2, c.cols, c.in};
      yshape = c.channels_first ? Shape{2, 3, g.ow()} : Shape{2, g.ow(), 3};
    } else {
      layer = layers::LocallyConnected2D(3, {c.kh, c.kw}, {.strides = {c.sh, c.sw}, .data_format = df}).share();
      xshape = c.channels_first ? Shape{2, c.in, c.rows, c.cols} : Shape{2, c.rows, c.cols, c.in};
      yshape = c.channels_first ? Shape{2, 3, g.oh(), g.ow()} : Shape{2, g.oh(), g.ow(), 3};
    }
    Ints unknown = xshape.dims();
    unknown[0] = -1;
    layer->ensure_built({Shape(unknown)});
    const std::int64_t P = g.oh() * g.ow();
    Shape bshape = c.one_d ? Shape{P, 3} : Shape{g.oh(), g.ow(), 3};
    Tensor xv = random_tensor(xshape, 31, 0.1, 1.0, false, DType::float32);
    Tensor kv = random_tensor({P, g.features(), 3}, 32, 0.1, 1.0, false, DType::float32);
    Tensor bv = random_tensor(bshape, 33, 0.1, 1.0, false, DType::float32);
    layer->set_weights({kv, bv});
    const auto xs = xv.to_vector<double>();
    Tensor y = run1(*layer, xv);
    CHECK(y.shape() == yshape);
    check_close(y, g.forward(xs, kv.to_vector<double>(), bv.to_vector<double>()), 1e-5, 1e-5);

    // Weight gradients through Layer::apply (channels moved for channels_first), against the loop.
    Graph graph;
    SymbolicTensor xp = graph.placeholder(Shape(unknown));
    CallContext ctx{.graph = graph};
    SymbolicTensor ys = layer->apply(ctx, {xp})[0];
    Tensor rv = random_tensor(yshape, 34, 0.1, 1.0, false, DType::float32);
    SymbolicTensor loss = ops::reduce_sum(ops::multiply(ys, graph.constant(rv)));
    auto grads = gradients(loss, {graph.variable(layer->weights()[0]), graph.variable(layer->weights()[1])});
    auto got = evaluate({grads[0], grads[1]}, {{xp, xv}});
    // r in channels-last (batch, P, filters) order for the loop; the bias gradient is r summed over the
    // batch, laid out as the bias is read.
    std::vector<double> r_cl(static_cast<std::size_t>(2 * P * 3)), bias_grad(static_cast<std::size_t>(P * 3), 0.0);
    const auto rs = rv.to_vector<double>();
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t q = 0; q < P; ++q)
        for (std::int64_t f = 0; f < 3; ++f) {
          const double v = rs[static_cast<std::size_t>(c.channels_first ? (b * 3 + f) * P + q : (b * P + q) * 3 + f)];
          r_cl[static_cast<std::size_t>((b * P + q) * 3 + f)] = v;
          bias_grad[static_cast<std::size_t>(c.channels_first ? f * P + q : q * 3 + f)] += v;
        }
    check_close(got[0], g.kernel_grad(xs, r_cl), 1e-5, 1e-5);
    check_close(got[1], bias_grad, 1e-5, 1e-5);
  }
}

TEST_CASE("LocallyConnected2D/1D: gradients with respect to the input") {
  layers::LocallyConnected2D lc2(2, {2, 3}, {.strides = {2, 1}, .activation = "tanh"});
  check_layer_gradients(lc2, {{2, 5, 4, 2}});
  layers::LocallyConnected2D lc2f(2, 2, {.data_format = "channels_first"});
  check_layer_gradients(lc2f, {{2, 2, 3, 3}});
  layers::LocallyConnected1D lc1(3, 2, {.strides = 2, .activation = "sigmoid"});
  check_layer_gradients(lc1, {{2, 7, 2}});
  layers::LocallyConnected2D lc2s(2, {2, 3}, {.strides = {2, 1}, .padding = "same", .activation = "tanh",
                                              .implementation = 2});
  check_layer_gradients(lc2s, {{2, 3, 4, 2}});
  layers::LocallyConnected2D lc3f(2, 2, {.padding = "same", .data_format = "channels_first", .implementation = 3});
  check_layer_gradients(lc3f, {{2, 2, 3, 3}});
  layers::LocallyConnected1D lc13(2, 3, {.strides = 2, .padding = "same", .implementation = 3});
  check_layer_gradients(lc13, {{2, 5, 2}});
}

TEST_CASE("LocallyConnected2D/1D: configs round-trip and tf.keras's configs load") {
  layers::LocallyConnected2D lc(4, {3, 2}, {.strides = {2, 1}, .activation = "relu", .use_bias = false,
                                            .kernel_regularizer = regularizers::l2(0.01),
                                            .data_format = "channels_first", .name = "lc2"});
  const json config = lc.get_config();
  CHECK(config["kernel_size"] == json::array({3, 2}));
  CHECK(config["implementation"] == 1);
  CHECK(config["padding"] == "valid");
  LayerPtr back = layers::layer_from_config(entry(lc));
  CHECK(back->class_name() == "LocallyConnected2D");
  CHECK(back->get_config() == config);
  layers::LocallyConnected1D lc1(3, 2, {.strides = 2, .kernel_constraint = constraints::max_norm(2.0), .name = "lc1"});
  CHECK(layers::layer_from_config(entry(lc1))->get_config() == lc1.get_config());
  // tf.keras 2.15's get_config of LocallyConnected1D(4, 3, strides=2, activation="relu").
  const json keras = json::parse(R"({"class_name": "LocallyConnected1D", "config": {"name": "locally_connected1d",
      "trainable": true, "dtype": "float32", "filters": 4, "kernel_size": [3], "strides": [2], "padding": "valid",
      "data_format": "channels_last", "activation": "relu", "use_bias": true,
      "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null},
      "registered_name": null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros",
      "config": {}, "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null,
      "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null, "implementation": 1}})");
  LayerPtr loaded = layers::layer_from_config(keras);
  CHECK(keras_shape(*loaded, {9, 2}) == Shape{-1, 4, 4});
  // Implementations 2 and 3 and padding "same" load, with Keras's kernel shapes.
  json other = keras;
  other["config"]["implementation"] = 2;
  other["config"]["padding"] = "same";
  LayerPtr dense = layers::layer_from_config(other);
  CHECK(keras_shape(*dense, {9, 2}) == Shape{-1, 5, 4});
  CHECK(dense->weights()[0]->shape() == Shape{9, 2, 5, 4});
  CHECK(dense->get_config() == other["config"]);
  other["config"]["implementation"] = 4;
  CHECK(contains(message_of<Error>([&] { layers::layer_from_config(other); }), "Unrecognized implementation mode: 4"));
}

TEST_CASE("LocallyConnected2D/1D: implementations 2 and 3 and padding \"same\": tf.keras's kernels") {
  clear_session();
  // tf.keras: LocallyConnected2D(4, (3, 2), strides=(2, 1), implementation=2) on (7, 5, 3): the dense
  // kernel (rows, cols, in, out_rows, out_cols, filters), (in, rows, cols, filters, out_rows, out_cols)
  // with channels_first.
  layers::LocallyConnected2D lc2(4, {3, 2}, {.strides = {2, 1}, .implementation = 2});
  CHECK(keras_shape(lc2, {7, 5, 3}) == Shape{-1, 3, 4, 4});
  CHECK(lc2.weights()[0]->shape() == Shape{7, 5, 3, 3, 4, 4});
  CHECK(lc2.weights()[1]->shape() == Shape{3, 4, 4});
  layers::LocallyConnected2D lc2f(2, 3, {.padding = "same", .data_format = "channels_first", .implementation = 2});
  CHECK(keras_shape(lc2f, {3, 4, 5}) == Shape{-1, 2, 4, 5});
  CHECK(lc2f.weights()[0]->shape() == Shape{3, 4, 5, 2, 4, 5});
  // Implementation 3: one value per connected (output, input) pair; with "same" and a 3x3 window on
  // 4x5 the windows are cut at the edges: sum over outputs of rows_inside * cols_inside = 10 * 13 = 130.
  layers::LocallyConnected2D lc3(2, 3, {.padding = "same", .implementation = 3});
  CHECK(keras_shape(lc3, {4, 5, 3}) == Shape{-1, 4, 5, 2});
  CHECK(lc3.weights()[0]->shape() == Shape{130 * 3 * 2});
  // Strided "same": ceil(in / stride); a window of 2 starts at 2 * o - 1 (Keras's k // 2 shift).
  layers::LocallyConnected1D lc1(3, 2, {.strides = 2, .padding = "same", .implementation = 3});
  CHECK(keras_shape(lc1, {5, 2}) == Shape{-1, 3, 3});
  CHECK(lc1.weights()[0]->shape() == Shape{(1 + 2 + 2) * 2 * 3});
  layers::LocallyConnected1D lc1d(3, 2, {.data_format = "channels_first", .implementation = 2});
  CHECK(keras_shape(lc1d, {2, 5}) == Shape{-1, 3, 4});
  CHECK(lc1d.weights()[0]->shape() == Shape{2, 5, 3, 4});  // (in, steps, filters, out_steps)

  // The same layer in the three layouts computes the same: implementation 1's kernel (P, k * in, filters)
  // scattered into 2's dense kernel and 3's values by the layer's own table (local_conv.h), checked
  // against the direct loop's implementation 1 above, for "valid" windows.
  for (const bool channels_first : {false, true}) {
    CAPTURE(channels_first);
    const std::string df = channels_first ? "channels_first" : "channels_last";
    const LocalConvGeometry g = local_conv_geometry(5, 4, 3, 2, 3, 2, 1, 2, "valid", channels_first);
    Tensor x = random_tensor(channels_first ? Shape{2, 3, 5, 4} : Shape{2, 5, 4, 3}, 41, 0.1, 1.0, false,
                             DType::float32);
    Tensor k1 = random_tensor(local_conv_kernel_shape(g, 1, false), 42, 0.1, 1.0, false, DType::float32);
    Tensor bias = random_tensor({g.out_rows, g.out_cols, 2}, 43, 0.1, 1.0, false, DType::float32);
    layers::LocallyConnected2D one(2, {2, 3}, {.strides = {2, 1}, .data_format = df});
    one.ensure_built({channels_first ? Shape{-1, 3, 5, 4} : Shape{-1, 5, 4, 3}});
    // Implementation 1 flattens a channels_first patch as (in, kh, kw); the table's order is (kh, kw, in).
    auto k1v = k1.to_vector<double>();
    std::vector<double> k1_cl(k1v.size());
    for (std::int64_t p = 0; p < g.out_rows * g.out_cols; ++p)
      for (std::int64_t a = 0; a < 6; ++a)
        for (std::int64_t i = 0; i < 3; ++i)
          for (std::int64_t f = 0; f < 2; ++f)
            k1_cl[static_cast<std::size_t>(((p * 18) + a * 3 + i) * 2 + f)] =
                k1v[static_cast<std::size_t>(((p * 18) + (channels_first ? i * 6 + a : a * 3 + i)) * 2 + f)];
    one.set_weights({k1, bias});
    const Tensor want = run1(one, x);
    for (const std::int64_t impl : {2, 3}) {
      CAPTURE(impl);
      const auto table = local_conv_kernel_table(g, impl);
      const Shape shape = local_conv_kernel_shape(g, impl, false);
      std::vector<float> keras(static_cast<std::size_t>(shape.num_elements()), 0.0f);
      for (std::size_t e = 0; e < table.size(); ++e) keras[static_cast<std::size_t>(table[e])] = static_cast<float>(k1_cl[e]);
      layers::LocallyConnected2D other(2, {2, 3}, {.strides = {2, 1}, .data_format = df, .implementation = impl});
      other.ensure_built({channels_first ? Shape{-1, 3, 5, 4} : Shape{-1, 5, 4, 3}});
      other.set_weights({Tensor::from_vector<float>(shape, keras), bias});
      check_close(run1(other, x), want.to_vector<double>(), 1e-6, 1e-6);
    }
  }
}

TEST_CASE("LocallyConnected2D/1D: errors") {
  // tf.keras's message.
  CHECK(contains(message_of<Error>([] { layers::LocallyConnected2D(2, 3, {.padding = "same"}); }),
                 "Invalid border mode for LocallyConnected2D (only \"valid\" is supported if implementation is 1): same"));
  CHECK(contains(message_of<Error>([] { layers::LocallyConnected1D(2, 3, {.padding = "same"}); }),
                 "Invalid border mode for LocallyConnected1D"));
  CHECK(contains(message_of<Error>([] { layers::LocallyConnected2D(2, 3, {.implementation = 0}); }),
                 "Unrecognized implementation mode: 0"));
  CHECK(contains(message_of<Error>([] { layers::LocallyConnected1D(0, 3); }), "filters must be positive"));
  CHECK(contains(message_of<Error>([] { layers::LocallyConnected2D(2, {3, 3, 3}); }), "kernel_size"));
  CHECK(contains(message_of<Error>([] { keras_shape(layers::LocallyConnected2D(2, 4), {3, 5, 1}); }),
                 "smaller than the kernel"));
  CHECK(contains(message_of<Error>([] { keras_shape(layers::LocallyConnected1D(2, 4), {3, 1}); }), "fewer steps"));
  CHECK(contains(message_of<Error>([] { keras_shape(layers::LocallyConnected1D(2, 2), {-1, 3}); }), "steps"));
  CHECK(contains(message_of<Error>([] { keras_shape(layers::LocallyConnected2D(2, 2), {4, 4}); }), "rank"));
}
