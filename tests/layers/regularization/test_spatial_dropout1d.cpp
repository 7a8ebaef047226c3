// SpatialDropout1D: whole channels dropped in training (one mask per sample and channel), identity at
// inference, seeds, replica row offsets, its gradient, configs of every Keras version and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tower/core/autodiff.h"
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

// Checks that every (sample, channel) of y (batch, steps, c) is all zero or all x / (1 - rate), and
// returns the fraction of dropped channels.
double check_channel_mask(const Tensor& x, const Tensor& y, double rate) {
  REQUIRE(x.shape() == y.shape());
  const auto xs = x.to_vector<double>(), ys = y.to_vector<double>();
  const std::int64_t batch = x.shape()[0], steps = x.shape()[1], channels = x.shape()[2];
  std::int64_t dropped = 0;
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t c = 0; c < channels; ++c) {
      const bool zero = ys[static_cast<std::size_t>(n * steps * channels + c)] == 0.0;
      dropped += zero;
      for (std::int64_t t = 0; t < steps; ++t) {
        const auto i = static_cast<std::size_t>((n * steps + t) * channels + c);
        if (zero)
          CHECK(ys[i] == 0.0);
        else
          CHECK(ys[i] == doctest::Approx(xs[i] / (1.0 - rate)).epsilon(1e-6));
      }
    }
  return static_cast<double>(dropped) / static_cast<double>(batch * channels);
}

}  // namespace

TEST_CASE("SpatialDropout1D: whole channels in training, identity at inference") {
  clear_session();
  layers::SpatialDropout1D drop(0.4);
  CHECK(drop.name() == "spatial_dropout1d");
  CHECK(drop.rate() == 0.4);
  CHECK(drop.weights().empty());
  CHECK(keras_shape(drop, {7, 3}) == Shape{-1, 7, 3});
  CHECK(keras_shape(drop, {-1, 3}) == Shape{-1, -1, 3});

  Tensor x = random_tensor({40, 6, 50}, 5, 0.5, 2.0, false, DType::float32);  // never zero
  check_close(run1(drop, x, /*training=*/false), x);
  const double fraction = check_channel_mask(x, run1(drop, x, /*training=*/true), 0.4);
  CHECK(fraction == doctest::Approx(0.4).epsilon(0.15));
  // One seed, one mask; unseeded layers draw different seeds.
  layers::SpatialDropout1D a(0.5, {.seed = 7}), b(0.5, {.seed = 7});
  CHECK(a.seed() == 7);
  CHECK(run1(a, x, true).to_vector<float>() == run1(b, x, true).to_vector<float>());
  CHECK(layers::SpatialDropout1D(0.5).seed() != layers::SpatialDropout1D(0.5).seed());
  // rate 0 trains as the identity.
  layers::SpatialDropout1D none(0.0);
  check_close(run1(none, x, true), x);
}

TEST_CASE("SpatialDropout1D: the gradient is the mask; a fresh mask each run") {
  layers::SpatialDropout1D drop(0.5, {.seed = 3});
  Tensor xv = random_tensor({6, 4, 8}, 9, 0.5, 2.0, false, DType::float32);
  Graph graph;
  SymbolicTensor x = graph.placeholder({-1, 4, 8});
  CallContext ctx{.graph = graph, .training = true};
  SymbolicTensor y = drop.call(ctx, {x})[0];
  SymbolicTensor dx = gradients(ops::reduce_sum(y), {x})[0];
  REQUIRE(dx.defined());
  auto got = evaluate({y, dx}, {{x, xv}});  // one run: one mask for both
  check_channel_mask(xv, got[0], 0.5);
  const auto xs = xv.to_vector<double>(), ys = got[0].to_vector<double>(), gs = got[1].to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) CHECK(gs[i] == doctest::Approx(ys[i] / xs[i]).epsilon(1e-5));
  // The next run of the same graph draws a fresh mask.
  CHECK(evaluate({y}, {{x, xv}})[0].to_vector<float>() != got[0].to_vector<float>());
}

