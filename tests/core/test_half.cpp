// float16_t and bfloat16_t (core/half.h): exact widening, round-to-nearest-even from float and double,
// against GCC's _Float16 conversions (correctly rounded) and a double-precision reference for bfloat16.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tower/core/half.h"
#include "tower/core/tensor.h"

using namespace tower;

namespace {
std::uint16_t bits_of(_Float16 h) {
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float float_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// bfloat16 round to nearest even by the definition: of the two neighbours (truncation, and one ulp
// up), the nearer; on a tie, the one with an even last bit. Past the largest finite bfloat16 the upper
// neighbour is infinity, which IEEE 754 places at 2^128 for rounding (so from max + half an ulp up,
// values round to infinity).
std::uint16_t bfloat16_reference(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t down = u & 0xffff0000u, up = down + 0x10000u;
  const bool up_is_inf = (up & 0x7fffffffu) == 0x7f800000u;
  const double d = f, lo = float_from_bits(down), hi = up_is_inf ? std::copysign(0x1p128, d) : float_from_bits(up);
  const double dlo = std::fabs(d - lo), dhi = std::fabs(hi - d);
  if (dlo < dhi) return static_cast<std::uint16_t>(down >> 16);
  if (dhi < dlo) return static_cast<std::uint16_t>(up >> 16);
  return static_cast<std::uint16_t>(((down >> 16) & 1u) ? up >> 16 : down >> 16);
}
}  // namespace

TEST_CASE("half: every float16 and bfloat16 widens exactly and rounds back to itself") {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = float16_t::from_bits(static_cast<std::uint16_t>(b));
    const float f = h;
    _Float16 reference;
    std::memcpy(&reference, &b, 2);
    if (std::isnan(f)) {
      CHECK(std::isnan(static_cast<float>(reference)));
      CHECK(std::isnan(static_cast<float>(float16_t(f))));
      continue;
    }
    REQUIRE(f == static_cast<float>(reference));
    REQUIRE(float16_t(f).bits == b);
    const auto bf = bfloat16_t::from_bits(static_cast<std::uint16_t>(b));
    if (!std::isnan(static_cast<float>(bf))) REQUIRE(bfloat16_t(static_cast<float>(bf)).bits == b);
  }
}

TEST_CASE("half: float -> float16 / bfloat16 round to nearest even, on a sweep of every float pattern") {
  // Every 61st float bit pattern (70 million values: all exponents, subnormals, halfway cases) and the
  // exact halfway points of float16 around the edges.
  std::uint64_t checked = 0;
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 61) {
    const float f = float_from_bits(static_cast<std::uint32_t>(u));
    if (std::isnan(f)) continue;
    const auto h = float16_t(f);
    if (h.bits != bits_of(static_cast<_Float16>(f))) {
      FAIL_CHECK("float16 of " << f << " (bits " << u << "): " << h.bits << " != " << bits_of(static_cast<_Float16>(f)));
      break;
    }
    if (bfloat16_t(f).bits != bfloat16_reference(f)) {
      FAIL_CHECK("bfloat16 of " << f << " (bits " << u << ")");
      break;
    }
    ++checked;
  }
  CHECK(checked > 60'000'000);
  // Ties: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> 1 (even); 1 + 3·2^-11 -> 1 + 2^-9.
  CHECK(static_cast<float>(float16_t(1.0f + 0x1p-11f)) == 1.0f);
  CHECK(static_cast<float>(float16_t(1.0f + 3 * 0x1p-11f)) == 1.0f + 0x1p-9f);
  CHECK(static_cast<float>(float16_t(65504.0f)) == 65504.0f);
  CHECK(std::isinf(static_cast<float>(float16_t(65520.0f))));  // halfway to 2^16: rounds to even, inf
  CHECK(static_cast<float>(float16_t(65519.99f)) == 65504.0f);
  CHECK(static_cast<float>(float16_t(0x1p-25f)) == 0.0f);                // halfway to the smallest subnormal
  CHECK(static_cast<float>(float16_t(0x1.000002p-25f)) == 0x1p-24f);
  CHECK(static_cast<float>(bfloat16_t(1.0f + 0x1p-8f)) == 1.0f);          // tie -> even
  CHECK(static_cast<float>(bfloat16_t(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);
  CHECK(std::isinf(static_cast<float>(bfloat16_t(std::numeric_limits<float>::max()))));
  CHECK(std::signbit(static_cast<float>(float16_t(-0.0f))));
  CHECK(std::isnan(static_cast<float>(bfloat16_t(std::nanf("")))));
}

TEST_CASE("half: double -> half rounds once (no double rounding through float)") {
  // 1 + 2^-11 + 2^-40 is just above the float16 tie: nearest is 1 + 2^-10. Through float (which rounds
  // it to 1 + 2^-11, the tie) it would wrongly give 1.
  const double just_above = 1.0 + 0x1p-11 + 0x1p-40;
  CHECK(static_cast<float>(float16_t(just_above)) == 1.0f + 0x1p-10f);
  CHECK(static_cast<float>(bfloat16_t(1.0 + 0x1p-8 + 0x1p-40)) == 1.0f + 0x1p-7f);
  CHECK(static_cast<float>(float16_t(1.0 + 0x1p-11)) == 1.0f);  // an exact tie stays even
  for (double d : {0.1, -3.3, 1e-6, 7e-8, 65519.0, 65520.0, 1e300, -1e-300}) {
    INFO(d);
    CHECK(float16_t(d).bits == bits_of(static_cast<_Float16>(d)));
  }
}

TEST_CASE("half: tensors hold float16 and bfloat16 (full, to_vector, cast between every float dtype)") {
  const Tensor h = Tensor::full({3}, 0.1, DType::float16);
  CHECK(h.dtype() == DType::float16);
  CHECK(h.nbytes() == 6);
  CHECK(h.to_vector<float>()[0] == static_cast<float>(float16_t(0.1)));
  const Tensor b = Tensor::from_vector<bfloat16_t>({2}, {bfloat16_t(1.5f), bfloat16_t(-2.0f)});
  CHECK(b.to_vector<double>() == std::vector<double>{1.5, -2.0});
  CHECK(Tensor::scalar(3, DType::bfloat16).item() == 3.0);
}
