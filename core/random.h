// Seeded random numbers: a counter-based Philox4x32-10 generator, the global seed, and the
// initializer distributions (uniform, normal, truncated normal). A fixed seed reproduces a run.
#pragma once

#include <array>
#include <cstdint>

#include "tower/core/tensor.h"

namespace tower {

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): four 32-bit
// random words from a 64-bit key and a 128-bit counter. Pure function, the same on every device.
std::array<std::uint32_t, 4> philox4x32(std::uint64_t key, std::uint64_t counter_hi, std::uint64_t counter_lo);

// The uniform [0, 1) float for element `index` of draw number `counter` of stream `seed`:
// word index % 4 of philox4x32(seed, counter, index / 4). Dropout masks use it on every backend.
double uniform_at(std::uint64_t seed, std::uint64_t counter, std::uint64_t index);

// A sequential stream over philox4x32(seed, stream, 0, 1, 2, ...).
class Generator {
 public:
  explicit Generator(std::uint64_t seed, std::uint64_t stream = 0) : seed_(seed), stream_(stream) {}
  std::uint32_t next_u32();
  double next_uniform();  // [0, 1)
  double next_normal();   // standard normal (Box-Muller)

 private:
  std::uint64_t seed_, stream_, counter_ = 0;
  std::array<std::uint32_t, 4> block_{};
  int used_ = 4;
};

// The global seed, as keras.utils.set_random_seed. Initially 0 (deterministic by default).
void set_random_seed(std::uint64_t seed);
// A fresh seed derived from the global seed and a counter: the n-th call after set_random_seed(s)
// returns the same value in every run. Ops and initializers without an explicit seed use it.
std::uint64_t next_seed();

// Host-side initial values (copied to `device`). float32 or float64.
Tensor random_uniform(Shape shape, double minval, double maxval, std::uint64_t seed, DType dtype = DType::float32,
                      Device& device = cpu_device());
Tensor random_normal(Shape shape, double mean, double stddev, std::uint64_t seed, DType dtype = DType::float32,
                     Device& device = cpu_device());
// Normal values redrawn until within two standard deviations of the mean (Keras's TruncatedNormal).
Tensor truncated_normal(Shape shape, double mean, double stddev, std::uint64_t seed, DType dtype = DType::float32,
                        Device& device = cpu_device());

}  // namespace tower