TEST_CASE("SpatialDropout1D: a replica's rows get the whole batch's mask for those rows") {
  // As Dropout: parallel towers draw, between them, what one device draws for the whole batch.
  layers::SpatialDropout1D drop(0.5, {.seed = 11});
  Tensor xv = random_tensor({8, 3, 16}, 4, 0.5, 2.0, false, DType::float32);
  Graph graph;
  SymbolicTensor x = graph.placeholder({-1, 3, 16});
  CallContext whole{.graph = graph, .training = true};
  SymbolicTensor y = drop.call(whole, {x})[0];
  ReplicaContext second_half{.first_row = graph.constant(Tensor::scalar(5, DType::int64))};
  CallContext tower{.graph = graph, .training = true, .replica = &second_half};
  SymbolicTensor y_part = drop.call(tower, {ops::slice(x, {5, 0, 0}, {3, -1, -1})})[0];
  auto got = evaluate({y, y_part}, {{x, xv}});
  const auto all = got[0].to_vector<float>(), part = got[1].to_vector<float>();
  REQUIRE(part.size() == 3 * 3 * 16);
  CHECK(std::vector<float>(all.begin() + 5 * 3 * 16, all.end()) == part);
}

TEST_CASE("SpatialDropout1D: configs of every Keras version and bad arguments") {
  layers::SpatialDropout1D seeded(0.3, {.seed = 42, .name = "sd"});
  json c = seeded.get_config();  // tf.keras 2's spelling (its Dropout base's fields)
  CHECK(c["rate"] == 0.3);
  CHECK(c["seed"] == 42);
  CHECK(c["noise_shape"].is_null());
  CHECK(layers::SpatialDropout1D(0.5, {.name = "sd0"}).get_config()["seed"].is_null());
  LayerPtr back = layers::layer_from_config(entry(seeded));
  CHECK(back->get_config().dump() == c.dump());
  CHECK(dynamic_cast<layers::SpatialDropout1D&>(*back).seed() == 42);

  // tf.keras 2, Keras 3 (rate, seed, name, dtype only) and Keras 1 (p).
  LayerPtr tf2 = layers::layer_from_config(json::parse(R"({"class_name": "SpatialDropout1D", "config": {
      "name": "spatial_dropout1d", "trainable": true, "dtype": "float32", "rate": 0.25, "noise_shape": null,
      "seed": null}})"));
  CHECK(dynamic_cast<layers::SpatialDropout1D&>(*tf2).rate() == 0.25);
  LayerPtr k3 = layers::layer_from_config(json::parse(R"({"module": "keras.layers", "class_name": "SpatialDropout1D",
      "config": {"rate": 0.2, "seed": 5, "name": "spatial_dropout1d_2", "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}},
      "registered_name": null})"));
  CHECK(dynamic_cast<layers::SpatialDropout1D&>(*k3).rate() == 0.2);
  CHECK(dynamic_cast<layers::SpatialDropout1D&>(*k3).seed() == 5);
  CHECK(k3->name() == "spatial_dropout1d_2");
  LayerPtr k1 = layers::layer_from_config(json::parse(
      R"({"class_name": "SpatialDropout1D", "config": {"name": "spatialdropout1d_1", "trainable": true, "p": 0.6}})"));
  CHECK(dynamic_cast<layers::SpatialDropout1D&>(*k1).rate() == 0.6);
  auto noise = message_of<ValueError>([] {
    layers::layer_from_config(json::parse(
        R"({"class_name": "SpatialDropout1D", "config": {"name": "sdn", "rate": 0.5, "noise_shape": [null, 1, 4]}})"));
  });
  CHECK(contains(noise, "SpatialDropout1D \"sdn\""));
  CHECK(contains(noise, "noise_shape"));

  auto msg = message_of<ValueError>([] { layers::SpatialDropout1D(-0.1, {.name = "sdb"}); });
  CHECK(contains(msg, "SpatialDropout1D \"sdb\""));
  CHECK(contains(msg, "rate must be in [0, 1)"));
  CHECK(contains(message_of<ValueError>([] { layers::SpatialDropout1D(1.0); }), "got 1"));
  msg = message_of<ShapeError>([] { layers::SpatialDropout1D(0.5, {.name = "sdr"})(layers::Input({4, 4, 2})); });
  CHECK(contains(msg, "SpatialDropout1D \"sdr\""));
  CHECK(contains(msg, "rank 3"));
}
