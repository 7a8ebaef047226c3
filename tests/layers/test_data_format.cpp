// data_format="channels_first" (Layer::apply moves the channels last and back) and BatchNormalization
// on another axis than the last: each against the channels_last layer with the same weights on the
// transposed input. Numbers against Keras: the golden case channels_first (tests/golden).
#include <doctest/doctest.h>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::random_tensor;
using tower::testing::run1;

namespace {

Tensor transposed(const Tensor& x, const std::vector<std::int64_t>& perm) {
  Graph graph;
  return testing::evaluate({ops::transpose(graph.constant(x), perm)}).at(0);
}
// (batch, c, d1, ..., dn) -> (batch, d1, ..., dn, c) and back.
Tensor to_last(const Tensor& x) {
  std::vector<std::int64_t> perm{0};
  for (int a = 2; a < x.shape().rank(); ++a) perm.push_back(a);
  perm.push_back(1);
  return transposed(x, perm);
}
Tensor to_first(const Tensor& x) {
  std::vector<std::int64_t> perm{0, x.shape().rank() - 1};
  for (int a = 1; a < x.shape().rank() - 1; ++a) perm.push_back(a);
  return transposed(x, perm);
}

// `first` (channels_first) on x equals `last` (channels_last, given first's weights) on x moved to
// channels-last, moved back when the output keeps its spatial axes.
void check_same(Layer& first, Layer& last, const Tensor& x, bool training = false) {
  CHECK(first.data_format() == "channels_first");
  CHECK(last.data_format() == "channels_last");
  const Tensor y_first = run1(first, x, training);
  last.ensure_built({testing::with_unknown_batch(to_last(x).shape())});
  if (!first.weights().empty()) last.set_weights(first.get_weights());
  Tensor y_last = run1(last, to_last(x), training);
  if (y_last.shape().rank() >= 3) y_last = to_first(y_last);
  REQUIRE(y_first.shape() == y_last.shape());
  check_close(y_first, y_last.to_vector<double>(), 1e-5, 1e-6);
}

}  // namespace

