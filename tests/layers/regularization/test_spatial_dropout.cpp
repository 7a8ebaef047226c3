// SpatialDropout2D and SpatialDropout3D (whole channels per sample, channels_last) and Dropout's
// noise_shape (a mask broadcast along the axes of size 1): training and inference, replica rows,
// configs of tf.keras 2 and Keras 3, and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tower/core/ops.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::evaluate;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::random_tensor;
using tower::testing::run1;

using tower::testing::entry;

namespace {

// y (batch, positions..., c) from x: every (sample, channel) all zero or all x / (1 - rate). Returns
// the fraction dropped.
double check_channel_mask(const Tensor& x, const Tensor& y, double rate) {
  REQUIRE(x.shape() == y.shape());
  const auto xs = x.to_vector<double>(), ys = y.to_vector<double>();
  const std::int64_t batch = x.shape()[0], channels = x.shape()[x.shape().rank() - 1];
  const std::int64_t positions = x.num_elements() / (batch * channels);
  std::int64_t dropped = 0, wrong = 0;
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t c = 0; c < channels; ++c) {
      const bool zero = ys[static_cast<std::size_t>(n * positions * channels + c)] == 0.0;
      dropped += zero;
      for (std::int64_t p = 0; p < positions; ++p) {
        const auto i = static_cast<std::size_t>((n * positions + p) * channels + c);
        if (zero ? ys[i] != 0.0 : std::abs(ys[i] - xs[i] / (1.0 - rate)) > 1e-5 * std::abs(ys[i])) ++wrong;
      }
    }
  CHECK(wrong == 0);
  return static_cast<double>(dropped) / static_cast<double>(batch * channels);
}

}  // namespace

TEST_CASE("SpatialDropout2D and SpatialDropout3D: whole channels in training, identity at inference") {
  clear_session();
  layers::SpatialDropout2D d2(0.4);
  CHECK(d2.name() == "spatial_dropout2d");
  CHECK(keras_shape(d2, {5, 6, 3}) == Shape{-1, 5, 6, 3});
  Tensor x2 = random_tensor({30, 4, 5, 40}, 5, 0.5, 2.0, false, DType::float32);
  check_close(run1(d2, x2, false), x2);
  CHECK(check_channel_mask(x2, run1(d2, x2, true), 0.4) == doctest::Approx(0.4).epsilon(0.15));

  layers::SpatialDropout3D d3(0.3, {.seed = 6});
  CHECK(d3.name() == "spatial_dropout3d");
  CHECK(d3.seed() == 6);
  Tensor x3 = random_tensor({20, 2, 3, 4, 40}, 6, 0.5, 2.0, false, DType::float32);
  check_close(run1(d3, x3, false), x3);
  CHECK(check_channel_mask(x3, run1(d3, x3, true), 0.3) == doctest::Approx(0.3).epsilon(0.2));

  // A replica's rows get the whole batch's channel mask for those rows.
  layers::SpatialDropout2D drop(0.5, {.seed = 11});
  Graph graph;
  SymbolicTensor x = graph.placeholder({-1, 4, 5, 40});
  CallContext whole{.graph = graph, .training = true};
  SymbolicTensor y = drop.call(whole, {x})[0];
  ReplicaContext second{.first_row = graph.constant(Tensor::scalar(7, DType::int64))};
  CallContext tower{.graph = graph, .training = true, .replica = &second};
  SymbolicTensor y_part = drop.call(tower, {ops::slice(x, {7, 0, 0, 0}, {-1, -1, -1, -1})})[0];
  auto got = evaluate({y, y_part}, {{x, x2}});
  const auto all = got[0].to_vector<float>(), part = got[1].to_vector<float>();
  CHECK(std::vector<float>(all.begin() + 7 * 4 * 5 * 40, all.end()) == part);

  auto msg = message_of<ShapeError>([] { layers::SpatialDropout2D(0.5, {.name = "s2"})(layers::Input({4, 2})); });
  CHECK(contains(msg, "SpatialDropout2D \"s2\""));
  CHECK(contains(msg, "rank 4"));
  msg = message_of<ValueError>([] { layers::SpatialDropout3D(1.0, {.name = "s3"}); });
  CHECK(contains(msg, "rate must be in [0, 1)"));
}

TEST_CASE("SpatialDropout2D/3D: configs of tf.keras 2, Keras 3 and Keras 1") {
  layers::SpatialDropout2D seeded(0.3, {.seed = 42, .name = "sd"});
  json c = seeded.get_config();
  CHECK(c["rate"] == 0.3);
  CHECK(c["seed"] == 42);
  CHECK(layers::layer_from_config(entry(seeded))->get_config().dump() == c.dump());
  // Keras 3 writes rate, seed, name, dtype and data_format only.
  LayerPtr k3 = layers::layer_from_config(json::parse(R"({"module": "keras.layers", "class_name": "SpatialDropout3D",
      "config": {"rate": 0.2, "seed": 4, "name": "s3", "dtype": "float32", "data_format": "channels_last"},
      "registered_name": null})"));
  CHECK(dynamic_cast<layers::SpatialDropout3D&>(*k3).rate() == 0.2);
  CHECK(dynamic_cast<layers::SpatialDropout3D&>(*k3).seed() == 4);
  LayerPtr k1 = layers::layer_from_config(
      json::parse(R"({"class_name": "SpatialDropout2D", "config": {"name": "sp", "p": 0.6, "dim_ordering": "tf"}})"));
  CHECK(dynamic_cast<layers::SpatialDropout2D&>(*k1).rate() == 0.6);
  LayerPtr cf = layers::layer_from_config(json::parse(R"({"class_name": "SpatialDropout2D", "config": {"rate": 0.2,
        "name": "cf", "data_format": "channels_first"}})"));
  CHECK(cf->data_format() == "channels_first");
  auto msg = message_of<ValueError>([] {
    layers::layer_from_config(json::parse(R"({"class_name": "SpatialDropout2D", "config": {"rate": 0.2,
        "name": "bad", "data_format": "NCHW"}})"));
  });
  CHECK(contains(msg, "channels_first"));
  CHECK(contains(msg, "channels_last"));
}

