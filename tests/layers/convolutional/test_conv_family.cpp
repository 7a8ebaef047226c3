// Conv2D's groups, DepthwiseConv2D, SeparableConv2D, Conv2DTranspose, UpSampling2D and Cropping2D:
// shapes, weight names, values against the ops they compose, gradients, configs in Keras's spellings and
// errors. Numbers against Keras: the golden case conv_family (tests/golden).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

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

using tower::testing::entry;
using tower::testing::check_round_trip;

TEST_CASE("Conv2D groups: the kernel splits per group, and the values are per-group convolutions") {
  clear_session();
  layers::Conv2D conv(6, 3, {.padding = "same", .groups = 2, .use_bias = false});
  CHECK(keras_shape(conv, {5, 5, 4}) == Shape{-1, 5, 5, 6});
  CHECK(conv.weights()[0]->shape() == Shape{3, 3, 2, 6});
  CHECK(conv.get_config()["groups"] == 2);
  check_round_trip(conv);
  // Group g of the output is conv2d of the group's channels with the group's filters.
  Tensor x = random_tensor({2, 5, 5, 4}, 3, 0.1, 1.0, false, DType::float32);
  Tensor k = conv.get_weights()[0];
  Tensor y = run1(conv, x);
  Graph g;
  auto xs = g.placeholder({2, 5, 5, 4});
  auto ks = g.placeholder({3, 3, 2, 6});
  std::vector<SymbolicTensor> parts;
  for (std::int64_t group = 0; group < 2; ++group)
    parts.push_back(ops::conv2d(ops::slice(xs, {0, 0, 0, 2 * group}, {-1, -1, -1, 2}),
                                ops::slice(ks, {0, 0, 0, 3 * group}, {-1, -1, -1, 3}), {.padding = "same"}));
  auto expected = evaluate({ops::concat(parts, 3)}, {{xs, x}, {ks, k}});
  check_close(y, expected[0].to_vector<double>(), 1e-5, 1e-5);
  check_layer_gradients(conv, {{2, 4, 4, 4}});

  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(5, 3, {.groups = 2}); }), "divisor of filters"));
  CHECK(contains(message_of<ShapeError>([] { keras_shape(layers::Conv2D(4, 3, {.groups = 2}), {5, 5, 3}); }),
                 "3 channels do not split into 2 groups"));
  CHECK(keras_shape(layers::Conv1D(4, 3, {.groups = 2}), {7, 6}) == Shape{-1, 5, 4});
}

TEST_CASE("DepthwiseConv2D and SeparableConv2D: weights, values from the ops, configs") {
  clear_session();
  layers::DepthwiseConv2D dw(3, {.strides = {2}, .padding = "same", .depth_multiplier = 2});
  CHECK(keras_shape(dw, {6, 5, 3}) == Shape{-1, 3, 3, 6});
  REQUIRE(dw.weights().size() == 2);
  CHECK(dw.weights()[0]->name() == "depthwise_conv2d/depthwise_kernel:0");
  CHECK(dw.weights()[0]->shape() == Shape{3, 3, 3, 2});
  CHECK(dw.weights()[1]->shape() == Shape{6});
  check_round_trip(dw);
  // Output channel c·m + j is channel c with kernel[:, :, c, j]: one channel's column by hand.
  Tensor x = random_tensor({1, 6, 5, 3}, 4, 0.1, 1.0, false, DType::float32);
  Tensor y = run1(dw, x);
  const Tensor k = dw.get_weights()[0];
  Graph g;
  auto xs = g.placeholder({1, 6, 5, 3});
  auto ks = g.placeholder({3, 3, 3, 2});
  auto one = ops::conv2d(ops::slice(xs, {0, 0, 0, 1}, {-1, -1, -1, 1}), ops::slice(ks, {0, 0, 1, 1}, {-1, -1, 1, 1}),
                         {.strides = {2, 2}, .padding = "same"});  // channel 1, multiplier index 1: output 3
  auto got = evaluate({ops::slice(g.constant(y), {0, 0, 0, 3}, {-1, -1, -1, 1}), one}, {{xs, x}, {ks, k}});
  check_close(got[0], got[1].to_vector<double>(), 1e-5, 1e-5);
  check_layer_gradients(dw, {{2, 5, 4, 3}});

  layers::SeparableConv2D sep(4, {2, 3}, {.padding = "same", .depth_multiplier = 2, .activation = "tanh"});
  CHECK(keras_shape(sep, {5, 5, 3}) == Shape{-1, 5, 5, 4});
  REQUIRE(sep.weights().size() == 3);
  CHECK(sep.weights()[0]->name() == "separable_conv2d/depthwise_kernel:0");
  CHECK(sep.weights()[0]->shape() == Shape{2, 3, 3, 2});
  CHECK(sep.weights()[1]->name() == "separable_conv2d/pointwise_kernel:0");
  CHECK(sep.weights()[1]->shape() == Shape{1, 1, 6, 4});
  CHECK(sep.weights()[2]->shape() == Shape{4});
  CHECK(sep.count_params() == 2 * 3 * 3 * 2 + 6 * 4 + 4);
  check_round_trip(sep);
  check_layer_gradients(sep, {{2, 4, 4, 3}});

  // tf.keras 2's configs load (Keras 3 writes the same fields).
  LayerPtr tf2 = layers::layer_from_config(json::parse(R"({"class_name": "DepthwiseConv2D", "config": {
      "name": "dw_7", "trainable": true, "dtype": "float32", "kernel_size": [3, 3], "strides": [1, 1],
      "padding": "valid", "depth_multiplier": 1, "data_format": "channels_last", "dilation_rate": [1, 1],
      "activation": "relu", "use_bias": true, "depthwise_initializer": {"class_name": "GlorotUniform",
      "config": {"seed": null}}, "bias_initializer": {"class_name": "Zeros", "config": {}},
      "depthwise_regularizer": null, "bias_regularizer": null, "activity_regularizer": null,
      "depthwise_constraint": {"class_name": "MaxNorm", "config": {"max_value": 2, "axis": 0}},
      "bias_constraint": null}})"));
  CHECK(keras_shape(*tf2, {5, 5, 2}) == Shape{-1, 3, 3, 2});
  CHECK(tf2->get_config()["depthwise_constraint"]["class_name"] == "MaxNorm");
  CHECK(contains(message_of<ValueError>([] { layers::DepthwiseConv2D(3, {.depth_multiplier = 0}); }),
                 "depth_multiplier must be positive"));
  CHECK(contains(message_of<ValueError>([] { layers::SeparableConv2D(4, 3, {.strides = {2}, .dilation_rate = {2}}); }),
                 "dilation_rate"));
}

