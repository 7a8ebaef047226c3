// GaussianNoise, GaussianDropout and AlphaDropout: identity at inference, the noise's statistics in
// training, seeds, fresh draws, gradients, AlphaDropout's noise_shape, configs of tf.keras 2 and
// Keras 3, and bad arguments.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::evaluate;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::run1;

using tower::testing::entry;

namespace {

struct Moments {
  double mean = 0, variance = 0;
};

Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= static_cast<double>(v.size() - 1);
  return m;
}

// A Keras 3 config entry: the DTypePolicy dtype and the module.
json keras3(const char* class_name, const char* fields) {
  json config = json::parse(fields);
  config["trainable"] = true;
  config["dtype"] = json::parse(
      R"({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null})");
  return {{"module", "keras.layers"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
}

}  // namespace

TEST_CASE("GaussianNoise: x + N(0, stddev^2) in training, identity at inference") {
  clear_session();
  layers::GaussianNoise noise(0.3);
  CHECK(noise.name() == "gaussian_noise");
  CHECK(noise.weights().empty());
  CHECK(keras_shape(noise, {7, 3}) == Shape{-1, 7, 3});
  Tensor x = Tensor::full({400, 250}, 2.0);
  check_close(run1(noise, x, /*training=*/false), x);
  // n = 100000: the mean's standard error is 0.3 / sqrt(n) = 9.5e-4, the variance's 0.09 sqrt(2 / n) = 4e-4.
  const auto y = run1(noise, x, /*training=*/true).to_vector<double>();
  const Moments m = moments(y);
  CHECK(std::abs(m.mean - 2.0) < 0.004);
  CHECK(std::abs(m.variance - 0.09) < 0.002);
  // One seed, one draw per run; unseeded layers draw different seeds; stddev 0 trains as the identity.
  layers::GaussianNoise a(0.5, {.seed = 9}), b(0.5, {.seed = 9});
  CHECK(a.seed() == 9);
  CHECK(run1(a, x, true).to_vector<float>() == run1(b, x, true).to_vector<float>());
  CHECK(layers::GaussianNoise(0.5).seed() != layers::GaussianNoise(0.5).seed());
  layers::GaussianNoise none(0.0);
  check_close(run1(none, x, true), x);
}

TEST_CASE("GaussianDropout: x * N(1, rate / (1 - rate)) in training; its gradient is the noise") {
  clear_session();
  layers::GaussianDropout drop(0.2, {.seed = 4});
  CHECK(drop.name() == "gaussian_dropout");
  Tensor x = Tensor::full({400, 250}, 1.0);
  check_close(run1(drop, x, false), x);
  // Variance 0.25; standard errors 1.6e-3 (mean) and 1.1e-3 (variance).
  const Moments m = moments(run1(drop, x, true).to_vector<double>());
  CHECK(std::abs(m.mean - 1.0) < 0.007);
  CHECK(std::abs(m.variance - 0.25) < 0.005);

  Graph graph;
  SymbolicTensor xs = graph.placeholder({-1, 8});
  CallContext ctx{.graph = graph, .training = true};
  SymbolicTensor y = drop.call(ctx, {xs})[0];
  SymbolicTensor dx = gradients(ops::reduce_sum(y), {xs})[0];
  REQUIRE(dx.defined());
  Tensor xv = testing::random_tensor({5, 8}, 3, 0.5, 2.0, false, DType::float32);
  auto got = evaluate({y, dx}, {{xs, xv}});
  const auto xd = xv.to_vector<double>(), yd = got[0].to_vector<double>(), gd = got[1].to_vector<double>();
  for (std::size_t i = 0; i < xd.size(); ++i) CHECK(gd[i] == doctest::Approx(yd[i] / xd[i]).epsilon(1e-5));
  CHECK(evaluate({y}, {{xs, xv}})[0].to_vector<float>() != got[0].to_vector<float>());  // fresh noise per run
}

TEST_CASE("AlphaDropout: keeps a standard-normal input's mean and variance, drops to a' a + b") {
  clear_session();
  const double rate = 0.3;
  layers::AlphaDropout drop(rate, {.seed = 8});
  CHECK(drop.name() == "alpha_dropout");
  Tensor x = random_normal({500, 400}, 0.0, 1.0, 21);
  check_close(run1(drop, x, false), x);
  const auto xs = x.to_vector<double>(), ys = run1(drop, x, true).to_vector<double>();
  // Keras's formula: dropped elements all take a alpha' + b, kept ones a x + b.
  const double alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946;
  const double a = std::pow((1 - rate) * (1 + rate * alpha_p * alpha_p), -0.5), b = -a * alpha_p * rate;
  std::size_t dropped = 0, wrong = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const bool is_dropped = std::abs(ys[i] - (a * alpha_p + b)) < 1e-6 && std::abs(ys[i] - (a * xs[i] + b)) > 1e-6;
    dropped += is_dropped;
    if (!is_dropped && std::abs(ys[i] - (a * xs[i] + b)) > 1e-5) ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(static_cast<double>(dropped) / static_cast<double>(xs.size()) == doctest::Approx(rate).epsilon(0.02));
  // n = 200000: mean and variance within a few standard errors (2.2e-3 and 3.2e-3) of 0 and 1.
  const Moments mx = moments(xs), my = moments(ys);
  CHECK(std::abs(my.mean - mx.mean) < 0.01);
  CHECK(std::abs(my.variance - mx.variance) < 0.015);
  layers::AlphaDropout none(0.0);
  check_close(run1(none, x, true), x);
}

TEST_CASE("AlphaDropout: noise_shape shares the mask along axes of size 1") {
  layers::AlphaDropout drop(0.5, {.noise_shape = {-1, 1, 6}, .seed = 2});
  Tensor x = random_normal({10, 5, 6}, 0.0, 1.0, 3);
  const auto xs = x.to_vector<double>(), ys = run1(drop, x, true).to_vector<double>();
  const double alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946;
  const double a = std::pow(0.5 * (1 + 0.5 * alpha_p * alpha_p), -0.5), b = -a * alpha_p * 0.5;
  std::size_t kept = 0;
  for (std::int64_t n = 0; n < 10; ++n)
    for (std::int64_t c = 0; c < 6; ++c) {
      const auto at = [&](std::int64_t t) { return static_cast<std::size_t>((n * 5 + t) * 6 + c); };
      const bool keep = std::abs(ys[at(0)] - (a * xs[at(0)] + b)) < 1e-5;
      kept += keep;
      for (std::int64_t t = 0; t < 5; ++t)
        CHECK(ys[at(t)] == doctest::Approx(keep ? a * xs[at(t)] + b : a * alpha_p + b).epsilon(1e-5));
    }
  CHECK(kept > 10);
  CHECK(kept < 50);
  auto msg = message_of<ValueError>([] {
    layers::AlphaDropout(0.5, {.noise_shape = {-1, 2, 6}, .name = "ad"})(layers::Input({5, 6}));
  });
  CHECK(contains(msg, "AlphaDropout \"ad\""));
  CHECK(contains(msg, "noise_shape"));
  CHECK(contains(msg, "use 1, 5 or None"));
}

TEST_CASE("noise layers: configs of tf.keras 2 and Keras 3 round-trip") {
  layers::GaussianNoise gn(0.1, {.seed = 3, .name = "gn"});
  json c = gn.get_config();
  CHECK(c["stddev"] == 0.1);
  CHECK(c["seed"] == 3);
  CHECK(layers::layer_from_config(entry(gn))->get_config().dump() == c.dump());
  LayerPtr k3 = layers::layer_from_config(keras3("GaussianNoise", R"({"name": "gn3", "stddev": 0.25, "seed": 3})"));
  CHECK(dynamic_cast<layers::GaussianNoise&>(*k3).stddev() == 0.25);
  CHECK(dynamic_cast<layers::GaussianNoise&>(*k3).seed() == 3);
  LayerPtr k1 = layers::layer_from_config(
      json::parse(R"({"class_name": "GaussianNoise", "config": {"name": "g1", "sigma": 0.4}})"));
  CHECK(dynamic_cast<layers::GaussianNoise&>(*k1).stddev() == 0.4);

  layers::GaussianDropout gd(0.2, {.name = "gd"});
  c = gd.get_config();
  CHECK(c["rate"] == 0.2);
  CHECK(c["seed"].is_null());
  CHECK(layers::layer_from_config(entry(gd))->get_config().dump() == c.dump());
  LayerPtr gd3 = layers::layer_from_config(keras3("GaussianDropout", R"({"name": "gd3", "rate": 0.2, "seed": null})"));
  CHECK(dynamic_cast<layers::GaussianDropout&>(*gd3).rate() == 0.2);

  layers::AlphaDropout ad(0.3, {.name = "ad"});
  c = ad.get_config();  // tf.keras 2 writes no noise_shape
  CHECK(c["rate"] == 0.3);
  CHECK(!c.contains("noise_shape"));
  CHECK(layers::layer_from_config(entry(ad))->get_config().dump() == c.dump());
  LayerPtr ad3 = layers::layer_from_config(
      keras3("AlphaDropout", R"({"name": "ad3", "rate": 0.3, "seed": 1, "noise_shape": [null, 1, 4]})"));
  auto& alpha = dynamic_cast<layers::AlphaDropout&>(*ad3);
  CHECK(alpha.noise_shape() == std::vector<std::int64_t>{-1, 1, 4});
  CHECK(alpha.get_config()["noise_shape"] == json::parse("[null, 1, 4]"));
  CHECK(layers::layer_from_config(entry(alpha))->get_config().dump() == alpha.get_config().dump());
}

TEST_CASE("noise layers: bad arguments say what is wrong and how to fix it") {
  auto msg = message_of<ValueError>([] { layers::GaussianNoise(-0.1, {.name = "gn"}); });
  CHECK(contains(msg, "GaussianNoise \"gn\""));
  CHECK(contains(msg, "stddev must be a finite number >= 0"));
  msg = message_of<ValueError>([] { layers::GaussianDropout(1.0, {.name = "gd"}); });
  CHECK(contains(msg, "GaussianDropout \"gd\""));
  CHECK(contains(msg, "rate must be in [0, 1)"));
  msg = message_of<ValueError>([] { layers::AlphaDropout(-0.5, {.name = "ad"}); });
  CHECK(contains(msg, "AlphaDropout \"ad\""));
  CHECK(contains(msg, "rate must be in [0, 1)"));
  msg = message_of<ValueError>([] { layers::AlphaDropout(0.5, {.noise_shape = {-1, 0}, .name = "ad0"}); });
  CHECK(contains(msg, "noise_shape [null,0] has 0 at index 1"));
  msg = message_of<ValueError>([] {
    layers::layer_from_config(json::parse(R"({"class_name": "GaussianDropout", "config": {"name": "gdm"}})"));
  });
  CHECK(contains(msg, "\"rate\" is missing"));
  msg = message_of<ValueError>([] {
    layers::layer_from_config(
        json::parse(R"({"class_name": "AlphaDropout", "config": {"name": "adx", "rate": 0.1, "noise_shape": "all"}})"));
  });
  CHECK(contains(msg, "noise_shape"));
}
