// The 1-D reshaping layers: UpSampling1D, ZeroPadding1D and Cropping1D: shapes, values, gradients,
// configs of every Keras version and errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::run1;
using Ints = std::vector<std::int64_t>;

using tower::testing::entry;

namespace {

LayerPtr from(const char* text) { return layers::layer_from_config(json::parse(text)); }

}  // namespace

TEST_CASE("UpSampling1D: each step repeated size times") {
  clear_session();
  layers::UpSampling1D up;
  CHECK(up.name() == "up_sampling1d");
  CHECK(up.size() == 2);
  CHECK(up.weights().empty());
  CHECK(keras_shape(up, {4, 3}) == Shape{-1, 8, 3});
  CHECK(keras_shape(layers::UpSampling1D(3), {5, 1}) == Shape{-1, 15, 1});
  CHECK(keras_shape(layers::UpSampling1D(1), {5, 2}) == Shape{-1, 5, 2});

  // x (2, 3, 2): steps (1, 2), (3, 4), (5, 6) and (-1, -2), (-3, -4), (-5, -6).
  Tensor x = floats({2, 3, 2}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  Tensor y = run1(up, x);
  CHECK(y.shape() == Shape{2, 6, 2});
  check_close(y, {1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6, -1, -2, -1, -2, -3, -4, -3, -4, -5, -6, -5, -6});
  layers::UpSampling1D three(3);
  check_close(run1(three, floats({1, 2, 1}, {7, 8})), {7, 7, 7, 8, 8, 8});
  layers::UpSampling1D one(1);
  check_close(run1(one, x), x);
  // The gradient of a step sums its copies'.
  check_weightless_gradients(up, {{2, 3, 2}});
  check_weightless_gradients(three, {{1, 4, 3}});

  auto msg = message_of<ValueError>([] { layers::UpSampling1D(0, {.name = "u"}); });
  CHECK(contains(msg, "UpSampling1D \"u\""));
  CHECK(contains(msg, "size must be positive"));
  CHECK(contains(message_of<ValueError>([] { layers::UpSampling1D(-2); }), "got -2"));
  CHECK(contains(message_of<ShapeError>([] { layers::UpSampling1D()(layers::Input({4})); }), "rank 3"));
  CHECK(contains(message_of<ShapeError>([] { layers::UpSampling1D()(layers::Input({-1, 3})); }), "known steps"));
}

TEST_CASE("ZeroPadding1D: an int or (left, right)") {
  clear_session();
  layers::ZeroPadding1D pad_default;
  CHECK(pad_default.name() == "zero_padding1d");
  CHECK(pad_default.padding() == Ints{1, 1});
  CHECK(keras_shape(pad_default, {5, 2}) == Shape{-1, 7, 2});
  CHECK(keras_shape(layers::ZeroPadding1D(3), {5, 2}) == Shape{-1, 11, 2});
  CHECK(keras_shape(layers::ZeroPadding1D({1, 2}), {5, 2}) == Shape{-1, 8, 2});
  CHECK(keras_shape(layers::ZeroPadding1D({0, 0}), {5, 2}) == Shape{-1, 5, 2});
  CHECK(keras_shape(layers::ZeroPadding1D(2), {-1, 2}) == Shape{-1, -1, 2});  // any number of steps

  layers::ZeroPadding1D pad({2, 1});
  Tensor y = run1(pad, floats({1, 2, 2}, {1, 2, 3, 4}));
  CHECK(y.shape() == Shape{1, 5, 2});
  check_close(y, {0, 0, 0, 0, 1, 2, 3, 4, 0, 0});
  check_weightless_gradients(pad, {{2, 3, 2}});

  auto msg = message_of<ValueError>([] { layers::ZeroPadding1D(-1, {.name = "zp"}); });
  CHECK(contains(msg, "ZeroPadding1D \"zp\""));
  CHECK(contains(msg, "padding"));
  CHECK(contains(message_of<ValueError>([] { layers::ZeroPadding1D({1, 2, 3}); }), "padding"));
  CHECK(contains(message_of<ValueError>([] { layers::ZeroPadding1D({1, -2}); }), ">= 0"));
  CHECK(contains(message_of<ShapeError>([] { layers::ZeroPadding1D()(layers::Input({5, 5, 1})); }), "rank 3"));
}

TEST_CASE("Cropping1D: (left, right) or an int") {
  clear_session();
  layers::Cropping1D crop_default;
  CHECK(crop_default.name() == "cropping1d");
  CHECK(crop_default.cropping() == Ints{1, 1});
  CHECK(keras_shape(crop_default, {5, 2}) == Shape{-1, 3, 2});
  CHECK(keras_shape(layers::Cropping1D({1, 2}), {5, 2}) == Shape{-1, 2, 2});
  CHECK(keras_shape(layers::Cropping1D(2), {5, 2}) == Shape{-1, 1, 2});
  CHECK(keras_shape(layers::Cropping1D({2, 0}), {-1, 3}) == Shape{-1, -1, 3});  // unknown steps, nothing cut at the end

  // x (1, 5, 1) = 1..5 (Keras's test: cropping (1, 2) keeps x[:, 1:3]).
  Tensor x = floats({1, 5, 1}, {1, 2, 3, 4, 5});
  layers::Cropping1D crop({1, 2});
  check_close(run1(crop, x), {2, 3});
  layers::Cropping1D both(1);
  check_close(run1(both, x), {2, 3, 4});
  layers::Cropping1D right({0, 1});
  check_close(run1(right, x), {1, 2, 3, 4});
  layers::Cropping1D none({0, 0});
  check_close(run1(none, x), x);
  check_weightless_gradients(crop, {{2, 5, 3}});

  auto msg = message_of<ShapeError>([] { layers::Cropping1D({2, 3}, {.name = "cr"})(layers::Input({5, 7})); });
  CHECK(contains(msg, "Cropping1D \"cr\""));
  CHECK(contains(msg, "smaller than the input length"));
  CHECK(contains(message_of<ShapeError>([] {
                   layers::Cropping1D({1, 1})(layers::Input({-1, 3}));
                 }),
                 "known number of steps"));
  CHECK(contains(message_of<ValueError>([] { layers::Cropping1D({1, -1}); }), "cropping"));
  CHECK(contains(message_of<ValueError>([] { layers::Cropping1D({1, 2, 3}); }), "cropping"));
  CHECK(contains(message_of<ShapeError>([] { layers::Cropping1D()(layers::Input({5})); }), "rank 3"));
}

TEST_CASE("UpSampling1D, ZeroPadding1D and Cropping1D: configs of every Keras version") {
  // tf.keras 2's spelling and the round trip.
  layers::UpSampling1D up(3, {.name = "up"});
  CHECK(up.get_config()["size"] == 3);
  layers::ZeroPadding1D pad({1, 2}, {.name = "zp"});
  CHECK(pad.get_config()["padding"] == json::array({1, 2}));
  layers::Cropping1D crop({0, 2}, {.name = "cr"});
  CHECK(crop.get_config()["cropping"] == json::array({0, 2}));
  for (const Layer* layer : std::vector<const Layer*>{&up, &pad, &crop}) {
    CAPTURE(layer->class_name());
    LayerPtr back = layers::layer_from_config(entry(*layer));
    CHECK(back->class_name() == layer->class_name());
    CHECK(back->get_config().dump() == layer->get_config().dump());
  }

  // tf.keras 2 and Keras 3 (DTypePolicy; ZeroPadding1D's data_format).
  CHECK(dynamic_cast<layers::UpSampling1D&>(
            *from(R"({"class_name": "UpSampling1D", "config": {"name": "u2", "trainable": true, "dtype": "float32",
                "size": 4}})"))
            .size() == 4);
  CHECK(dynamic_cast<layers::UpSampling1D&>(*from(R"({"class_name": "UpSampling1D", "config": {"name": "u0"}})"))
            .size() == 2);
  auto z3 = from(R"({"module": "keras.layers", "class_name": "ZeroPadding1D", "config": {"name": "zero_padding1d",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "padding": [3, 0], "data_format": "channels_last"}, "registered_name": null})");
  CHECK(dynamic_cast<layers::ZeroPadding1D&>(*z3).padding() == Ints{3, 0});
  CHECK(dynamic_cast<layers::ZeroPadding1D&>(*from(R"({"class_name": "ZeroPadding1D", "config": {"padding": 2}})"))
            .padding() == Ints{2, 2});
  CHECK(dynamic_cast<layers::ZeroPadding1D&>(*from(R"({"class_name": "ZeroPadding1D", "config": {"name": "z"}})"))
            .padding() == Ints{1, 1});
  auto c3 = from(R"({"module": "keras.layers", "class_name": "Cropping1D", "config": {"name": "cropping1d",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "cropping": [2, 1]}, "registered_name": null})");
  CHECK(dynamic_cast<layers::Cropping1D&>(*c3).cropping() == Ints{2, 1});
  CHECK(dynamic_cast<layers::Cropping1D&>(*from(R"({"class_name": "Cropping1D", "config": {"cropping": 3}})"))
            .cropping() == Ints{3, 3});

  // Keras 1: UpSampling1D(length), ZeroPadding1D's dict form.
  CHECK(dynamic_cast<layers::UpSampling1D&>(
            *from(R"({"class_name": "UpSampling1D", "config": {"name": "upsampling1d_1", "trainable": true,
                "length": 5}})"))
            .size() == 5);
  CHECK(dynamic_cast<layers::ZeroPadding1D&>(
            *from(R"({"class_name": "ZeroPadding1D", "config": {"name": "zeropadding1d_1", "trainable": true,
                "padding": {"left_pad": 2, "right_pad": 1}}})"))
            .padding() == Ints{2, 1});
  CHECK(dynamic_cast<layers::ZeroPadding1D&>(
            *from(R"({"class_name": "ZeroPadding1D", "config": {"padding": {"right_pad": 4}}})"))
            .padding() == Ints{0, 4});
  CHECK(dynamic_cast<layers::Cropping1D&>(
            *from(R"({"class_name": "Cropping1D", "config": {"name": "cropping1d_1", "trainable": true,
                "cropping": [1, 0]}})"))
            .cropping() == Ints{1, 0});

  // Errors name the layer and the field.
  auto msg = message_of<ValueError>(
      [] { from(R"({"class_name": "ZeroPadding1D", "config": {"name": "zb", "padding": [1, 2, 3]}})"); });
  CHECK(contains(msg, "ZeroPadding1D \"zb\""));
  CHECK(contains(msg, "padding"));
  CHECK(contains(message_of<ValueError>([] {
                   from(R"({"class_name": "ZeroPadding1D", "config": {"name": "zd", "padding": {"top_pad": 1}}})");
                 }),
                 "left_pad"));
  CHECK(contains(message_of<ValueError>([] {
                   from(R"({"class_name": "Cropping1D", "config": {"name": "cb", "cropping": [[1, 2], [3, 4]]}})");
                 }),
                 "cropping"));
  CHECK(contains(message_of<ValueError>(
                     [] { from(R"({"class_name": "UpSampling1D", "config": {"name": "ub", "size": [2, 2]}})"); }),
                 "size"));
  CHECK(contains(
      message_of<ValueError>([] { from(R"({"class_name": "UpSampling1D", "config": {"name": "ub0", "size": 0}})"); }),
      "size must be positive"));
}
