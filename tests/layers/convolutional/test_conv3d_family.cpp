// The 3-D layers: Conv3D, Conv3DTranspose, MaxPooling3D, AveragePooling3D, GlobalAveragePooling3D,
// GlobalMaxPooling3D, UpSampling3D, ZeroPadding3D and Cropping3D: shapes, weight names, values against the
// ops they compose or direct loops, gradients, configs and aliases, errors. Numbers against Keras: the
// golden case conv3d_family (tests/golden) and the Keras-written files volume_*.h5 (tests/io).
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
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::evaluate;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::random_tensor;
using tower::testing::run1;

using tower::testing::entry;
using tower::testing::check_round_trip;

namespace {

// x (n, d, h, w, c) as a vector, element (n, z, y, x, e).
double at(const std::vector<double>& v, const Shape& s, std::int64_t n, std::int64_t z, std::int64_t y, std::int64_t x,
          std::int64_t e) {
  return v[static_cast<std::size_t>((((n * s[1] + z) * s[2] + y) * s[3] + x) * s[4] + e)];
}

}  // namespace

TEST_CASE("Conv3D: weights, Keras's output shapes, values against conv3d, gradients, config") {
  clear_session();
  layers::Conv3D conv(4, {3, 2, 2}, {.strides = {2, 1, 1}, .padding = "same", .groups = 2, .activation = "relu"});
  CHECK(conv.name() == "conv3d");
  CHECK(keras_shape(conv, {5, 4, 3, 2}) == Shape{-1, 3, 4, 3, 4});
  REQUIRE(conv.weights().size() == 2);
  CHECK(conv.weights()[0]->name() == "conv3d/kernel:0");
  CHECK(conv.weights()[0]->shape() == Shape{3, 2, 2, 1, 4});
  CHECK(conv.weights()[1]->name() == "conv3d/bias:0");
  CHECK(conv.get_config()["kernel_size"] == json::array({3, 2, 2}));
  check_round_trip(conv);
  Tensor x = random_tensor({2, 5, 4, 3, 2}, 3, 0.1, 1.0, false, DType::float32);
  Tensor y = run1(conv, x);
  Graph g;
  auto xs = g.placeholder({2, 5, 4, 3, 2});
  auto ks = g.placeholder({3, 2, 2, 1, 4});
  auto expected = evaluate({ops::relu(ops::conv3d(xs, ks, {.strides = {2, 1, 1}, .padding = "same", .groups = 2}))},
                           {{xs, x}, {ks, conv.get_weights()[0]}});
  check_close(y, expected[0].to_vector<double>(), 1e-5, 1e-5);
  layers::Conv3D plain(2, 2, {.dilation_rate = {2}});
  CHECK(keras_shape(plain, {5, 4, 3, 1}) == Shape{-1, 3, 2, 1, 2});
  check_layer_gradients(plain, {{1, 4, 3, 3, 1}});
  // Keras refuses strides together with dilation, and groups that do not divide the filters.
  CHECK(contains(message_of<ValueError>([] { layers::Conv3D(2, 3, {.strides = {2}, .dilation_rate = {2}}); }),
                 "dilation_rate"));
  CHECK(contains(message_of<ValueError>([] { layers::Conv3D(3, 3, {.groups = 2}); }), "groups"));
  CHECK(contains(message_of<ShapeError>([] { layers::Conv3D(2, 3)(layers::Input({4, 4, 2})); }), "rank 5"));
}

