// Preprocessing layers inside models: Rescaling, Normalization (adapt), Resizing and CenterCrop: values,
// adapt against a direct computation, configs and errors. Numbers against Keras: golden case preprocessing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::random_tensor;
using tower::testing::run1;

using tower::testing::entry;
using tower::testing::check_round_trip;

TEST_CASE("Rescaling: x · scale + offset, integers cast to float32") {
  clear_session();
  layers::Rescaling rescale(1.0 / 255, {.offset = -1.0});
  check_close(run1(rescale, floats({1, 3}, {0, 127.5, 255})), {-1.0, -0.5, 0.0}, 1e-6, 1e-6);
  CHECK(rescale.get_config()["offset"] == -1.0);
  check_round_trip(rescale);
  CHECK(contains(message_of<ValueError>([] {
                   layers::layer_from_config(json::parse(R"({"class_name": "Rescaling", "config": {"scale": [1, 2]}})"));
                 }),
                 "one number"));
}

TEST_CASE("Normalization: adapt() computes Keras's mean and population variance per kept axis") {
  clear_session();
  Tensor data = random_tensor({6, 3, 2}, 5, 0.1, 3.0, false, DType::float32);
  const auto v = data.to_vector<double>();
  for (const auto& axis : {std::vector<std::int64_t>{-1}, std::vector<std::int64_t>{1, 2}, std::vector<std::int64_t>{}}) {
    CAPTURE(axis.size());
    layers::Normalization norm({.axis = axis});
    norm.adapt(data);
    // The direct computation: element e of feature f(e), the kept coordinates.
    auto feature = [&](std::size_t e) -> std::size_t {
      if (axis.empty()) return 0;
      return axis.size() == 1 ? e % 2 : e % 6;
    };
    const std::size_t features = axis.empty() ? 1 : (axis.size() == 1 ? 2 : 6);
    std::vector<double> mean(features, 0.0), var(features, 0.0), count(features, 0.0);
    for (std::size_t e = 0; e < v.size(); ++e) mean[feature(e)] += v[e], count[feature(e)] += 1;
    for (std::size_t f = 0; f < features; ++f) mean[f] /= count[f];
    for (std::size_t e = 0; e < v.size(); ++e) var[feature(e)] += std::pow(v[e] - mean[feature(e)], 2) / count[feature(e)];
    const auto weights = norm.get_weights();  // mean, variance, count
    REQUIRE(weights.size() == 3);
    check_close(weights[0], mean, 1e-6, 1e-6);
    check_close(weights[1], var, 1e-6, 1e-6);
    CHECK(norm.trainable_weights().empty());
    // The output: (x - mean) / sqrt(variance).
    std::vector<double> expected;
    for (std::size_t e = 0; e < v.size(); ++e) expected.push_back((v[e] - mean[feature(e)]) / std::sqrt(var[feature(e)]));
    check_close(run1(norm, data), expected, 1e-5, 1e-5);
    // Batch by batch, Keras's running update gives the same.
    std::vector<Tensor> parts;
    for (std::int64_t start : {0, 2, 5}) {
      const std::int64_t rows = start == 0 ? 2 : (start == 2 ? 3 : 1);
      std::vector<float> part(v.begin() + start * 6, v.begin() + (start + rows) * 6);
      parts.push_back(Tensor::from_vector<float>({rows, 3, 2}, part));
    }
    layers::Normalization running({.axis = axis});
    running.adapt(parts);
    check_close(running.get_weights()[0], mean, 1e-6, 1e-6);
    check_close(running.get_weights()[1], var, 1e-6, 1e-6);
  }
}