TEST_CASE("Dropout: noise_shape broadcasts one mask along the axes of size 1") {
  clear_session();
  layers::Dropout drop(0.5, {.noise_shape = {-1, 1, 6}, .seed = 3});
  CHECK(drop.noise_shape() == std::vector<std::int64_t>{-1, 1, 6});
  Tensor x = random_tensor({40, 5, 6}, 7, 0.5, 2.0, false, DType::float32);
  check_close(run1(drop, x, false), x);
  CHECK(check_channel_mask(x, run1(drop, x, true), 0.5) == doctest::Approx(0.5).epsilon(0.2));

  // (1, None, None): one mask shared by every sample.
  layers::Dropout shared(0.5, {.noise_shape = {1, -1, -1}, .seed = 4});
  const auto y = run1(shared, x, true).to_vector<double>(), xs = x.to_vector<double>();
  for (std::size_t n = 1; n < 40; ++n)
    for (std::size_t i = 0; i < 30; ++i) CHECK((y[n * 30 + i] == 0.0) == (y[i] == 0.0));
  // All None draws plain Dropout's mask.
  layers::Dropout all_none(0.3, {.noise_shape = {-1, -1, -1}, .seed = 5}), plain(0.3, {.seed = 5});
  CHECK(run1(all_none, x, true).to_vector<float>() == run1(plain, x, true).to_vector<float>());

  // A replica's rows: its part of the whole batch's mask; a mask shared along the batch is the same.
  for (const std::vector<std::int64_t>& noise :
       {std::vector<std::int64_t>{-1, 1, 6}, std::vector<std::int64_t>{1, 5, -1}}) {
    layers::Dropout d(0.5, {.noise_shape = noise, .seed = 8});
    Graph graph;
    SymbolicTensor xs_ = graph.placeholder({-1, 5, 6});
    CallContext whole{.graph = graph, .training = true};
    SymbolicTensor yw = d.call(whole, {xs_})[0];
    ReplicaContext second{.first_row = graph.constant(Tensor::scalar(9, DType::int64))};
    CallContext tower{.graph = graph, .training = true, .replica = &second};
    SymbolicTensor yp = d.call(tower, {ops::slice(xs_, {9, 0, 0}, {-1, -1, -1})})[0];
    auto got = evaluate({yw, yp}, {{xs_, x}});
    const auto all = got[0].to_vector<float>(), part = got[1].to_vector<float>();
    CHECK(std::vector<float>(all.begin() + 9 * 30, all.end()) == part);
  }
}

TEST_CASE("Dropout: noise_shape configs and errors") {
  layers::Dropout drop(0.5, {.noise_shape = {-1, 1, 4}, .name = "dr"});
  json c = drop.get_config();
  CHECK(c["noise_shape"] == json::parse("[null, 1, 4]"));
  CHECK(layers::layer_from_config(entry(drop))->get_config().dump() == c.dump());
  CHECK(layers::Dropout(0.5).get_config()["noise_shape"].is_null());
  // Keras 3's spelling.
  LayerPtr k3 = layers::layer_from_config(json::parse(R"({"module": "keras.layers", "class_name": "Dropout", "config":
      {"name": "dr3", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config":
      {"name": "float32"}, "registered_name": null}, "rate": 0.5, "seed": null, "noise_shape": [null, 1, 4]},
      "registered_name": null})"));
  CHECK(dynamic_cast<layers::Dropout&>(*k3).noise_shape() == std::vector<std::int64_t>{-1, 1, 4});

  auto msg = message_of<ValueError>([] { layers::Dropout(0.5, {.noise_shape = {-1, -3}, .name = "d1"}); });
  CHECK(contains(msg, "Dropout \"d1\""));
  CHECK(contains(msg, "positive size"));
  msg = message_of<ValueError>([] {
    layers::Dropout(0.5, {.noise_shape = {-1, 1}, .name = "d2"})(layers::Input({3, 4}));
  });
  CHECK(contains(msg, "has 2 entries but the input"));
  CHECK(contains(msg, "one entry per axis"));
  msg = message_of<ValueError>([] {
    layers::Dropout(0.5, {.noise_shape = {-1, 2, 4}, .name = "d3"})(layers::Input({3, 4}));
  });
  CHECK(contains(msg, "use 1, 3 or None"));
  msg = message_of<ValueError>([] {
    layers::layer_from_config(json::parse(R"({"class_name": "Dropout", "config": {"name": "d4", "rate": 0.5,
        "noise_shape": [null, 0.5]}})"));
  });
  CHECK(contains(msg, "noise_shape"));
  CHECK(contains(msg, "positive integers or null"));
}
