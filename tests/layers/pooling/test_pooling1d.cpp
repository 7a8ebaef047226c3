// The 1-D pooling layers: MaxPooling1D, AveragePooling1D, GlobalMaxPooling1D, GlobalAveragePooling1D:
// shapes, values by hand, gradients, configs of every Keras version and errors.
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

using tower::testing::entry;

namespace {

LayerPtr from(const char* text) { return layers::layer_from_config(json::parse(text)); }

}  // namespace

TEST_CASE("MaxPooling1D and AveragePooling1D: shapes and values") {
  clear_session();
  layers::MaxPooling1D max_default;
  CHECK(max_default.name() == "max_pooling1d");
  CHECK(layers::AveragePooling1D().name() == "average_pooling1d");
  CHECK(max_default.pool_size() == 2);
  CHECK(max_default.strides() == 2);  // Keras's None: pool_size
  CHECK(max_default.padding() == "valid");
  CHECK(max_default.weights().empty());
  CHECK(keras_shape(max_default, {10, 3}) == Shape{-1, 5, 3});
  CHECK(keras_shape(layers::MaxPooling1D(3), {10, 3}) == Shape{-1, 3, 3});
  CHECK(keras_shape(layers::MaxPooling1D(3, {.strides = 1}), {10, 3}) == Shape{-1, 8, 3});
  CHECK(keras_shape(layers::AveragePooling1D(3, {.padding = "same"}), {10, 3}) == Shape{-1, 4, 3});
  CHECK(keras_shape(layers::AveragePooling1D(2, {.strides = 3, .padding = "SAME"}), {10, 1}) == Shape{-1, 4, 1});
  CHECK(keras_shape(layers::AveragePooling1D(4), {4, 2}) == Shape{-1, 1, 2});

  // x (1, 5, 2): channel 0 = 1, 5, 2, 4, 3 and channel 1 = -1, 0, -2, 6, 7.
  Tensor x = floats({1, 5, 2}, {1, -1, 5, 0, 2, -2, 4, 6, 3, 7});
  layers::MaxPooling1D max_valid;
  Tensor y = run1(max_valid, x);
  CHECK(y.shape() == Shape{1, 2, 2});
  check_close(y, {5, 0, 4, 6});
  layers::MaxPooling1D max_same(2, {.padding = "same"});  // windows [0, 1], [2, 3], [4]
  check_close(run1(max_same, x), {5, 0, 4, 6, 3, 7});
  layers::AveragePooling1D avg_same(2, {.padding = "same"});  // the padding is not counted, as Keras
  check_close(run1(avg_same, x), {3, -0.5, 3, 2, 3, 7});
  layers::AveragePooling1D avg_strided(3, {.strides = 1});  // windows [0, 2], [1, 3], [2, 4]
  check_close(run1(avg_strided, x), {8.0 / 3, -1, 11.0 / 3, 4.0 / 3, 3, 11.0 / 3}, 1e-6, 1e-6);
  // out 3, one step of padding on each side: windows [-1, 1], [1, 3], [3, 5].
  layers::MaxPooling1D max_overlap(3, {.strides = 2, .padding = "same"});
  check_close(run1(max_overlap, x), {5, 0, 5, 6, 4, 7});

  layers::MaxPooling1D grad_max(2, {.strides = 1});
  check_weightless_gradients(grad_max, {{2, 5, 3}});
  layers::AveragePooling1D grad_avg(3, {.strides = 2, .padding = "same"});
  check_weightless_gradients(grad_avg, {{2, 6, 2}});
}

