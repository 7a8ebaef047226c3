// float16_t (IEEE 754 binary16) and bfloat16_t (the top half of a float32): storage types for the
// half-precision dtypes, with exact round-to-nearest-even conversions from float and double.
//
// They are storage, not arithmetic types: kernels widen them to float, compute, and round the result
// back (what tensor cores and TensorFlow's Eigen kernels do for half types). The implicit conversion to
// float is exact; construction from float or double rounds to nearest, ties to even, keeps NaN a NaN,
// and overflows to infinity, as a hardware conversion (F16C's vcvtps2ph, CUDA's __float2half_rn).
// No tower includes, and every function is host and device code under nvcc: the CUDA kernels convert
// with these very functions, so a GPU rounds bit for bit as the CPU does.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define TOWER_HOST_DEVICE __host__ __device__
#else
#define TOWER_HOST_DEVICE
#endif

namespace tower {

namespace half_detail {

TOWER_HOST_DEVICE inline std::uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}
TOWER_HOST_DEVICE inline float float_of(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// double -> float rounded to odd (truncate, then set the last bit if anything was dropped). A value
// rounded to odd with at least two more bits than the final format, then rounded to nearest even, is
// the value rounded to nearest even directly; float has 13 more bits than binary16 and 16 more than
// bfloat16, so double -> half goes through it without double rounding.
// (Without <cmath>'s functions, which device code cannot call: d != d is isnan, and one less in the
// bits of a nonzero float is the next float toward zero.)
TOWER_HOST_DEVICE inline float round_to_odd(double d) {
  float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d) return f;
  const double magnitude_f = f < 0 ? -static_cast<double>(f) : static_cast<double>(f), magnitude_d = d < 0 ? -d : d;
  if (magnitude_f > magnitude_d) f = float_of(bits_of(f) - 1u);  // rounded away from zero: truncate
  return float_of(bits_of(f) | 1u);
}

// float -> binary16 bits, round to nearest even.
TOWER_HOST_DEVICE inline std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN (a NaN keeps its top payload bits and stays quiet)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u | ((abs >> 13) & 0x3ffu) : 0u));
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: rounds to inf
  if (abs < 0x38800000u) {
    // Below 2^-14: a subnormal half (or zero). Scale into the integer grid of 2^-24 and round there;
    // float's addition rounds to nearest even for us.
    const float scaled = float_of(abs) + 0.5f;  // 0.5 = 2^-1: the ulp of [0.5, 1) is 2^-24
    return static_cast<std::uint16_t>(sign | (bits_of(scaled) - bits_of(0.5f)));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even.
  const std::uint32_t odd = (abs >> 13) & 1u;
  const std::uint32_t rounded = abs + 0xfffu + odd - (112u << 23);
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

TOWER_HOST_DEVICE inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return float_of(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {                                                             // zero, subnormal
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;               // exact
    return float_of(sign | bits_of(magnitude));
  }
  return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// float -> bfloat16 bits, round to nearest even (NaN stays a quiet NaN).
TOWER_HOST_DEVICE inline std::uint16_t float_to_bfloat16_bits(float f) {
  const std::uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t odd = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7fffu + odd) >> 16);
}

TOWER_HOST_DEVICE inline float bfloat16_bits_to_float(std::uint16_t b) { return float_of(static_cast<std::uint32_t>(b) << 16); }

}  // namespace half_detail

// IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits; largest finite 65504, smallest normal 2^-14.
struct float16_t {
  std::uint16_t bits = 0;

  float16_t() = default;
  TOWER_HOST_DEVICE explicit float16_t(float f) : bits(half_detail::float_to_half_bits(f)) {}
  TOWER_HOST_DEVICE explicit float16_t(double d) : bits(half_detail::float_to_half_bits(half_detail::round_to_odd(d))) {}
  // From integers (labels cast to a half dtype): through double, exact up to 2^53.
  template <typename I>
    requires std::is_integral_v<I>
  TOWER_HOST_DEVICE explicit float16_t(I i) : float16_t(static_cast<double>(i)) {}
  TOWER_HOST_DEVICE static float16_t from_bits(std::uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
  TOWER_HOST_DEVICE operator float() const { return half_detail::half_bits_to_float(bits); }  // exact
};

// bfloat16: float32's sign and 8 exponent bits with 7 mantissa bits; float32's range.
struct bfloat16_t {
  std::uint16_t bits = 0;

  bfloat16_t() = default;
  TOWER_HOST_DEVICE explicit bfloat16_t(float f) : bits(half_detail::float_to_bfloat16_bits(f)) {}
  TOWER_HOST_DEVICE explicit bfloat16_t(double d) : bits(half_detail::float_to_bfloat16_bits(half_detail::round_to_odd(d))) {}
  template <typename I>
    requires std::is_integral_v<I>
  TOWER_HOST_DEVICE explicit bfloat16_t(I i) : bfloat16_t(static_cast<double>(i)) {}
  TOWER_HOST_DEVICE static bfloat16_t from_bits(std::uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
  TOWER_HOST_DEVICE operator float() const { return half_detail::bfloat16_bits_to_float(bits); }  // exact
};

static_assert(sizeof(float16_t) == 2 && sizeof(bfloat16_t) == 2);

}  // namespace tower