TEST_CASE("Normalization: given mean and variance, invert, configs, errors") {
  clear_session();
  layers::Normalization given({.mean = std::vector<double>{1.0, -2.0}, .variance = std::vector<double>{4.0, 1.0}});
  check_close(run1(given, floats({2, 2}, {3, -2, 1, 0})), {1, 0, 0, 2}, 1e-6, 1e-6);
  CHECK(given.weights().empty());
  CHECK(given.get_config()["mean"] == json::array({1.0, -2.0}));
  check_round_trip(given);
  layers::Normalization inverse({.mean = std::vector<double>{1.0}, .variance = std::vector<double>{4.0}, .invert = true});
  check_close(run1(inverse, floats({1, 2}, {1, -0.5})), {3, 0}, 1e-6, 1e-6);
  check_round_trip(inverse);
  CHECK(contains(message_of<ValueError>([&] { given.adapt(floats({1, 2}, {1, 2})); }), "was given them"));
  CHECK(contains(message_of<ValueError>([] { layers::Normalization({.mean = std::vector<double>{1.0}}); }),
                 "both mean and variance"));
  layers::Normalization adapted;
  adapted.adapt(floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  CHECK(contains(message_of<ShapeError>([&] { adapted.adapt(floats({2, 2}, {1, 2, 3, 4})); }), "built for"));
  CHECK(contains(message_of<ValueError>([] { keras_shape(layers::Normalization({.axis = {3}}), {4}); }),
                 "out of range"));
}

TEST_CASE("Resizing and CenterCrop: shapes, crops, configs, errors") {
  clear_session();
  CHECK(keras_shape(layers::Resizing(5, 7), {9, 12, 3}) == Shape{-1, 5, 7, 3});
  layers::Resizing crop(6, 6, {.crop_to_aspect_ratio = true});
  CHECK(keras_shape(crop, {9, 12, 2}) == Shape{-1, 6, 6, 2});
  check_round_trip(crop);
  // Same size after the crop: the centred columns 1..9 of 12, unchanged.
  layers::Resizing square(3, 3, {.crop_to_aspect_ratio = true});
  Tensor x = random_tensor({1, 3, 5, 1}, 7, 0.1, 1.0, false, DType::float32);
  const auto v = x.to_vector<double>();
  check_close(run1(square, x), {v[1], v[2], v[3], v[6], v[7], v[8], v[11], v[12], v[13]}, 0, 0);
  CHECK(contains(message_of<ValueError>([] { layers::Resizing(4, 4, {.interpolation = "lanczos3"}); }), "lanczos3"));
  // pad_to_aspect_ratio: Keras 3 pads (int(3 * 4 / 3) - 2) / 2 = 1 column of fill_value on each side, which
  // is already the target size (no resampling).
  layers::Resizing pad(3, 4, {.pad_to_aspect_ratio = true, .fill_value = 0.5});
  Tensor x32 = random_tensor({1, 3, 2, 1}, 8, 0.1, 1.0, false, DType::float32);
  const auto p = x32.to_vector<double>();
  check_close(run1(pad, x32), {0.5, p[0], p[1], 0.5, 0.5, p[2], p[3], 0.5, 0.5, p[4], p[5], 0.5}, 0, 0);
  check_round_trip(pad);
  LayerPtr padded = layers::layer_from_config(json::parse(
      R"({"class_name": "Resizing", "config": {"height": 4, "width": 4, "pad_to_aspect_ratio": true, "fill_value": 2.0}})"));
  CHECK(dynamic_cast<layers::Resizing&>(*padded).options().pad_to_aspect_ratio);
  CHECK(dynamic_cast<layers::Resizing&>(*padded).options().fill_value == 2.0);
  CHECK(keras_shape(*padded, {9, 12, 3}) == Shape{-1, 4, 4, 3});
  layers::Resizing pad_resize(4, 8, {.pad_to_aspect_ratio = true, .fill_value = 0.5});  // (3, 2+4) -> (4, 8)
  check_weightless_gradients(pad_resize, {{2, 3, 2, 2}});
  // Keras's messages.
  CHECK(contains(message_of<ValueError>([] {
                   layers::Resizing(4, 4, {.crop_to_aspect_ratio = true, .pad_to_aspect_ratio = true});
                 }),
                 "Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`."));
  CHECK(contains(message_of<ValueError>([] { layers::Resizing(4, 4, {.fill_mode = "reflect"}); }),
                 "Only `'constant'` is supported"));
  layers::CenterCrop center(2, 3);
  check_close(run1(center, x), {v[1], v[2], v[3], v[6], v[7], v[8]}, 0, 0);  // rows 0..1 of 3, columns 1..3 of 5
  check_round_trip(center);
  CHECK(keras_shape(layers::CenterCrop(8, 8), {3, 4, 2}) == Shape{-1, 8, 8, 2});
  CHECK(contains(message_of<ShapeError>([] { keras_shape(layers::CenterCrop(2, 2), {-1, 4, 1}); }), "known height"));
}

TEST_CASE("RandomFlip: identity in inference; in training each image flipped or not, about half of them") {
  clear_session();
  Tensor x = random_tensor({400, 2, 3, 1}, 11, 0.1, 1.0, false, DType::float32);
  const auto v = x.to_vector<double>();
  for (const std::string mode : {"horizontal", "vertical", "horizontal_and_vertical"}) {
    CAPTURE(mode);
    layers::RandomFlip flip(mode, {.seed = 5});
    check_close(run1(flip, x), v, 0, 0);
    const auto y = run1(flip, x, /*training=*/true).to_vector<double>();
    int flipped = 0;
    for (std::size_t n = 0; n < 400; ++n) {
      bool same = true, mirrored = true;
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j) {
          const std::size_t si = mode == "horizontal" ? i : 1 - i, sj = mode == "vertical" ? j : 2 - j;
          same = same && y[n * 6 + i * 3 + j] == v[n * 6 + i * 3 + j];
          mirrored = mirrored && y[n * 6 + i * 3 + j] == v[n * 6 + si * 3 + sj];
        }
      CHECK((same || mirrored));
      flipped += mirrored && !same;
    }
    CHECK(flipped > 160);  // 200 expected; 4 standard deviations is 40
    CHECK(flipped < 240);
    check_round_trip(flip);
  }
  CHECK(contains(message_of<ValueError>([] { layers::RandomFlip("diagonal"); }), "horizontal_and_vertical"));
}