TEST_CASE("MaxPooling1D and AveragePooling1D: bad arguments and inputs") {
  auto msg = message_of<ValueError>([] { layers::MaxPooling1D(0, {.name = "pool"}); });
  CHECK(contains(msg, "MaxPooling1D \"pool\""));
  CHECK(contains(msg, "pool_size"));
  CHECK(contains(message_of<ValueError>([] { layers::AveragePooling1D(-2); }), "pool_size"));
  CHECK(contains(message_of<ValueError>([] { layers::AveragePooling1D(2, {.strides = 0}); }), "strides"));
  CHECK(contains(message_of<ValueError>([] { layers::MaxPooling1D(2, {.padding = "causal"}); }), "causal"));
  msg = message_of<ShapeError>([] { layers::MaxPooling1D(2, {.name = "p1"})(layers::Input({4, 4, 1})); });
  CHECK(contains(msg, "MaxPooling1D \"p1\""));
  CHECK(contains(msg, "rank 3"));
  CHECK(contains(msg, "(None, 4, 4, 1)"));
  CHECK(contains(message_of<ShapeError>([] { layers::AveragePooling1D()(layers::Input({-1, 3})); }), "known steps"));
  msg = message_of<ShapeError>([] { layers::MaxPooling1D(4)(layers::Input({3, 2})); });
  CHECK(contains(msg, "3 steps"));
  CHECK(contains(msg, "\"same\""));
}

TEST_CASE("GlobalAveragePooling1D and GlobalMaxPooling1D") {
  clear_session();
  CHECK(layers::GlobalMaxPooling1D().name() == "global_max_pooling1d");
  CHECK(layers::GlobalAveragePooling1D().name() == "global_average_pooling1d");
  CHECK(keras_shape(layers::GlobalAveragePooling1D(), {6, 3}) == Shape{-1, 3});
  CHECK(keras_shape(layers::GlobalMaxPooling1D({.keepdims = true}), {6, 3}) == Shape{-1, 1, 3});
  CHECK(keras_shape(layers::GlobalMaxPooling1D(), {-1, 3}) == Shape{-1, 3});  // any number of steps
  // x (1, 3, 2): channel 0 = 1, 2, 3 and channel 1 = -1, 5, 0.
  Tensor x = floats({1, 3, 2}, {1, -1, 2, 5, 3, 0});
  layers::GlobalAveragePooling1D avg;
  Tensor a = run1(avg, x);
  CHECK(a.shape() == Shape{1, 2});
  check_close(a, {2, 4.0 / 3}, 1e-6, 1e-6);
  layers::GlobalMaxPooling1D max({.keepdims = true});
  Tensor m = run1(max, x);
  CHECK(m.shape() == Shape{1, 1, 2});
  check_close(m, {3, 5});
  check_weightless_gradients(avg, {{2, 4, 3}});
  layers::GlobalMaxPooling1D max_flat;
  check_weightless_gradients(max_flat, {{2, 4, 3}});
  auto msg = message_of<ShapeError>([] { layers::GlobalAveragePooling1D({.name = "g"})(layers::Input({4, 4, 3})); });
  CHECK(contains(msg, "GlobalAveragePooling1D \"g\""));
  CHECK(contains(msg, "rank 3"));
}