TEST_CASE("data_format channels_first: each layer as its channels_last twin on the transposed input") {
  clear_session();
  const std::string cf = "channels_first";
  const Tensor images = random_tensor({2, 3, 7, 6}, 11, 0.1, 1.0, false, DType::float32);  // (batch, c, h, w)
  const Tensor steps = random_tensor({2, 4, 9}, 12, 0.1, 1.0, false, DType::float32);      // (batch, c, steps)
  SUBCASE("Conv2D, DepthwiseConv2D, SeparableConv2D, Conv2DTranspose") {
    layers::Conv2D a(4, 3, {.strides = {2}, .padding = "same", .data_format = cf}),
        b(4, 3, {.strides = {2}, .padding = "same"});
    check_same(a, b, images);
    layers::DepthwiseConv2D c(2, {.depth_multiplier = 2, .data_format = cf}), d(2, {.depth_multiplier = 2});
    check_same(c, d, images);
    layers::SeparableConv2D e(5, 2, {.data_format = cf}), f(5, 2);
    check_same(e, f, images);
    layers::Conv2DTranspose g(2, 3, {.strides = {2}, .data_format = cf}), h(2, 3, {.strides = {2}});
    check_same(g, h, images);
    CHECK(keras_shape(a, {3, 7, 6}) == Shape{-1, 4, 4, 3});
  }
  SUBCASE("pooling, global pooling, padding, cropping, upsampling, Flatten") {
    layers::MaxPooling2D a(2, {.data_format = cf}), b(2);
    check_same(a, b, images);
    layers::AveragePooling2D c(std::vector<std::int64_t>{2, 3}, {.padding = "same", .data_format = cf}),
        d(std::vector<std::int64_t>{2, 3}, {.padding = "same"});
    check_same(c, d, images);
    layers::GlobalAveragePooling2D e({.keepdims = true, .data_format = cf}), f({.keepdims = true});
    check_same(e, f, images);
    layers::GlobalMaxPooling2D g({.data_format = cf}), h;
    check_same(g, h, images);
    layers::ZeroPadding2D i(std::vector<std::int64_t>{1, 2}, {.data_format = cf}), j(std::vector<std::int64_t>{1, 2});
    check_same(i, j, images);
    layers::Cropping2D k(std::vector<std::int64_t>{2, 1}, {.data_format = cf}), l(std::vector<std::int64_t>{2, 1});
    check_same(k, l, images);
    layers::UpSampling2D m(2, {.interpolation = "bilinear", .data_format = cf}), n(2, {.interpolation = "bilinear"});
    check_same(m, n, images);
    // Keras's Flatten(data_format="channels_first") flattens in channels-last order (weights of a
    // following Dense keep their meaning when a model switches formats).
    layers::Flatten o({.data_format = cf}), p;
    check_same(o, p, images);
    CHECK(keras_shape(e, {3, 7, 6}) == Shape{-1, 3, 1, 1});
    CHECK(keras_shape(i, {3, 7, 6}) == Shape{-1, 3, 9, 10});
  }
  SUBCASE("the 1-D layers: Conv1D, pooling, global pooling") {
    layers::Conv1D a(3, 2, {.padding = "causal", .data_format = cf}), b(3, 2, {.padding = "causal"});
    check_same(a, b, steps);
    layers::MaxPooling1D c(2, {.padding = "same", .data_format = cf}), d(2, {.padding = "same"});
    check_same(c, d, steps);
    layers::GlobalAveragePooling1D e({.data_format = cf}), f;
    check_same(e, f, steps);
    CHECK(keras_shape(a, {4, 9}) == Shape{-1, 3, 9});
  }
  SUBCASE("the 3-D layers") {
    const Tensor volumes = random_tensor({2, 3, 4, 5, 4}, 13, 0.1, 1.0, false, DType::float32);  // (batch, c, d, h, w)
    layers::Conv3D a(2, 2, {.strides = {2}, .padding = "same", .data_format = cf}),
        b(2, 2, {.strides = {2}, .padding = "same"});
    check_same(a, b, volumes);
    layers::Conv3DTranspose c(2, 2, {.strides = {2}, .data_format = cf}), d(2, 2, {.strides = {2}});
    check_same(c, d, volumes);
    layers::MaxPooling3D e(2, {.data_format = cf}), f(2);
    check_same(e, f, volumes);
    layers::GlobalAveragePooling3D g({.data_format = cf}), h;
    check_same(g, h, volumes);
    layers::UpSampling3D i(std::vector<std::int64_t>{1, 2, 1}, {.data_format = cf}),
        j(std::vector<std::int64_t>{1, 2, 1});
    check_same(i, j, volumes);
    layers::ZeroPadding3D k(1, {.data_format = cf}), l(1);
    check_same(k, l, volumes);
    layers::Cropping3D m(std::vector<std::int64_t>{1, 1, 1}, {.data_format = cf}), n(std::vector<std::int64_t>{1, 1, 1});
    check_same(m, n, volumes);
    CHECK(keras_shape(a, {3, 4, 5, 4}) == Shape{-1, 2, 2, 3, 2});
  }
  SUBCASE("SpatialDropout2D drops whole channels (axis 1) in training") {
    layers::SpatialDropout2D drop(0.5, {.seed = 3, .data_format = cf});
    const auto y = run1(drop, images, true).to_vector<float>(), x = images.to_vector<float>();
    for (std::size_t map = 0; map < 6; ++map) {  // (batch, channel) pairs: each 7 x 6 map all kept or all dropped
      const bool kept = y[map * 42] != 0.0f;
      for (std::size_t i = map * 42; i < (map + 1) * 42; ++i) CHECK((y[i] != 0.0f) == kept);
    }
  }
  SUBCASE("configs carry data_format; other values and layers without it are refused") {
    layers::Conv2D a(4, 3, {.data_format = cf});
    CHECK(a.get_config()["data_format"] == cf);
    CHECK(layers::layer_from_config({{"class_name", "Conv2D"}, {"config", a.get_config()}})->data_format() == cf);
    CHECK(contains(message_of<Error>([&] { layers::Conv2D(4, 3, {.data_format = "NCHW"}); }), "data_format must be"));
    nlohmann::json dense = layers::Dense(2).get_config();
    dense["data_format"] = cf;
    CHECK(contains(message_of<Error>([&] { layers::layer_from_config({{"class_name", "Dense"}, {"config", dense}}); }),
                   "not supported by this layer"));
  }
}

TEST_CASE("BatchNormalization on axis 1 (channels_first images) as on the last axis of the transposed input") {
  clear_session();
  const Tensor x = random_tensor({3, 2, 4, 5}, 21, 0.1, 2.0, false, DType::float32);
  for (bool training : {true, false}) {
    layers::BatchNormalization first({.axis = 1, .momentum = 0.5}), last({.momentum = 0.5});
    first.ensure_built({Shape{-1, 2, 4, 5}});
    last.ensure_built({Shape{-1, 4, 5, 2}});
    const std::vector<Tensor> weights{testing::floats({2}, {1.5f, 0.5f}), testing::floats({2}, {0.1f, -0.2f}),
                                      testing::floats({2}, {0.3f, -0.4f}), testing::floats({2}, {2.0f, 0.5f})};
    first.set_weights(weights);
    last.set_weights(weights);
    check_close(run1(first, x, training), to_first(run1(last, to_last(x), training)).to_vector<double>(), 1e-5, 1e-6);
    // The moving statistics moved the same way.
    check_close(first.get_weights()[2], last.get_weights()[2].to_vector<double>(), 1e-6, 1e-7);
    check_close(first.get_weights()[3], last.get_weights()[3].to_vector<double>(), 1e-6, 1e-7);
  }
  layers::BatchNormalization bn({.axis = 1});
  bn.ensure_built({Shape{-1, 2, 4, 5}});
  CHECK(bn.get_config()["axis"] == nlohmann::json::array({1}));
  CHECK(bn.weights()[0]->shape() == Shape{2});
  layers::BatchNormalization batch_axis({.axis = 0});
  CHECK(contains(message_of<Error>([&] { batch_axis.ensure_built({Shape{-1, 2, 4, 5}}); }), "batch axis"));
}
