// random_uniform and random_normal: the values against the Philox words they are defined by, their
// statistics, fresh draws per run, row offsets (towers draw the whole batch's values between them), the
// shape argument, no gradient, and bad arguments.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tests/backends/window_reference.h"
#include "tests/support/grad_check.h"
#include "tower/core/autodiff.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/philox.h"
#include "tower/core/random.h"

using namespace tower;
using tower::testing::check_throws_naming;
using tower::testing::evaluate;
using tower::testing::random_tensor;

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

}  // namespace

TEST_CASE("random ops: random_uniform is minval + (maxval - minval) uniform_at, fresh per run") {
  const std::uint64_t seed = 0xfeedbeefcafe1234ull;
  Graph g;
  auto x = g.placeholder({-1, 1000}, DType::float64);
  auto u = ops::random_uniform(x, -2.0, 3.0, seed);
  CHECK(u.shape() == Shape({-1, 1000}));
  Tensor xt = Tensor::zeros({200, 1000}, DType::float64);
  Executor executor;
  const auto first = executor.run({{x, xt}}, {u})[0].to_vector<double>();
  REQUIRE(first.size() == 200000);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < first.size(); ++i)
    if (first[i] != -2.0 + 5.0 * uniform_at(seed, 0, i)) ++mismatches;
  CHECK(mismatches == 0);
  // Uniform on [-2, 3): mean 0.5, variance 25 / 12; standard errors 0.0032 and 0.0047.
  const Moments m = moments(first);
  CHECK(std::abs(m.mean - 0.5) < 0.02);
  CHECK(std::abs(m.variance - 25.0 / 12.0) < 0.03);
  const auto second = executor.run({{x, xt}}, {u})[0].to_vector<double>();
  CHECK(second != first);
  for (std::size_t i = 0; i < 100; ++i) CHECK(second[i] == -2.0 + 5.0 * uniform_at(seed, 1, i));
}

TEST_CASE("random ops: random_normal is Box-Muller on the Philox words, with the stated moments") {
  const std::uint64_t seed = 77;
  for (DType dtype : {DType::float32, DType::float64}) {
    CAPTURE(dtype_name(dtype));
    Graph g;
    auto x = g.placeholder({-1, 7, 11}, dtype);
    auto z = ops::random_normal(x, 1.5, 0.25, seed);
    Tensor xt = Tensor::zeros({3000, 7, 11}, dtype);
    const auto v = evaluate({z}, {{x, xt}})[0].to_vector<double>();
    REQUIRE(v.size() == 3000u * 77u);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const PhiloxBlock block = philox4x32_block(seed, 0, i / 4);
      const double expected = 1.5 + 0.25 * philox_normal(block, static_cast<int>(i % 4));
      const double want = dtype == DType::float32 ? static_cast<double>(static_cast<float>(expected)) : expected;
      if (v[i] != want) ++mismatches;
    }
    CHECK(mismatches == 0);
    // n = 231000: the mean's standard error is 0.25 / sqrt(n) = 5.2e-4, the variance's 0.0625 sqrt(2 / n) = 1.8e-4.
    const Moments m = moments(v);
    CHECK(std::abs(m.mean - 1.5) < 0.003);
    CHECK(std::abs(m.variance - 0.0625) < 0.001);
    // Fourth moment of a normal: 3 sigma^4 (Box-Muller, not some other bell).
    double m4 = 0;
    for (double e : v) m4 += std::pow((e - 1.5) / 0.25, 4);
    CHECK(std::abs(m4 / static_cast<double>(v.size()) - 3.0) < 0.06);
  }
}

TEST_CASE("random ops: with a row offset, the shares draw the whole batch's values") {
  for (const std::int64_t width : {3, 37}) {
    CAPTURE(width);
    const std::vector<std::int64_t> shares =
        width == 3 ? std::vector<std::int64_t>{3, 2, 2} : std::vector<std::int64_t>{7, 6, 7};
    for (bool normal : {false, true}) {
      Graph g;
      auto x = g.placeholder({-1, width});
      auto draw = [&](const SymbolicTensor& t, const SymbolicTensor& offset) {
        return normal ? ops::random_normal(t, 0.0, 1.0, 13, offset) : ops::random_uniform(t, 0.0, 1.0, 13, offset);
      };
      std::vector<SymbolicTensor> fetches{draw(x, {})};
      for (int i = 0; i < 3; ++i)
        fetches.push_back(draw(ops::batch_share(x, shares, i), ops::batch_share_start(x, shares, i)));
      Tensor xt = random_tensor({shares[0] + shares[1] + shares[2], width}, 5, 0.1, 1.0, false, DType::float32);
      const auto r = evaluate(fetches, {{x, xt}});
      std::vector<float> joined;
      for (int i = 1; i <= 3; ++i)
        for (float v : r[static_cast<std::size_t>(i)].to_vector<float>()) joined.push_back(v);
      CHECK(joined == r[0].to_vector<float>());
    }
  }
}

TEST_CASE("random ops: the shape argument takes -1 entries from x; no gradient flows") {
  Graph g;
  auto x = g.placeholder({-1, 5, 6});
  auto u = ops::random_uniform(x, 0.0, 1.0, 3, {}, {-1, 1, 6});
  CHECK(u.shape() == Shape({-1, 1, 6}));
  auto n = ops::random_normal(x, 0.0, 1.0, 3, {}, {2, 3});
  CHECK(n.shape() == Shape({2, 3}));
  const auto r = evaluate({u, n}, {{x, random_tensor({4, 5, 6}, 1, 0.1, 1.0, false, DType::float32)}});
  CHECK(r[0].shape() == Shape({4, 1, 6}));
  CHECK(r[1].shape() == Shape({2, 3}));
  // The (4, 1, 6) draw is the first 24 values of the stream.
  const auto uv = r[0].to_vector<double>();
  for (std::size_t i = 0; i < uv.size(); ++i)
    CHECK(uv[i] == static_cast<double>(static_cast<float>(uniform_at(3, 0, i))));
  // x only gives the shape: d(sum(x + noise)) / dx is 1, nothing from the noise.
  auto y = ops::reduce_sum(ops::add(x, ops::random_normal(x, 0.0, 1.0, 4)));
  auto dx = gradients(y, {x})[0];
  const auto d = evaluate({dx}, {{x, random_tensor({2, 5, 6}, 1, 0.1, 1.0, false, DType::float32)}})[0];
  for (double v : d.to_vector<double>()) CHECK(v == 1.0);
}

TEST_CASE("random ops: bad arguments name the op and the fix") {
  Graph g;
  auto x = g.placeholder({-1, 8});
  check_throws_naming<ValueError>([&] { ops::random_uniform(x, 1.0, 0.0, 1); }, {"random_uniform", "minval"});
  check_throws_naming<ValueError>([&] { ops::random_normal(x, 0.0, -1.0, 1); }, {"random_normal", "stddev"});
  check_throws_naming<ValueError>(
      [&] {
        ops::random_normal(x, 0.0, 1.0, 1, {}, {-1, 8, -1});
      },
      {"random_normal", "-1", "axis 2"});
  check_throws_naming<ValueError>([&] { ops::random_uniform(x, 0.0, 1.0, 1, g.constant(Tensor::scalar(1.0))); },
                                  {"random_uniform", "row offset", "int64"});
  check_throws_naming<DTypeError>([&] { ops::random_normal(g.placeholder({4}, DType::int32), 0.0, 1.0, 1); },
                                  {"random_normal", "int32"});
}