TEST_CASE("Conv3DTranspose: Keras's output lengths, kernel (kd, kh, kw, filters, in), values, gradients") {
  clear_session();
  layers::Conv3DTranspose t(3, 3, {.strides = {2, 2, 1}, .padding = "same"});
  CHECK(t.name() == "conv3d_transpose");
  CHECK(keras_shape(t, {2, 3, 4, 2}) == Shape{-1, 4, 6, 4, 3});
  CHECK(t.weights()[0]->shape() == Shape{3, 3, 3, 3, 2});
  check_round_trip(t);
  // "valid": d·stride + max(k - stride, 0); output_padding as Keras's deconv_output_length.
  CHECK(keras_shape(layers::Conv3DTranspose(2, {3, 2, 2}, {.strides = {2}}), {2, 3, 4, 1}) == Shape{-1, 5, 6, 8, 2});
  CHECK(keras_shape(layers::Conv3DTranspose(2, 3, {.strides = {2}, .padding = "same", .output_padding = {1, 0, 1}}),
                    {2, 2, 2, 1}) == Shape{-1, 4, 3, 4, 2});
  Tensor x = random_tensor({1, 2, 3, 4, 2}, 5, 0.1, 1.0, false, DType::float32);
  Graph g;
  auto xs = g.placeholder({1, 2, 3, 4, 2});
  auto ks = g.placeholder({3, 3, 3, 3, 2});
  auto expected = evaluate({ops::conv3d_transpose(xs, ks, {.strides = {2, 2, 1}, .padding = "same"})},
                           {{xs, x}, {ks, t.get_weights()[0]}});
  check_close(run1(t, x), expected[0].to_vector<double>(), 1e-5, 1e-5);
  check_layer_gradients(t, {{1, 2, 2, 2, 2}});
  CHECK(contains(message_of<ValueError>([] { layers::Conv3DTranspose(2, 3, {.output_padding = {1, 0, 0}}); }),
                 "output_padding"));
}

TEST_CASE("MaxPooling3D and AveragePooling3D: windows, defaults, values, gradients") {
  clear_session();
  layers::MaxPooling3D max_pool;
  CHECK(max_pool.name() == "max_pooling3d");
  CHECK(max_pool.strides() == std::vector<std::int64_t>{2, 2, 2});
  CHECK(keras_shape(max_pool, {5, 4, 3, 2}) == Shape{-1, 2, 2, 1, 2});
  layers::AveragePooling3D avg({2, 2, 2}, {.strides = {1, 2, 2}, .padding = "same"});
  CHECK(keras_shape(avg, {3, 4, 3, 1}) == Shape{-1, 3, 2, 2, 1});
  check_round_trip(max_pool);
  check_round_trip(avg);
  Tensor x = random_tensor({1, 2, 2, 2, 2}, 7, 0.1, 1.0, false, DType::float32);
  const auto v = x.to_vector<double>();
  Tensor y = run1(max_pool, x);
  REQUIRE(y.shape() == Shape{1, 1, 1, 1, 2});
  layers::AveragePooling3D avg_default;
  const auto mean = run1(avg_default, x).to_vector<double>();
  for (std::int64_t e = 0; e < 2; ++e) {
    double m = -1e9, sum = 0;
    for (int i = 0; i < 8; ++i) m = std::max(m, v[static_cast<std::size_t>(i * 2 + e)]), sum += v[static_cast<std::size_t>(i * 2 + e)];
    CHECK(y.to_vector<double>()[static_cast<std::size_t>(e)] == doctest::Approx(m));
    CHECK(mean[static_cast<std::size_t>(e)] == doctest::Approx(sum / 8).epsilon(1e-6));
  }
  check_layer_gradients(avg, {{1, 3, 4, 3, 1}});
}

TEST_CASE("GlobalAveragePooling3D and GlobalMaxPooling3D: reductions over depth, height and width, keepdims") {
  clear_session();
  layers::GlobalAveragePooling3D gap;
  layers::GlobalMaxPooling3D gmp({.keepdims = true});
  CHECK(gap.name() == "global_average_pooling3d");
  CHECK(keras_shape(gap, {2, 3, 4, 5}) == Shape{-1, 5});
  CHECK(keras_shape(gmp, {2, 3, 4, 5}) == Shape{-1, 1, 1, 1, 5});
  check_round_trip(gap);
  check_round_trip(gmp);
  Tensor x = random_tensor({2, 2, 3, 2, 3}, 9, 0.1, 1.0, false, DType::float32);
  Graph g;
  auto xs = g.placeholder({2, 2, 3, 2, 3});
  auto r = evaluate({ops::reduce_mean(xs, {1, 2, 3}), ops::reduce_max(xs, {1, 2, 3}, true)}, {{xs, x}});
  check_close(run1(gap, x), r[0].to_vector<double>(), 1e-6, 1e-6);
  check_close(run1(gmp, x), r[1].to_vector<double>(), 1e-6, 1e-6);
}

