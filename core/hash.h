// The string hashes of TensorFlow's hashing ops, which Keras's Hashing layer uses: FarmHash's
// Fingerprint64 (farmhashna::Hash64, tf.strings.to_hash_bucket_fast) and SipHash-2-4 with a 128-bit
// key (tf.strings.to_hash_bucket_strong), plus the decimal string of an integer as tf.as_string writes
// it. One definition for the CPU and the CUDA kernels (nvcc), so free of tower's other headers.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define TOWER_HASH_HD __host__ __device__
#else
#define TOWER_HASH_HD
#endif

namespace tower::hash {

namespace detail {

inline constexpr std::uint64_t k0 = 0xc3a5c85c97cb3127ULL;
inline constexpr std::uint64_t k1 = 0xb492b66fbe98f273ULL;
inline constexpr std::uint64_t k2 = 0x9ae16a3b2f90404fULL;

// Little-endian loads, byte by byte (no alignment or endianness assumptions).
TOWER_HASH_HD inline std::uint64_t fetch64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}
TOWER_HASH_HD inline std::uint32_t fetch32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}
TOWER_HASH_HD inline std::uint64_t rotate(std::uint64_t v, int shift) {
  return shift == 0 ? v : ((v >> shift) | (v << (64 - shift)));
}
TOWER_HASH_HD inline std::uint64_t shift_mix(std::uint64_t v) { return v ^ (v >> 47); }
TOWER_HASH_HD inline std::uint64_t hash_len16(std::uint64_t u, std::uint64_t v, std::uint64_t mul) {
  std::uint64_t a = (u ^ v) * mul;
  a ^= (a >> 47);
  std::uint64_t b = (v ^ a) * mul;
  b ^= (b >> 47);
  return b * mul;
}
TOWER_HASH_HD inline std::uint64_t hash_len0to16(const char* s, std::uint64_t len) {
  if (len >= 8) {
    const std::uint64_t mul = k2 + len * 2, a = fetch64(s) + k2, b = fetch64(s + len - 8);
    const std::uint64_t c = rotate(b, 37) * mul + a, d = (rotate(a, 25) + b) * mul;
    return hash_len16(c, d, mul);
  }
  if (len >= 4) {
    const std::uint64_t mul = k2 + len * 2, a = fetch32(s);
    return hash_len16(len + (a << 3), fetch32(s + len - 4), mul);
  }
  if (len > 0) {
    const std::uint8_t a = static_cast<std::uint8_t>(s[0]), b = static_cast<std::uint8_t>(s[len >> 1]),
                       c = static_cast<std::uint8_t>(s[len - 1]);
    const std::uint32_t y = static_cast<std::uint32_t>(a) + (static_cast<std::uint32_t>(b) << 8);
    const std::uint32_t z = static_cast<std::uint32_t>(len) + (static_cast<std::uint32_t>(c) << 2);
    return shift_mix(y * k2 ^ z * k0) * k2;
  }
  return k2;
}
TOWER_HASH_HD inline std::uint64_t hash_len17to32(const char* s, std::uint64_t len) {
  const std::uint64_t mul = k2 + len * 2, a = fetch64(s) * k1, b = fetch64(s + 8);
  const std::uint64_t c = fetch64(s + len - 8) * mul, d = fetch64(s + len - 16) * k2;
  return hash_len16(rotate(a + b, 43) + rotate(c, 30) + d, a + rotate(b + k2, 18) + c, mul);
}
TOWER_HASH_HD inline std::uint64_t hash_len33to64(const char* s, std::uint64_t len) {
  const std::uint64_t mul = k2 + len * 2, a = fetch64(s) * k2, b = fetch64(s + 8);
  const std::uint64_t c = fetch64(s + len - 8) * mul, d = fetch64(s + len - 16) * k2;
  const std::uint64_t y = rotate(a + b, 43) + rotate(c, 30) + d;
  const std::uint64_t z = hash_len16(y, a + rotate(b + k2, 18) + c, mul);
  const std::uint64_t e = fetch64(s + 16) * mul, f = fetch64(s + 24);
  const std::uint64_t g = (y + fetch64(s + len - 32)) * mul, h = (z + fetch64(s + len - 24)) * mul;
  return hash_len16(rotate(e + f, 43) + rotate(g, 30) + h, e + rotate(f + a, 18) + g, mul);
}
struct Pair {
  std::uint64_t first, second;
};
TOWER_HASH_HD inline Pair weak_hash_len32_with_seeds(const char* s, std::uint64_t a, std::uint64_t b) {
  const std::uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
  a += w;
  b = rotate(b + a + z, 21);
  const std::uint64_t c = a;
  a += x;
  a += y;
  b += rotate(a, 44);
  return {a + z, b + c};
}

}  // namespace detail

