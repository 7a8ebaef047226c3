#include "tower/backends/cpu/vector_math.h"

#include <algorithm>
#include <limits>

#include "tower/core/gate_activation.h"

namespace tower::cpu {

namespace {
constexpr std::int64_t kLanes = 16;  // partial results: one AVX-512 register of floats
}  // namespace

TOWER_CPU_CLONES float max_of(const float* __restrict x, std::int64_t n) {
  float lanes[kLanes];
  std::fill_n(lanes, kLanes, -std::numeric_limits<float>::infinity());
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::int64_t j = 0; j < kLanes; ++j) lanes[j] = std::max(lanes[j], x[i + j]);
  float m = -std::numeric_limits<float>::infinity();
  for (std::int64_t j = 0; j < kLanes; ++j) m = std::max(m, lanes[j]);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

TOWER_CPU_CLONES float exp_shifted(const float* __restrict x, float shift, float* __restrict y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {  // 0 below the normal floats, as libm's underflow (a masked logit)
    const float d = x[i] - shift;
    y[i] = d < -87.3f ? 0.0f : gate_math::exp(d);
  }
  float lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::int64_t j = 0; j < kLanes; ++j) lanes[j] += y[i + j];
  float sum = 0;
  for (std::int64_t j = 0; j < kLanes; ++j) sum += lanes[j];
  for (; i < n; ++i) sum += y[i];
  return sum;
}

TOWER_CPU_CLONES float dot(const float* __restrict a, const float* __restrict b, std::int64_t n) {
  float lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::int64_t j = 0; j < kLanes; ++j) lanes[j] += a[i + j] * b[i + j];
  float sum = 0;
  for (std::int64_t j = 0; j < kLanes; ++j) sum += lanes[j];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace tower::cpu
