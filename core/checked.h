// Checked integer arithmetic for sizes, counts, ratios and offsets that come from users or files: a
// result that does not fit raises ValueError naming what was being computed, instead of wrapping into
// a small or negative number that later passes a check or indexes memory (a crash, not an error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>

namespace tower {

namespace detail {
[[noreturn]] void raise_overflow(std::int64_t a, std::string_view op, std::int64_t b, std::string_view what,
                                 std::string_view fix);
[[noreturn]] void raise_not_int(std::int64_t value, std::string_view what, std::string_view fix);
}  // namespace detail

// a + b and a * b, or ValueError "<what>: <a> + <b> is more than 9223372036854775807, the largest
// 64-bit integer[; <fix>]". `what` names the quantity and where its operands come from
// ("multi_gpu_model: the sum of the ratios 9223372036854775807:1"); `fix` says what to change.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what, std::string_view fix = {}) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) [[unlikely]]
    detail::raise_overflow(a, "+", b, what, fix);
  return sum;
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what, std::string_view fix = {}) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) [[unlikely]]
    detail::raise_overflow(a, "*", b, what, fix);
  return product;
}

// The same where `what` needs formatting (a shape printed, a list of ratios): `describe` makes it and
// runs only on overflow, so a checked sum or product in a loop formats nothing.
using Describe = std::function<std::string()>;
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const Describe& describe, std::string_view fix = {}) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) [[unlikely]]
    detail::raise_overflow(a, "+", b, describe(), fix);
  return sum;
}
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const Describe& describe, std::string_view fix = {}) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) [[unlikely]]
    detail::raise_overflow(a, "*", b, describe(), fix);
  return product;
}

// The product of `factors` (1 for none), each step checked as checked_mul (a product with a 0 factor
// is 0 even when the others would overflow, as the elements of a shape with a 0 dimension are).
inline std::int64_t checked_product(std::span<const std::int64_t> factors, const Describe& describe,
                                    std::string_view fix = {}) {
  std::int64_t product = 1;
  for (std::int64_t f : factors)
    if (f == 0) return 0;
  for (std::int64_t f : factors) product = checked_mul(product, f, describe, fix);
  return product;
}
inline std::int64_t checked_product(std::span<const std::int64_t> factors, std::string_view what,
                                    std::string_view fix = {}) {
  return checked_product(factors, [what] { return std::string(what); }, fix);
}

// elements * element_size as a byte count, checked as checked_mul (at most the largest int64, so
// offsets and sums of a few such sizes stay representable in std::size_t).
inline std::size_t checked_bytes(std::int64_t elements, std::size_t element_size, const Describe& describe,
                                 std::string_view fix = {}) {
  return static_cast<std::size_t>(checked_mul(elements, static_cast<std::int64_t>(element_size), describe, fix));
}
inline std::size_t checked_bytes(std::int64_t elements, std::size_t element_size, std::string_view what,
                                 std::string_view fix = {}) {
  return static_cast<std::size_t>(checked_mul(elements, static_cast<std::int64_t>(element_size), what, fix));
}

// value as an int (a narrowing from a 64-bit size or count), or ValueError "<what>: <value> does not
// fit in a 32-bit int (at most 2147483647)[; <fix>]".
inline int checked_int(std::int64_t value, std::string_view what, std::string_view fix = {}) {
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) [[unlikely]]
    detail::raise_not_int(value, what, fix);
  return static_cast<int>(value);
}

}  // namespace tower