TEST_CASE("UpSampling3D, ZeroPadding3D and Cropping3D: Keras's forms, values, gradients") {
  clear_session();
  layers::UpSampling3D up({2, 1, 3});
  CHECK(up.name() == "up_sampling3d");
  CHECK(keras_shape(up, {2, 3, 2, 2}) == Shape{-1, 4, 3, 6, 2});
  Tensor x = random_tensor({2, 2, 3, 2, 2}, 11, 0.1, 1.0, false, DType::float32);
  const auto v = x.to_vector<double>();
  const Shape xs = x.shape();
  Tensor y = run1(up, x);
  REQUIRE(y.shape() == Shape{2, 4, 3, 6, 2});
  const auto yv = y.to_vector<double>();
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t z = 0; z < 4; ++z)
      for (std::int64_t r = 0; r < 3; ++r)
        for (std::int64_t c = 0; c < 6; ++c)
          for (std::int64_t e = 0; e < 2; ++e)
            CHECK(at(yv, y.shape(), n, z, r, c, e) == at(v, xs, n, z / 2, r, c / 3, e));
  check_weightless_gradients(up, {{1, 2, 2, 2, 1}});

  layers::ZeroPadding3D pad;  // Keras's default: 1 on every side
  CHECK(pad.padding() == std::vector<std::int64_t>{1, 1, 1, 1, 1, 1});
  layers::ZeroPadding3D pad2(std::vector<std::vector<std::int64_t>>{{1, 0}, {0, 2}, {2, 1}});
  CHECK(keras_shape(pad2, {2, 3, 2, 1}) == Shape{-1, 3, 5, 5, 1});
  CHECK(keras_shape(layers::ZeroPadding3D(std::vector<std::int64_t>{1, 2, 0}), {2, 3, 2, 1}) == Shape{-1, 4, 7, 2, 1});
  check_round_trip(pad2);
  layers::Cropping3D crop(std::vector<std::vector<std::int64_t>>{{1, 0}, {0, 2}, {2, 1}});
  CHECK(layers::Cropping3D().cropping() == std::vector<std::int64_t>{1, 1, 1, 1, 1, 1});
  CHECK(keras_shape(crop, {3, 5, 5, 1}) == Shape{-1, 2, 3, 2, 1});
  check_round_trip(crop);
  // Cropping what ZeroPadding3D added gives x back.
  Tensor back = run1(crop, run1(pad2, x));
  check_close(back, v, 0, 0);
  check_weightless_gradients(crop, {{1, 3, 4, 4, 1}});
  CHECK(contains(message_of<ShapeError>([&] { crop(layers::Input({1, 5, 5, 1})); }), "depth"));
  CHECK(contains(message_of<ValueError>([] { layers::ZeroPadding3D(std::vector<std::vector<std::int64_t>>{{1, 1}}); }),
                 "front, back"));
}

TEST_CASE("3-D layers: Keras's aliases and configs written by Keras 3") {
  for (auto [alias, name] : {std::pair{"Convolution3D", "Conv3D"}, {"MaxPool3D", "MaxPooling3D"},
                             {"AvgPool3D", "AveragePooling3D"}, {"GlobalAvgPool3D", "GlobalAveragePooling3D"},
                             {"GlobalMaxPool3D", "GlobalMaxPooling3D"}, {"Convolution3DTranspose", "Conv3DTranspose"}}) {
    json config = {{"name", "x"}};
    if (std::string(name).starts_with("Conv")) config["filters"] = 2, config["kernel_size"] = json::array({2, 2, 2});
    CHECK(layers::layer_from_config({{"class_name", alias}, {"config", config}})->class_name() == name);
  }
  // keras.layers.ZeroPadding3D(padding=2).get_config() and Cropping3D(cropping=(1, 2, 0)) in Keras 3.
  auto pad = layers::layer_from_config(json::parse(
      R"({"class_name": "ZeroPadding3D", "config": {"name": "zp", "trainable": true, "dtype": "float32",
          "padding": [[2, 2], [2, 2], [2, 2]], "data_format": "channels_last"}})"));
  CHECK(dynamic_cast<layers::ZeroPadding3D&>(*pad).padding() == std::vector<std::int64_t>{2, 2, 2, 2, 2, 2});
  auto crop = layers::layer_from_config(json::parse(
      R"({"class_name": "Cropping3D", "config": {"name": "cr", "cropping": [1, 2, 0], "data_format": "channels_last"}})"));
  CHECK(dynamic_cast<layers::Cropping3D&>(*crop).cropping() == std::vector<std::int64_t>{1, 1, 2, 2, 0, 0});
}