TEST_CASE("Conv2DTranspose: Keras's output sizes, kernel layout, configs, errors") {
  clear_session();
  layers::Conv2DTranspose up(4, 3, {.strides = {2}, .padding = "same"});
  CHECK(keras_shape(up, {5, 4, 3}) == Shape{-1, 10, 8, 4});
  CHECK(up.weights()[0]->shape() == Shape{3, 3, 4, 3});  // (kh, kw, filters, in)
  CHECK(up.get_config()["output_padding"].is_null());
  check_round_trip(up);
  CHECK(keras_shape(layers::Conv2DTranspose(2, 3, {.strides = {2}}), {5, 4, 3}) == Shape{-1, 11, 9, 2});
  CHECK(keras_shape(layers::Conv2DTranspose(2, {2, 3}, {.strides = {2, 1}}), {3, 3, 1}) == Shape{-1, 6, 5, 2});
  layers::Conv2DTranspose padded(2, 3, {.strides = {2}, .padding = "same", .output_padding = {1, 0}});
  CHECK(keras_shape(padded, {4, 4, 1}) == Shape{-1, 8, 7, 2});
  CHECK(padded.get_config()["output_padding"] == json::array({1, 0}));
  check_round_trip(padded);
  check_layer_gradients(padded, {{2, 3, 3, 1}});
  // Its values are the data gradient of a Conv2D with the same kernel.
  Tensor x = random_tensor({1, 3, 3, 1}, 8, 0.1, 1.0, false, DType::float32);
  Tensor y = run1(padded, x);
  Graph g;
  auto xs = g.placeholder({1, 3, 3, 1});
  auto ks = g.placeholder({3, 3, 2, 1});
  auto like = g.constant(Tensor::zeros({1, 6, 5, 2}, DType::float32));
  auto expected = evaluate({ops::conv2d_backward_data(xs, ks, like, {.strides = {2, 2}, .padding = "same"})},
                           {{xs, x}, {ks, padded.get_weights()[0]}});
  check_close(y, expected[0].to_vector<double>(), 1e-5, 1e-5);
  CHECK(contains(message_of<ValueError>([] { layers::Conv2DTranspose(2, 3, {.output_padding = {1}}); }),
                 "smaller than the strides"));
}

TEST_CASE("UpSampling2D and Cropping2D: values, forms, configs") {
  clear_session();
  Tensor x = floats({1, 2, 2, 1}, {1, 2, 3, 4});
  layers::UpSampling2D nearest(std::vector<std::int64_t>{2, 1});
  check_close(run1(nearest, x), {1, 2, 1, 2, 3, 4, 3, 4}, 0, 0);
  // tf.image.resize's bilinear (half-pixel centers) doubling [[1, 2], [3, 4]].
  layers::UpSampling2D bilinear(2, {.interpolation = "bilinear"});
  check_close(run1(bilinear, x),
              {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}, 1e-6, 1e-6);
  CHECK(bilinear.get_config()["interpolation"] == "bilinear");
  CHECK(bilinear.get_config()["size"] == json::array({2, 2}));
  check_round_trip(bilinear);
  check_layer_gradients(bilinear, {{2, 3, 2, 2}});
  CHECK(contains(message_of<ValueError>([] { layers::UpSampling2D(2, {.interpolation = "bicubic"}); }),
                 "\"nearest\" or \"bilinear\""));

  layers::Cropping2D crop(std::vector<std::vector<std::int64_t>>{{1, 0}, {0, 2}});
  Tensor img = random_tensor({1, 3, 4, 1}, 9, 0.1, 1.0, false, DType::float32);
  auto v = img.to_vector<double>();
  check_close(run1(crop, img), {v[4], v[5], v[8], v[9]}, 0, 0);  // rows 1..2, columns 0..1
  CHECK(crop.get_config()["cropping"] == json::parse("[[1, 0], [0, 2]]"));
  check_round_trip(crop);
  CHECK(keras_shape(layers::Cropping2D(1), {5, 6, 2}) == Shape{-1, 3, 4, 2});
  CHECK(keras_shape(layers::Cropping2D(std::vector<std::int64_t>{1, 2}), {5, 6, 2}) == Shape{-1, 3, 2, 2});
  CHECK(keras_shape(*layers::layer_from_config(json::parse(
                        R"({"class_name": "Cropping2D", "config": {"cropping": [[0, 1], [2, 0]]}})")),
                    {4, 4, 1}) == Shape{-1, 3, 2, 1});
  CHECK(contains(message_of<ShapeError>([] { keras_shape(layers::Cropping2D(2), {4, 6, 1}); }),
                 "must be smaller than the input height"));
}
