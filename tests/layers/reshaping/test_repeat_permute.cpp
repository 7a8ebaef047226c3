// The reshaping family's RepeatVector and Permute: shapes, values, gradients, configs and errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::run1;
using nlohmann::json;

TEST_CASE("RepeatVector: (batch, features) -> (batch, n, features)") {
  clear_session();
  layers::RepeatVector repeat(3);
  CHECK(repeat.name() == "repeat_vector");
  CHECK(keras_shape(repeat, {4}) == Shape{-1, 3, 4});
  CHECK(keras_shape(layers::RepeatVector(1), {5}) == Shape{-1, 1, 5});
  Tensor y = run1(repeat, floats({2, 2}, {1, 2, 3, 4}));
  CHECK(y.shape() == Shape{2, 3, 2});
  check_close(y, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  CHECK(repeat.weights().empty());
  // Each input element receives the sum of its n copies' gradients.
  check_weightless_gradients(repeat, {{2, 4}});
  layers::RepeatVector once(1);
  check_weightless_gradients(once, {{3, 2}});

  // tf.keras 2's config: {"name", "trainable", "dtype", "n"}.
  const json config = layers::RepeatVector(5, {.name = "rv"}).get_config();
  CHECK(config == json{{"name", "rv"}, {"trainable", true}, {"dtype", "float32"}, {"n", 5}});
  auto back = layers::layer_from_config({{"class_name", "RepeatVector"}, {"config", config}});
  CHECK(back->get_config() == config);

  CHECK(contains(message_of<ValueError>([] { layers::RepeatVector(0); }), "n (the number of repetitions)"));
  auto rank = message_of<ShapeError>([] { layers::RepeatVector(2, {.name = "rv3"})(layers::Input({3, 4})); });
  CHECK(contains(rank, "RepeatVector \"rv3\""));
  CHECK(contains(rank, "(batch, features)"));
  CHECK(contains(message_of<ShapeError>([] { layers::RepeatVector(2)(layers::Input({-1})); }), "features"));
}

TEST_CASE("Permute: Keras's 1-based dims of the axes after the batch") {
  clear_session();
  layers::Permute swap({2, 1});
  CHECK(swap.name() == "permute");
  CHECK(keras_shape(swap, {3, 5}) == Shape{-1, 5, 3});
  CHECK(keras_shape(layers::Permute({3, 1, 2}), {2, 3, 4}) == Shape{-1, 4, 2, 3});
  CHECK(keras_shape(layers::Permute({2, 1}), {-1, 5}) == Shape{-1, 5, -1});  // unknown sizes move too
  Tensor x = floats({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = run1(swap, x);
  CHECK(y.shape() == Shape{1, 3, 2});
  check_close(y, {1, 4, 2, 5, 3, 6});
  // (batch, a, b, c) -> (batch, c, a, b): y[n, k, i, j] = x[n, i, j, k].
  layers::Permute rotate({3, 1, 2});
  Tensor z = run1(rotate, floats({1, 2, 1, 3}, {1, 2, 3, 4, 5, 6}));
  CHECK(z.shape() == Shape{1, 3, 2, 1});
  check_close(z, {1, 4, 2, 5, 3, 6});
  check_weightless_gradients(rotate, {{2, 2, 3, 4}});
  layers::Permute identity({1, 2});
  check_close(run1(identity, x), x, 0, 0);

  const json config = layers::Permute({3, 1, 2}, {.name = "perm"}).get_config();
  CHECK(config == json{{"name", "perm"}, {"trainable", true}, {"dtype", "float32"}, {"dims", {3, 1, 2}}});
  CHECK(layers::layer_from_config({{"class_name", "Permute"}, {"config", config}})->get_config() == config);
  // Keras 3 writes dims as a list too; a tuple of one axis may come as a bare integer.
  auto keras3 = json::parse(R"({"name": "p3", "trainable": true, "dims": [1],
      "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}})");
  CHECK(layers::layer_from_config({{"class_name", "Permute"}, {"config", keras3}})->get_config()["dims"] == json{1});

  for (const std::vector<std::int64_t>& bad : std::vector<std::vector<std::int64_t>>{{}, {0, 1}, {1, 1}, {1, 3}, {2}})
    CHECK(contains(message_of<ValueError>([&] { layers::Permute p(bad); }), "must be a permutation of 1.."));
  auto rank = message_of<ShapeError>([] { layers::Permute({2, 1}, {.name = "p"})(layers::Input({2, 3, 4})); });
  CHECK(contains(rank, "Permute \"p\""));
  CHECK(contains(rank, "permute 2 axes after the batch"));
}
