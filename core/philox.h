// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"), the one definition
// both the CPU (core/random.cpp) and the CUDA kernels (nvcc) compile, so a dropout mask is the same
// bits on every backend. Free of tower's other headers on purpose.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define TOWER_HOST_DEVICE __host__ __device__
#else
#define TOWER_HOST_DEVICE
#endif

namespace tower {

struct PhiloxBlock {
  std::uint32_t word[4];
};

// Random123's constants for Philox4x32: the round multipliers and the Weyl key increments.
inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
inline constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1

// Four 32-bit words from a 64-bit key and a 128-bit counter (counter_hi, counter_lo). Word 0 is the
// least significant, as in Random123's ctr[0] / key[0].
TOWER_HOST_DEVICE inline PhiloxBlock philox4x32_block(std::uint64_t key, std::uint64_t counter_hi,
                                                      std::uint64_t counter_lo) {
  std::uint32_t c0 = static_cast<std::uint32_t>(counter_lo), c1 = static_cast<std::uint32_t>(counter_lo >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(counter_hi), c3 = static_cast<std::uint32_t>(counter_hi >> 32);
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += kPhiloxW0, k1 += kPhiloxW1;
    const std::uint64_t p0 = static_cast<std::uint64_t>(kPhiloxM0) * c0, p1 = static_cast<std::uint64_t>(kPhiloxM1) * c2;
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
  }
  return {{c0, c1, c2, c3}};
}

// 2^-32: maps a 32-bit word to [0, 1).
constexpr double kPhiloxInv2Pow32 = 1.0 / 4294967296.0;

// The standard normal of word j of `block` (random_normal): Box-Muller on the pair of words 2p, 2p + 1
// that holds j (p = j / 2), the radius from (word 2p + 1) 2^-32 in (0, 1] (never log 0) and the angle
// from word 2p + 1; even j take the cosine, odd j the sine. Computed in double with the C library's
// functions on the host and CUDA's on the device (which agree to an ulp or two of a double).
TOWER_HOST_DEVICE inline double philox_normal(const PhiloxBlock& block, int j) {
  const int p = j & ~1;
  const double u1 = (static_cast<double>(block.word[p]) + 1.0) * kPhiloxInv2Pow32;
  const double u2 = static_cast<double>(block.word[p + 1]) * kPhiloxInv2Pow32;
  const double r = ::sqrt(-2.0 * ::log(u1)), angle = 6.283185307179586476925 * u2;
  return (j & 1) ? r * ::sin(angle) : r * ::cos(angle);
}

}  // namespace tower
