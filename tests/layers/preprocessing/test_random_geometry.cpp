// RandomTranslation, RandomRotation, RandomZoom and RandomCrop: identity (RandomCrop: the centred
// aspect-ratio crop) in inference; in training the transforms recovered where the factors fix them
// (integer shifts, rotations by 0, 90 and 180 degrees, a 1/2 zoom), bounds and symmetries where they
// are random, seeded reproducibility, configs and errors. The sampling itself: tests/backends/test_image_ops.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::random_tensor;
using tower::testing::run1;

using tower::testing::entry;
using tower::testing::check_round_trip;

namespace {

// x (n, h, w, c) as a flat vector and an accessor.
struct Image {
  std::vector<double> v;
  std::int64_t h, w, c;
  double at(std::int64_t n, std::int64_t i, std::int64_t j, std::int64_t k) const {
    return v[static_cast<std::size_t>(((n * h + i) * w + j) * c + k)];
  }
};

Image image_of(const Tensor& t) { return {t.to_vector<double>(), t.shape()[1], t.shape()[2], t.shape()[3]}; }

// ops::resize of x, run directly.
Tensor resized(const Tensor& x, std::int64_t h, std::int64_t w) {
  Graph g;
  auto p = g.placeholder({-1, x.shape()[1], x.shape()[2], x.shape()[3]});
  Executor executor;
  return executor.run({{p, x}}, {ops::resize(p, h, w)}, {}).at(0);
}

}  // namespace

TEST_CASE("RandomTranslation: identity in inference; fixed factors shift by whole pixels, reflect fills") {
  clear_session();
  Tensor x = random_tensor({3, 4, 8, 2}, 21, 0.1, 1.0, false, DType::float32);
  const Image in = image_of(x);
  // dy = 0.5 · 4 = 2 rows down, dx = -0.25 · 8 = 2 columns left.
  layers::RandomTranslation shift(std::vector<double>{0.5, 0.5}, std::vector<double>{-0.25, -0.25}, {.seed = 1});
  check_close(run1(shift, x), in.v, 0, 0);
  const Image out = image_of(run1(shift, x, /*training=*/true));
  auto reflect = [](std::int64_t i, std::int64_t n) { return i < 0 ? -i - 1 : (i >= n ? 2 * n - i - 1 : i); };
  for (std::int64_t n = 0; n < 3; ++n)
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 8; ++j)
        for (std::int64_t k = 0; k < 2; ++k)
          CHECK(out.at(n, i, j, k) == doctest::Approx(in.at(n, reflect(i - 2, 4), reflect(j + 2, 8), k)).epsilon(1e-6));
  // Random shifts with constant fill: at most 0.25 · 8 = 2 filled columns and no filled rows.
  layers::RandomTranslation columns(std::vector<double>{0.0}, std::vector<double>{0.25},
                                    {.fill_mode = "constant", .interpolation = "nearest", .seed = 2, .fill_value = -7});
  Tensor big = random_tensor({20, 4, 8, 1}, 22, 0.1, 1.0, true, DType::float32);
  const Image moved = image_of(run1(columns, big, true));
  for (std::int64_t n = 0; n < 20; ++n) {
    int filled = 0;
    for (std::int64_t j = 0; j < 8; ++j) filled += moved.at(n, 1, j, 0) == -7;
    CHECK(filled <= 2);
    for (std::int64_t j = 0; j < 8; ++j) CHECK((moved.at(n, 0, j, 0) == -7) == (moved.at(n, 3, j, 0) == -7));
  }
}

