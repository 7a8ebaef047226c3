// Philox4x32-10, the Generator stream over it, the global seed, and the initializer distributions.
#include "tower/core/random.h"

#include <cmath>
#include <mutex>
#include <numbers>
#include <vector>

#include "tower/core/philox.h"

namespace tower {

namespace {

constexpr double kInv2Pow32 = kPhiloxInv2Pow32;

std::mutex seed_mutex;
std::uint64_t global_seed = 0;
std::uint64_t seed_counter = 0;

// Element type check shared by the distributions: they fill float32 or float64 only.
void expect_float_dtype(DType dtype, const char* what) {
  if (dtype != DType::float32 && dtype != DType::float64)
    raise<DTypeError>("{}: dtype {} is not supported (use float32 or float64)", what, dtype_name(dtype));
}

void expect_known(const Shape& shape, const char* what) {
  if (!shape.is_fully_known())
    raise<ShapeError>("{}: shape {} has unknown dimensions; initial values need a fully known shape", what,
                      shape.to_string());
}

// Fills a host tensor of `shape` with draw(generator) values and moves it to `device`. Values are
// drawn in double and rounded once, so float32 and float64 tensors of one seed agree to float32.
template <typename Draw>
Tensor fill_on_host(const Shape& shape, DType dtype, std::uint64_t seed, Device& device, Draw&& draw) {
  Tensor host(shape, dtype, cpu_device());
  Generator gen(seed);
  std::int64_t n = host.num_elements();
  dispatch_floating(dtype, "random", [&]<typename T>() {
    T* p = host.data<T>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(draw(gen));
  });
  if (&device == &host.device()) return host;
  return host.to(device);
}

}  // namespace

std::array<std::uint32_t, 4> philox4x32(std::uint64_t key, std::uint64_t counter_hi, std::uint64_t counter_lo) {
  const PhiloxBlock block = philox4x32_block(key, counter_hi, counter_lo);
  return {block.word[0], block.word[1], block.word[2], block.word[3]};
}

double uniform_at(std::uint64_t seed, std::uint64_t counter, std::uint64_t index) {
  return philox4x32(seed, counter, index / 4)[index % 4] * kInv2Pow32;
}

std::uint32_t Generator::next_u32() {
  if (used_ == 4) {
    block_ = philox4x32(seed_, stream_, counter_++);
    used_ = 0;
  }
  return block_[static_cast<std::size_t>(used_++)];
}

double Generator::next_uniform() { return next_u32() * kInv2Pow32; }

double Generator::next_normal() {
  // Box-Muller; u1 in (0, 1] keeps log finite. The second value of the pair is dropped: the
  // Generator holds no cache, so each call is a pure function of its position in the stream.
  double u1 = (static_cast<double>(next_u32()) + 1.0) * kInv2Pow32;
  double u2 = next_uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

void set_random_seed(std::uint64_t seed) {
  std::lock_guard lock(seed_mutex);
  global_seed = seed;
  seed_counter = 0;
}

std::uint64_t next_seed() {
  std::uint64_t seed, n;
  {
    std::lock_guard lock(seed_mutex);
    seed = global_seed;
    n = seed_counter++;
  }
  // A stream of its own (counter_hi = all ones) so derived seeds never equal a draw of `seed`.
  auto w = philox4x32(seed, ~std::uint64_t{0}, n);
  return (static_cast<std::uint64_t>(w[1]) << 32) | w[0];
}

Tensor random_uniform(Shape shape, double minval, double maxval, std::uint64_t seed, DType dtype, Device& device) {
  expect_float_dtype(dtype, "random_uniform");
  expect_known(shape, "random_uniform");
  if (!(minval < maxval))
    raise<ValueError>("random_uniform: minval ({}) must be less than maxval ({})", minval, maxval);
  const bool single = dtype == DType::float32;
  const float max32 = static_cast<float>(maxval);
  return fill_on_host(shape, dtype, seed, device, [&](Generator& g) {
    double x = minval + (maxval - minval) * g.next_uniform();
    // Rounding to float32 can reach maxval; the interval is half-open, as in Keras.
    if (single && static_cast<float>(x) >= max32) return static_cast<double>(std::nextafter(max32, -INFINITY));
    return x;
  });
}

Tensor random_normal(Shape shape, double mean, double stddev, std::uint64_t seed, DType dtype, Device& device) {
  expect_float_dtype(dtype, "random_normal");
  expect_known(shape, "random_normal");
  if (!(stddev >= 0)) raise<ValueError>("random_normal: stddev must be >= 0, got {}", stddev);
  return fill_on_host(shape, dtype, seed, device, [&](Generator& g) { return mean + stddev * g.next_normal(); });
}

Tensor truncated_normal(Shape shape, double mean, double stddev, std::uint64_t seed, DType dtype, Device& device) {
  expect_float_dtype(dtype, "truncated_normal");
  expect_known(shape, "truncated_normal");
  if (!(stddev >= 0)) raise<ValueError>("truncated_normal: stddev must be >= 0, got {}", stddev);
  return fill_on_host(shape, dtype, seed, device, [&](Generator& g) {
    double z = g.next_normal();
    while (std::abs(z) > 2.0) z = g.next_normal();  // about 4.6% of draws are redrawn
    return mean + stddev * z;
  });
}

}  // namespace tower
