// Initializers (layers/initializers.h): Keras names and aliases, seeds, variance scaling's fans and
// truncation, and the errors for bad names and arguments.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

TEST_CASE("Initializer: constants, Keras names and aliases, seeds") {
  CHECK(Initializer("zeros")({2, 3}).to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(Initializer("Ones")({4}).to_vector<float>() == std::vector<float>(4, 1.0f));
  CHECK(Initializer("one")({1}).item() == 1.0);
  CHECK(Initializer::constant(2.5)({2}, DType::float64).to_vector<double>() == std::vector<double>{2.5, 2.5});
  CHECK(Initializer("GlorotUniform").name() == "glorot_uniform");
  CHECK(Initializer("uniform").name() == "random_uniform");
  CHECK(Initializer("normal").name() == "random_normal");

  // A fixed seed reproduces the values; seed 0 draws a fresh seed each time.
  auto a = Initializer("he_normal")({20, 10}, DType::float32, 7).to_vector<float>();
  auto b = Initializer("he_normal")({20, 10}, DType::float32, 7).to_vector<float>();
  auto c = Initializer("he_normal")({20, 10}).to_vector<float>();
  auto d = Initializer("he_normal")({20, 10}).to_vector<float>();
  CHECK(a == b);
  CHECK(c != d);

  auto in_range = [](const std::vector<float>& v, double lo, double hi) {
    return std::all_of(v.begin(), v.end(), [&](float x) { return x >= lo && x < hi; });
  };
  CHECK(in_range(Initializer("uniform")({1000}).to_vector<float>(), -0.05, 0.05));
  CHECK(in_range(Initializer::random_uniform(2.0, 3.0)({100}).to_vector<float>(), 2.0, 3.0));
}

TEST_CASE("Initializer: variance scaling uses Keras's fans and truncation constant") {
  auto stats = [](const std::vector<float>& v) {
    double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    double var = 0, max_abs = 0;
    for (float x : v) var += (x - mean) * (x - mean), max_abs = std::max(max_abs, std::abs(static_cast<double>(x)));
    return std::tuple{mean, std::sqrt(var / static_cast<double>(v.size())), max_abs};
  };
  // glorot_uniform on a (3, 3, 16, 32) kernel: fan_in = 144, fan_out = 288, limit sqrt(6 / 432).
  {
    auto [mean, std, max_abs] = stats(Initializer("glorot_uniform")({3, 3, 16, 32}).to_vector<float>());
    double limit = std::sqrt(6.0 / (144 + 288));
    CHECK(max_abs <= limit);
    CHECK(max_abs > 0.98 * limit);
    CHECK(std == doctest::Approx(limit / std::sqrt(3.0)).epsilon(0.03));
    CHECK(std::abs(mean) < 0.01);
  }
  // he_normal on (200, 100): truncated at 2 stddev of sqrt(2 / 200) / 0.8796..., so the spread is sqrt(2 / 200).
  {
    auto [mean, std, max_abs] = stats(Initializer("he_normal")({200, 100}).to_vector<float>());
    double stddev = std::sqrt(2.0 / 200.0) / 0.87962566103423978;
    CHECK(max_abs <= 2.0 * stddev + 1e-6);
    CHECK(std == doctest::Approx(std::sqrt(2.0 / 200.0)).epsilon(0.02));
  }
  // lecun_uniform of a bias (rank 1): fan_in = fan_out = its length.
  {
    auto [mean, std, max_abs] = stats(Initializer("lecun_uniform")({3000}).to_vector<float>());
    CHECK(max_abs <= std::sqrt(3.0 / 3000.0));
  }
  // variance_scaling fan_out, untruncated: stddev sqrt(scale / fan_out).
  {
    auto [mean, std, max_abs] =
        stats(Initializer::variance_scaling(4.0, "fan_out", "untruncated_normal")({100, 400}).to_vector<float>());
    CHECK(std == doctest::Approx(std::sqrt(4.0 / 400.0)).epsilon(0.02));
    CHECK(max_abs > 3.0 * std::sqrt(4.0 / 400.0));  // not truncated
  }
}

TEST_CASE("Initializer: bad names and arguments") {
  auto msg = message_of<ValueError>([] { Initializer("glorot"); });
  CHECK(contains(msg, "unknown initializer \"glorot\""));
  CHECK(contains(msg, "glorot_uniform"));
  CHECK(contains(message_of<ValueError>([] { Initializer::variance_scaling(1.0, "fan_sum"); }), "fan_sum"));
  CHECK(contains(message_of<ValueError>([] { Initializer::variance_scaling(1.0, "fan_in", "normal"); }), "normal"));
  CHECK(contains(message_of<ValueError>([] { Initializer::variance_scaling(0.0); }), "scale"));
  CHECK(contains(message_of<ValueError>([] { Initializer::random_uniform(1.0, 1.0); }), "minval"));
}

TEST_CASE("Initializer: orthogonal gives orthonormal rows or columns, times gain") {
  // (rows, cols) = (prod(shape[:-1]), shape[-1]): the smaller side's vectors are orthonormal.
  for (const Shape& shape : {Shape{6, 3}, Shape{3, 12}, Shape{2, 3, 4}, Shape{5, 5}}) {
    CAPTURE(shape.to_string());
    const double gain = 1.5;
    const Tensor q = Initializer::orthogonal(gain)(shape, DType::float64, 7);
    CHECK(q.shape() == shape);
    const std::int64_t cols = shape.dim(-1), rows = shape.num_elements() / cols;
    const bool by_columns = rows >= cols;
    const std::int64_t n = by_columns ? cols : rows, len = by_columns ? rows : cols;
    auto at = [&](std::int64_t vec, std::int64_t i) {
      return by_columns ? q.data<double>()[i * cols + vec] : q.data<double>()[vec * cols + i];
    };
    for (std::int64_t a = 0; a < n; ++a)
      for (std::int64_t b = 0; b < n; ++b) {
        double dot = 0;
        for (std::int64_t i = 0; i < len; ++i) dot += at(a, i) * at(b, i);
        CHECK(dot == doctest::Approx(a == b ? gain * gain : 0.0).epsilon(1e-12));
      }
  }
  // Seeded: the same values every time; the config as tf.keras 2 writes it.
  Initializer seeded = Initializer("orthogonal").set_seed(3);
  CHECK(seeded({4, 8}).to_vector<float>() == seeded({4, 8}).to_vector<float>());
  CHECK(Initializer::orthogonal(2.0).get_config()["class_name"] == "Orthogonal");
  CHECK(Initializer::orthogonal(2.0).get_config()["config"]["gain"] == 2.0);
  CHECK(contains(message_of<ValueError>([] { Initializer("orthogonal")({4}); }), "rank 2"));
}