// FarmHash Fingerprint64 (farmhashna::Hash64) of the `len` bytes at s: TensorFlow's Fingerprint64,
// stable across platforms and versions.
TOWER_HASH_HD inline std::uint64_t fingerprint64(const char* s, std::uint64_t len) {
  using namespace detail;
  if (len <= 16) return hash_len0to16(s, len);
  if (len <= 32) return hash_len17to32(s, len);
  if (len <= 64) return hash_len33to64(s, len);
  const std::uint64_t seed = 81;
  std::uint64_t x = seed, y = seed * k1 + 113, z = shift_mix(y * k2 + 113) * k2;
  Pair v{0, 0}, w{0, 0};
  x = x * k2 + fetch64(s);
  const char* end = s + ((len - 1) / 64) * 64;
  const char* last64 = end + ((len - 1) & 63) - 63;
  do {
    x = rotate(x + y + v.first + fetch64(s + 8), 37) * k1;
    y = rotate(y + v.second + fetch64(s + 48), 42) * k1;
    x ^= w.second;
    y += v.first + fetch64(s + 40);
    z = rotate(z + w.first, 33) * k1;
    v = weak_hash_len32_with_seeds(s, v.second * k1, x + w.first);
    w = weak_hash_len32_with_seeds(s + 32, z + w.second, y + fetch64(s + 16));
    const std::uint64_t t = z;
    z = x;
    x = t;
    s += 64;
  } while (s != end);
  const std::uint64_t mul = k1 + ((z & 0xff) << 1);
  s = last64;
  w.first += ((len - 1) & 63);
  v.first += w.first;
  w.first += v.first;
  x = rotate(x + y + v.first + fetch64(s + 8), 37) * mul;
  y = rotate(y + v.second + fetch64(s + 48), 42) * mul;
  x ^= w.second * 9;
  y += v.first * 9 + fetch64(s + 40);
  z = rotate(z + w.first, 33) * mul;
  v = weak_hash_len32_with_seeds(s, v.second * mul, x + w.first);
  w = weak_hash_len32_with_seeds(s + 32, z + w.second, y + fetch64(s + 16));
  const std::uint64_t t = z;
  z = x;
  x = t;
  return hash_len16(hash_len16(v.first, w.first, mul) + shift_mix(y) * k0 + z,
                    hash_len16(v.second, w.second, mul) + x, mul);
}

// SipHash-2-4 of the `len` bytes at s with the key (key0, key1) (the key's bytes are key0's then key1's,
// little-endian): TensorFlow's StrongKeyedHash, the hash of to_hash_bucket_strong(key=[key0, key1]).
TOWER_HASH_HD inline std::uint64_t siphash24(std::uint64_t key0, std::uint64_t key1, const char* s,
                                             std::uint64_t len) {
  using detail::fetch64;
  std::uint64_t v0 = key0 ^ 0x736f6d6570736575ULL, v1 = key1 ^ 0x646f72616e646f6dULL;
  std::uint64_t v2 = key0 ^ 0x6c7967656e657261ULL, v3 = key1 ^ 0x7465646279746573ULL;
  auto round = [&]() {
    v0 += v1; v1 = (v1 << 13) | (v1 >> 51); v1 ^= v0; v0 = (v0 << 32) | (v0 >> 32);
    v2 += v3; v3 = (v3 << 16) | (v3 >> 48); v3 ^= v2;
    v0 += v3; v3 = (v3 << 21) | (v3 >> 43); v3 ^= v0;
    v2 += v1; v1 = (v1 << 17) | (v1 >> 47); v1 ^= v2; v2 = (v2 << 32) | (v2 >> 32);
  };
  const std::uint64_t full = len / 8 * 8;
  for (std::uint64_t i = 0; i < full; i += 8) {
    const std::uint64_t m = fetch64(s + i);
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  std::uint64_t last = (len & 0xff) << 56;
  for (std::uint64_t i = full; i < len; ++i) last |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(s[i])) << (8 * (i - full));
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xff;
  round();
  round();
  round();
  round();
  return v0 ^ v1 ^ v2 ^ v3;
}

// The decimal digits of v as tf.as_string writes an int64 ("-12"), into buf (at least 20 bytes);
// returns the length.
TOWER_HASH_HD inline int int64_to_decimal(std::int64_t v, char* buf) {
  char tmp[20];
  int n = 0;
  // The magnitude as unsigned, so INT64_MIN needs no special case.
  std::uint64_t m = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  do {
    tmp[n++] = static_cast<char>('0' + m % 10);
    m /= 10;
  } while (m != 0);
  int len = 0;
  if (v < 0) buf[len++] = '-';
  while (n > 0) buf[len++] = tmp[--n];
  return len;
}

// Keras's Hashing bin of an integer: its decimal string hashed (Fingerprint64, or SipHash with the salt
// when salted) modulo num_bins; with a mask value, the masked value gives 0 and the others 1 + the hash
// modulo num_bins - 1 (when num_bins > 1).
TOWER_HASH_HD inline std::int64_t hashing_bin(std::int64_t value, std::int64_t num_bins, bool has_mask,
                                              std::int64_t mask_value, bool salted, std::uint64_t key0,
                                              std::uint64_t key1) {
  const bool masking = has_mask && num_bins > 1;
  if (masking && value == mask_value) return 0;
  char buf[21];
  const int len = int64_to_decimal(value, buf);
  const std::uint64_t h = salted ? siphash24(key0, key1, buf, static_cast<std::uint64_t>(len))
                                 : fingerprint64(buf, static_cast<std::uint64_t>(len));
  const std::uint64_t bins = static_cast<std::uint64_t>(masking ? num_bins - 1 : num_bins);
  return static_cast<std::int64_t>(h % bins) + (masking ? 1 : 0);
}

}  // namespace tower::hash