TEST_CASE("RandomRotation: a zero factor is the identity; half and quarter turns move the pixels exactly") {
  clear_session();
  Tensor x = random_tensor({2, 5, 5, 1}, 23, 0.1, 1.0, false, DType::float32);
  const Image in = image_of(x);
  layers::RandomRotation still(std::vector<double>{0.0}, {.seed = 3});
  check_close(run1(still, x, true), in.v, 1e-6, 1e-6);
  layers::RandomRotation half(std::vector<double>{0.5, 0.5}, {.seed = 3});
  check_close(run1(half, x), in.v, 0, 0);
  const Image turned = image_of(run1(half, x, true));
  layers::RandomRotation quarter(std::vector<double>{0.25, 0.25}, {.seed = 3});
  const Image quartered = image_of(run1(quarter, x, true));
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = 0; j < 5; ++j) {
        CHECK(turned.at(n, i, j, 0) == doctest::Approx(in.at(n, 4 - i, 4 - j, 0)).epsilon(1e-5));
        // Output (x, y) reads (4 - y, x): Keras's counter-clockwise turn for a positive factor.
        CHECK(quartered.at(n, i, j, 0) == doctest::Approx(in.at(n, j, 4 - i, 0)).epsilon(1e-5));
      }
  // Random angles: six copies of one image come out rotated differently, the centre pixel fixed.
  layers::RandomRotation any(std::vector<double>{0.2}, {.seed = 4});
  std::vector<float> copies;
  for (int n = 0; n < 6; ++n)
    for (std::size_t e = 0; e < 25; ++e) copies.push_back(static_cast<float>(in.v[e]));
  const Image r = image_of(run1(any, Tensor::from_vector<float>({6, 5, 5, 1}, copies), true));
  std::set<double> corners;
  for (std::int64_t n = 0; n < 6; ++n) {
    corners.insert(r.at(n, 0, 0, 0));
    CHECK(r.at(n, 2, 2, 0) == doctest::Approx(in.at(0, 2, 2, 0)).epsilon(1e-5));
  }
  CHECK(corners.size() == 6);
}

TEST_CASE("RandomZoom: a zero factor is the identity; zoom 1/2 reads the centre; width follows height") {
  clear_session();
  Tensor x = random_tensor({2, 5, 5, 1}, 25, 0.1, 1.0, false, DType::float32);
  const Image in = image_of(x);
  layers::RandomZoom none(std::vector<double>{0.0}, std::nullopt, {.seed = 5});
  check_close(run1(none, x, true), in.v, 1e-6, 1e-6);
  layers::RandomZoom in_half(std::vector<double>{-0.5, -0.5}, std::vector<double>{-0.5, -0.5}, {.seed = 5});
  check_close(run1(in_half, x), in.v, 0, 0);
  const Image zoomed = image_of(run1(in_half, x, true));
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t i = 0; i < 5; i += 2)
      for (std::int64_t j = 0; j < 5; j += 2)  // (j, i) reads (j/2 + 1, i/2 + 1)
        CHECK(zoomed.at(n, i, j, 0) == doctest::Approx(in.at(n, i / 2 + 1, j / 2 + 1, 0)).epsilon(1e-6));
  // Without width_factor both axes take the same zoom: an image symmetric about its diagonal stays so.
  std::vector<float> sym(8 * 25);
  for (std::size_t n = 0; n < 8; ++n)
    for (std::size_t i = 0; i < 5; ++i)
      for (std::size_t j = 0; j < 5; ++j) sym[n * 25 + i * 5 + j] = static_cast<float>((i + 1) * (j + 1) + n);
  layers::RandomZoom both(std::vector<double>{-0.4, 0.6}, std::nullopt, {.seed = 6});
  const Image s = image_of(run1(both, Tensor::from_vector<float>({8, 5, 5, 1}, sym), true));
  for (std::int64_t n = 0; n < 8; ++n)
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = 0; j < 5; ++j) CHECK(s.at(n, i, j, 0) == doctest::Approx(s.at(n, j, i, 0)).epsilon(1e-5));
}

TEST_CASE("RandomCrop: one window per batch in training; the centred aspect-ratio crop otherwise") {
  clear_session();
  Tensor x = random_tensor({3, 5, 7, 2}, 26, 0.1, 1.0, false, DType::float32);
  const Image in = image_of(x);
  std::set<std::pair<std::int64_t, std::int64_t>> offsets;
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    layers::RandomCrop crop(2, 3, {.seed = seed});
    const Tensor y = run1(crop, x, true);
    REQUIRE(y.shape() == Shape{3, 2, 3, 2});
    const Image out = image_of(y);
    int found = 0;
    for (std::int64_t top = 0; top <= 3; ++top)
      for (std::int64_t left = 0; left <= 4; ++left) {
        bool match = true;
        for (std::int64_t n = 0; n < 3; ++n)
          for (std::int64_t i = 0; i < 2; ++i)
            for (std::int64_t j = 0; j < 3; ++j)
              for (std::int64_t k = 0; k < 2; ++k)
                match = match && out.at(n, i, j, k) == in.at(n, top + i, left + j, k);
        if (match) offsets.insert({top, left}), ++found;
      }
    CHECK(found == 1);  // the same window for every image of the batch
  }
  CHECK(offsets.size() > 3);
  // Inference: the centred crop of ratio 2:3, int(7 · 2 / 3) = 4 rows from row int((5 - 4) / 2) = 0, all
  // 7 columns (int(5 · 3 / 2) = 7), resized to (2, 3).
  layers::RandomCrop crop(2, 3, {.seed = 1});
  CHECK(keras_shape(crop, {5, 7, 2}) == Shape{-1, 2, 3, 2});
  const Tensor inferred = run1(crop, x);
  REQUIRE(inferred.shape() == Shape{3, 2, 3, 2});
  std::vector<float> window;
  for (std::int64_t n = 0; n < 3; ++n)
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 7; ++j)
        for (std::int64_t k = 0; k < 2; ++k) window.push_back(static_cast<float>(in.at(n, i, j, k)));
  check_close(inferred, resized(Tensor::from_vector<float>({3, 4, 7, 2}, window), 2, 3), 1e-6, 1e-6);
  // Training on an image no larger than the crop: Keras slices from the centred offsets and resizes.
  layers::RandomCrop grow(4, 4, {.seed = 1});
  Tensor small = random_tensor({2, 2, 3, 1}, 27, 0.1, 1.0, false, DType::float32);
  check_close(run1(grow, small, true), resized(small, 4, 4), 1e-6, 1e-6);
}

