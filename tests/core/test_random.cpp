// Seeded randomness: Philox4x32-10 known answers, Generator streams, the global seed, and the
// uniform / normal / truncated normal initial values (reproducibility and moments).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include "tower/core/random.h"

using namespace tower;

namespace {

struct Moments {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};

Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x, m.min = std::min(m.min, x), m.max = std::max(m.max, x);
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size());
  return m;
}

}  // namespace

TEST_CASE("random: philox4x32-10 known answers (Random123 kat_vectors)") {
  using W = std::array<std::uint32_t, 4>;
  // Key and counter all zero.
  CHECK(philox4x32(0, 0, 0) == W{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  // Key and counter all ones.
  CHECK(philox4x32(~0ull, ~0ull, ~0ull) == W{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  // The digits of pi: counter {243f6a88, 85a308d3, 13198a2e, 03707344}, key {a4093822, 299f31d0}.
  CHECK(philox4x32(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull) ==
        W{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("random: uniform_at and Generator read the same Philox words") {
  auto w = philox4x32(42, 7, 3);
  for (int k = 0; k < 4; ++k) {
    double u = uniform_at(42, 7, 12 + static_cast<std::uint64_t>(k));
    CHECK(u == static_cast<double>(w[static_cast<std::size_t>(k)]) / 4294967296.0);
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
  Generator gen(42, 7);
  for (std::uint64_t block = 0; block < 3; ++block) {
    auto b = philox4x32(42, 7, block);
    for (int k = 0; k < 4; ++k) CHECK(gen.next_u32() == b[static_cast<std::size_t>(k)]);
  }
  Generator a(5), b(5), c(6), d(5, 1);
  bool same = true, differ_seed = false, differ_stream = false;
  for (int i = 0; i < 16; ++i) {
    auto x = a.next_u32();
    same = same && x == b.next_u32();
    differ_seed = differ_seed || x != c.next_u32();
    differ_stream = differ_stream || x != d.next_u32();
  }
  CHECK(same);
  CHECK(differ_seed);
  CHECK(differ_stream);
}

TEST_CASE("random: the global seed reproduces next_seed, also across threads") {
  set_random_seed(1234);
  std::vector<std::uint64_t> first;
  for (int i = 0; i < 8; ++i) first.push_back(next_seed());
  CHECK(std::set<std::uint64_t>(first.begin(), first.end()).size() == first.size());
  set_random_seed(1234);
  for (int i = 0; i < 8; ++i) CHECK(next_seed() == first[static_cast<std::size_t>(i)]);
  set_random_seed(99);
  CHECK(next_seed() != first[0]);

  // Concurrent callers each get a distinct value of the same sequence.
  set_random_seed(7);
  std::vector<std::uint64_t> expected;
  for (int i = 0; i < 400; ++i) expected.push_back(next_seed());
  set_random_seed(7);
  std::vector<std::uint64_t> got(400);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) got[static_cast<std::size_t>(t * 100 + i)] = next_seed();
    });
  for (auto& th : threads) th.join();
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  CHECK(got == expected);
  set_random_seed(0);
}

TEST_CASE("random: same seed same values, different seeds differ") {
  for (DType dtype : {DType::float32, DType::float64}) {
    CAPTURE(dtype_name(dtype));
    auto a = random_uniform({10, 10}, -1, 1, 3, dtype), b = random_uniform({10, 10}, -1, 1, 3, dtype);
    auto c = random_uniform({10, 10}, -1, 1, 4, dtype);
    CHECK(a.dtype() == dtype);
    CHECK(a.shape() == Shape{10, 10});
    CHECK(a.to_vector<double>() == b.to_vector<double>());
    CHECK(a.to_vector<double>() != c.to_vector<double>());
    auto n1 = random_normal({50}, 0, 1, 3, dtype), n2 = random_normal({50}, 0, 1, 3, dtype);
    CHECK(n1.to_vector<double>() == n2.to_vector<double>());
    CHECK(n1.to_vector<double>() != random_normal({50}, 0, 1, 8, dtype).to_vector<double>());
    auto t1 = truncated_normal({50}, 0, 1, 3, dtype), t2 = truncated_normal({50}, 0, 1, 3, dtype);
    CHECK(t1.to_vector<double>() == t2.to_vector<double>());
  }
  // float32 and float64 of one seed agree to float32 precision.
  auto f = random_normal({20}, 0, 1, 5, DType::float32).to_vector<double>();
  auto d = random_normal({20}, 0, 1, 5, DType::float64).to_vector<double>();
  for (std::size_t i = 0; i < f.size(); ++i) CHECK(f[i] == doctest::Approx(d[i]).epsilon(1e-6));
}

TEST_CASE("random: moments of uniform, normal and truncated normal") {
  const std::int64_t n = 200000;
  auto u = moments(random_uniform({n}, -2, 3, 11, DType::float64).to_vector<double>());
  CHECK(u.mean == doctest::Approx(0.5).epsilon(0.02));
  CHECK(u.var == doctest::Approx(25.0 / 12).epsilon(0.02));
  CHECK(u.min >= -2);
  CHECK(u.max < 3);
  auto u32 = moments(random_uniform({n}, 0, 1, 12, DType::float32).to_vector<double>());
  CHECK(u32.min >= 0);
  CHECK(u32.max < 1);

  auto g = moments(random_normal({n}, 1.5, 2.0, 13, DType::float64).to_vector<double>());
  CHECK(std::abs(g.mean - 1.5) < 0.03);
  CHECK(g.var == doctest::Approx(4.0).epsilon(0.02));
  CHECK(g.max > 1.5 + 2 * 4.0);  // tails exist (beyond 4 sigma in 200k draws)

  // Truncated at 2 sigma: variance of the standard normal truncated to [-2, 2] is 0.7737.
  auto t = moments(truncated_normal({n}, -1.0, 0.5, 14, DType::float64).to_vector<double>());
  CHECK(std::abs(t.mean + 1.0) < 0.01);
  CHECK(t.var == doctest::Approx(0.7737 * 0.25).epsilon(0.02));
  CHECK(t.min >= -1.0 - 2 * 0.5);
  CHECK(t.max <= -1.0 + 2 * 0.5);
  auto t32 = truncated_normal({1000}, 0, 0.05, 15, DType::float32).to_vector<double>();
  for (double x : t32) CHECK(std::abs(x) <= 0.1 + 1e-7);
}

TEST_CASE("random: bad arguments throw") {
  CHECK_THROWS_AS(random_uniform({3}, 0, 1, 1, DType::int32), DTypeError);
  CHECK_THROWS_AS(random_normal({-1, 3}, 0, 1, 1), ShapeError);
  CHECK_THROWS_AS(random_uniform({3}, 1, 1, 1), ValueError);
  CHECK_THROWS_AS(truncated_normal({3}, 0, -1, 1), ValueError);
  try {
    random_uniform({3}, 0, 1, 1, DType::uint8);
  } catch (const DTypeError& e) {
    CHECK(std::string(e.what()).find("random_uniform") != std::string::npos);
  }
}