TEST_CASE("1-D pooling configs of every Keras version") {
  layers::MaxPooling1D max(3, {.strides = 1, .padding = "same", .name = "mp"});
  json c = max.get_config();  // tf.keras 2's spelling
  CHECK(c["pool_size"] == json::array({3}));
  CHECK(c["strides"] == json::array({1}));
  CHECK(c["padding"] == "same");
  CHECK(c["data_format"] == "channels_last");
  CHECK(c["name"] == "mp");
  CHECK(layers::AveragePooling1D(2).get_config()["strides"] == json::array({2}));
  CHECK(layers::layer_from_config(entry(max))->get_config().dump() == c.dump());
  layers::AveragePooling1D avg(2, {.name = "ap"});
  CHECK(layers::layer_from_config(entry(avg))->get_config().dump() == avg.get_config().dump());
  layers::GlobalAveragePooling1D gap({.keepdims = true, .name = "gap"});
  CHECK(gap.get_config()["keepdims"] == true);
  CHECK(gap.get_config()["data_format"] == "channels_last");
  CHECK(layers::layer_from_config(entry(gap))->get_config().dump() == gap.get_config().dump());

  // tf.keras 2 and its short names.
  auto p2 = from(R"({"class_name": "MaxPool1D", "config": {"name": "max_pooling1d_3", "trainable": true,
      "dtype": "float32", "strides": [1], "pool_size": [2], "padding": "valid", "data_format": "channels_last"}})");
  REQUIRE(dynamic_cast<layers::MaxPooling1D*>(p2.get()));
  CHECK(p2->name() == "max_pooling1d_3");
  CHECK(dynamic_cast<layers::MaxPooling1D&>(*p2).strides() == 1);
  auto a2 = from(R"({"class_name": "AvgPool1D", "config": {"name": "ap2", "strides": null, "pool_size": 4,
      "padding": "same"}})");
  REQUIRE(dynamic_cast<layers::AveragePooling1D*>(a2.get()));
  CHECK(dynamic_cast<layers::AveragePooling1D&>(*a2).strides() == 4);
  CHECK(dynamic_cast<layers::AveragePooling1D&>(*a2).padding() == "same");
  CHECK(from(R"({"class_name": "GlobalAvgPool1D", "config": {"name": "g1"}})")->class_name() ==
        "GlobalAveragePooling1D");
  CHECK(from(R"({"class_name": "GlobalMaxPool1D", "config": {"name": "g2", "data_format": "channels_last",
      "keepdims": false}})")
            ->class_name() == "GlobalMaxPooling1D");

  // Keras 3: DTypePolicy, keepdims.
  auto p3 = from(R"({"module": "keras.layers", "class_name": "AveragePooling1D", "config": {"name": "average_pooling1d",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "pool_size": [3], "padding": "valid", "strides": [2], "data_format": "channels_last"},
      "registered_name": null})");
  CHECK(dynamic_cast<layers::AveragePooling1D&>(*p3).pool_size() == 3);
  CHECK(dynamic_cast<layers::AveragePooling1D&>(*p3).strides() == 2);
  auto g3 = from(R"({"module": "keras.layers", "class_name": "GlobalMaxPooling1D", "config": {"name": "gmp3",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "data_format": "channels_last", "keepdims": true}, "registered_name": null})");
  CHECK(dynamic_cast<layers::GlobalMaxPooling1D&>(*g3).keepdims());

  // Keras 1: pool_length, stride, border_mode.
  auto p1 = from(R"({"class_name": "MaxPooling1D", "config": {"name": "maxpooling1d_1", "trainable": true,
      "pool_length": 3, "stride": 1, "border_mode": "same"}})");
  const auto& m1 = dynamic_cast<layers::MaxPooling1D&>(*p1);
  CHECK(m1.pool_size() == 3);
  CHECK(m1.strides() == 1);
  CHECK(m1.padding() == "same");
  auto a1 = from(R"({"class_name": "AveragePooling1D", "config": {"name": "averagepooling1d_1", "pool_length": 2,
      "stride": null, "border_mode": "valid"}})");
  CHECK(dynamic_cast<layers::AveragePooling1D&>(*a1).strides() == 2);
  CHECK(from(R"({"class_name": "GlobalAveragePooling1D", "config": {"name": "globalaveragepooling1d_1",
      "trainable": true}})")
            ->class_name() == "GlobalAveragePooling1D");

  // Errors name the layer and the field.
  auto msg = message_of<ValueError>([] {
    from(R"({"class_name": "MaxPooling1D", "config": {"name": "mpc", "pool_size": 2, "padding": "causal"}})");
  });
  CHECK(contains(msg, "MaxPooling1D \"mpc\""));
  CHECK(contains(msg, "causal"));
  msg = message_of<ValueError>(
      [] { from(R"({"class_name": "MaxPooling1D", "config": {"name": "mp2", "pool_size": [2, 2]}})"); });
  CHECK(contains(msg, "MaxPooling1D \"mp2\""));
  CHECK(contains(msg, "pool_size"));
  CHECK(contains(message_of<ValueError>([] {
                   from(R"({"class_name": "AveragePooling1D", "config": {"name": "ap3", "strides": [1, 2]}})");
                 }),
                 "strides"));
  CHECK(contains(
      message_of<ValueError>([] {
        from(R"({"class_name": "GlobalAveragePooling1D", "config": {"name": "gcf", "data_format": "NCW"}})");
      }),
      "data_format"));
}