TEST_CASE("RandomContrast: identity in inference; in training (x - mean) · f + mean per image, clipped") {
  clear_session();
  Tensor x = random_tensor({50, 3, 3, 2}, 12, 10.0, 200.0, true, DType::float32);
  const auto v = x.to_vector<double>();
  layers::RandomContrast contrast(std::vector<double>{0.2, 0.5}, {.seed = 3});
  check_close(run1(contrast, x), v, 0, 0);
  const auto y = run1(contrast, x, /*training=*/true).to_vector<double>();
  for (std::size_t n = 0; n < 50; ++n) {
    double mean[2] = {0, 0};
    for (std::size_t p = 0; p < 9; ++p)
      for (std::size_t c = 0; c < 2; ++c) mean[c] += v[n * 18 + p * 2 + c] / 9;
    // The factor from the unclipped pixel farthest from its mean, then every pixel against it.
    std::size_t far = 18;
    for (std::size_t e = 0; e < 18; ++e) {
      const double out = y[n * 18 + e];
      if (out <= 0.0 || out >= 255.0) continue;
      if (far == 18 || std::abs(v[n * 18 + e] - mean[e % 2]) > std::abs(v[n * 18 + far] - mean[far % 2])) far = e;
    }
    REQUIRE(far < 18);
    const double f = (y[n * 18 + far] - mean[far % 2]) / (v[n * 18 + far] - mean[far % 2]);
    CHECK(f >= 0.8 - 1e-4);
    CHECK(f <= 1.5 + 1e-4);
    for (std::size_t e = 0; e < 18; ++e)
      CHECK(y[n * 18 + e] ==
            doctest::Approx(std::clamp((v[n * 18 + e] - mean[e % 2]) * f + mean[e % 2], 0.0, 255.0)).epsilon(1e-4));
  }
  CHECK(contrast.get_config()["factor"] == json::array({0.2, 0.5}));
  check_round_trip(contrast);
  CHECK(contains(message_of<ValueError>([] { layers::RandomContrast(1.5); }), "[0, 1]"));
}