TEST_CASE("random geometric layers: seeded draws repeat, other seeds differ") {
  clear_session();
  Tensor x = random_tensor({4, 6, 6, 1}, 28, 0.1, 1.0, false, DType::float32);
  auto check = [&](auto make) {
    auto a = make(7), b = make(7), c = make(8);
    const auto ya = run1(a, x, true).template to_vector<double>();
    CHECK(ya == run1(b, x, true).template to_vector<double>());
    CHECK(ya != run1(c, x, true).template to_vector<double>());
  };
  check([](std::uint64_t s) { return layers::RandomTranslation({0.3}, {0.3}, {.seed = s}); });
  check([](std::uint64_t s) { return layers::RandomRotation({0.3}, {.seed = s}); });
  check([](std::uint64_t s) { return layers::RandomZoom({0.3}, std::nullopt, {.seed = s}); });
  check([](std::uint64_t s) { return layers::RandomCrop(3, 3, {.seed = s}); });
}

TEST_CASE("random geometric layers: Keras configs round-trip; bad arguments name the problem") {
  clear_session();
  layers::RandomTranslation shift({0.1}, {0.1, 0.2}, {.fill_mode = "wrap", .seed = 3, .fill_value = 1.5});
  CHECK(shift.get_config()["height_factor"] == 0.1);
  CHECK(shift.get_config()["width_factor"] == json::array({0.1, 0.2}));
  CHECK(shift.get_config()["fill_mode"] == "wrap");
  check_round_trip(shift);
  layers::RandomRotation rot({0.2}, {.interpolation = "nearest"});
  CHECK(rot.get_config()["factor"] == json::array({-0.2, 0.2}));
  CHECK(rot.get_config()["seed"].is_null());
  check_round_trip(rot);
  layers::RandomZoom zoom({0.2});
  CHECK(zoom.get_config()["width_factor"].is_null());
  check_round_trip(zoom);
  layers::RandomCrop crop(3, 2);
  CHECK(crop.get_config()["seed"].is_number());  // Keras writes the seed it made
  check_round_trip(crop);
  // Keras 3's own configs load.
  auto z = layers::layer_from_config(json::parse(
      R"({"class_name": "RandomZoom", "config": {"name": "random_zoom", "trainable": true, "data_format": "channels_last",
          "height_factor": 0.2, "width_factor": null, "fill_mode": "reflect", "interpolation": "bilinear",
          "seed": null, "fill_value": 0.0}})"));
  CHECK(z->class_name() == "RandomZoom");
  CHECK(contains(message_of<ValueError>([] { layers::RandomTranslation({1.5}, {0.1}); }), "height_factor"));
  CHECK(contains(message_of<ValueError>([] { layers::RandomZoom({-1.0}); }), "(-1"));
  CHECK(contains(message_of<ValueError>([] { layers::RandomRotation({0.1}, {.fill_mode = "mirror"}); }), "mirror"));
  CHECK(contains(message_of<ValueError>([] { layers::RandomZoom({0.1}, std::nullopt, {.interpolation = "bicubic"}); }),
                 "bicubic"));
  CHECK(contains(message_of<ValueError>([] { layers::RandomRotation({2.0, 3.0}); }), "[-1, 1]"));
  CHECK(contains(message_of<ValueError>([] { layers::RandomCrop(0, 3); }), "positive"));
  CHECK(contains(message_of<ShapeError>([] {
                   keras_shape(layers::RandomRotation({0.1}), {-1, 4, 1});
                 }),
                 "known height"));
}
