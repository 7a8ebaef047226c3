// CPU inverted dropout and random tensors: counter-based draws (core/random.h's uniform_at), so every
// backend draws the same ones.
#include <algorithm>
#include <cmath>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/backends/cpu/vector_math.h"
#include "tower/core/op_names.h"
#include "tower/core/philox.h"
#include "tower/core/random.h"

namespace tower::cpu {

namespace {

// The index of x's first element in the batch it is part of: the row offset input times x's row
// size (0 without one).
std::int64_t dropout_first_element(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  if (ctx.inputs.size() < 2 || x.shape().rank() == 0 || x.shape()[0] == 0) return 0;
  return ctx.inputs[1].data<std::int64_t>()[0] * (x.num_elements() / x.shape()[0]);
}

constexpr std::int64_t kCounters = 16;  // Philox counters drawn at once: 64 elements

// words[4 l + j] = word j of Philox4x32-10 (core/philox.h) for counter (counter_hi, q + l), l < 16:
// the same rounds, lane by lane, so that GCC vectorizes them (AVX2's vpmuludq, AVX-512's vpmullq)
// where one counter at a time runs them in scalar registers: a third of the time.
TOWER_CPU_CLONES void philox_counters(std::uint64_t key, std::uint64_t counter_hi, std::uint64_t q,
                                      std::uint32_t* __restrict words) {
  std::uint32_t c0[kCounters], c1[kCounters], c2[kCounters], c3[kCounters];
  for (std::int64_t l = 0; l < kCounters; ++l) {
    const std::uint64_t lo = q + static_cast<std::uint64_t>(l);
    c0[l] = static_cast<std::uint32_t>(lo), c1[l] = static_cast<std::uint32_t>(lo >> 32);
    c2[l] = static_cast<std::uint32_t>(counter_hi), c3[l] = static_cast<std::uint32_t>(counter_hi >> 32);
  }
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += kPhiloxW0, k1 += kPhiloxW1;
#pragma GCC unroll 1  // whole: -O3 would unroll the lanes into scalar code before vectorizing them
    for (std::int64_t l = 0; l < kCounters; ++l) {
      const std::uint64_t p0 = static_cast<std::uint64_t>(kPhiloxM0) * c0[l];
      const std::uint64_t p1 = static_cast<std::uint64_t>(kPhiloxM1) * c2[l];
      const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
      const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
      c0[l] = n0, c1[l] = static_cast<std::uint32_t>(p1), c2[l] = n2, c3[l] = static_cast<std::uint32_t>(p0);
    }
  }
  for (std::int64_t l = 0; l < kCounters; ++l)
    words[4 * l] = c0[l], words[4 * l + 1] = c1[l], words[4 * l + 2] = c2[l], words[4 * l + 3] = c3[l];
}

// mask[i] = scale where words[i] <= last_kept, else 0; y[i] = x[i] mask[i], for i < n.
template <typename T>
TOWER_CPU_CLONES void apply_mask(const std::uint32_t* __restrict words, std::uint32_t last_kept, T scale,
                                 const T* __restrict x, T* __restrict y, T* __restrict mask, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T m = words[i] <= last_kept ? scale : T(0);
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

// x -> {y = x * mask, mask}; mask[i] = 1 / (1 - rate) if uniform_at(seed, counter, o + i) < 1 - rate
// else 0, with a fresh counter per run of the node. o: the optional row offset times x's row size.
void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const std::int64_t first = dropout_first_element(ctx);
  const double rate = ctx.attrs().get_float("rate");
  const auto seed = static_cast<std::uint64_t>(ctx.attrs().get_int("seed"));
  const std::uint64_t counter = ctx.node.next_random_counter();
  const double keep = 1.0 - rate;
  dispatch_floating(x.dtype(), op_names::dropout, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = ctx.outputs[0].data<T>();
    T* mask = ctx.outputs[1].data<T>();
    const T scale = static_cast<T>(1.0 / keep);
    // uniform_at's u = word 2^-32 < keep exactly when word < keep 2^32 (scaling by 2^32 is exact),
    // that is word <= ceil(keep 2^32) - 1, a 32-bit number for 0 < keep <= 1.
    const auto last_kept = static_cast<std::uint32_t>(std::ceil(keep * 4294967296.0) - 1.0);
    const std::int64_t n = x.num_elements(), end = first + n;
    // One Philox call gives the four words uniform_at would use for elements 4q .. 4q + 3.
    const std::int64_t q_first = first / 4;
    parallel_for(ctx, (end + 3) / 4 - q_first, kElementwiseGrain / 4, [&](std::int64_t q0, std::int64_t q1) {
      std::uint32_t words[4 * kCounters];
      for (std::int64_t q = q_first + q0; q < q_first + q1;) {
        const std::int64_t g0 = 4 * q - first;  // element of word 0
        if (q + kCounters <= q_first + q1 && g0 >= 0 && g0 + 4 * kCounters <= n) {
          philox_counters(seed, counter, static_cast<std::uint64_t>(q), words);
          apply_mask(words, last_kept, scale, px + g0, py + g0, mask + g0, 4 * kCounters);
          q += kCounters;
          continue;
        }
        const PhiloxBlock block = philox4x32_block(seed, counter, static_cast<std::uint64_t>(q));
        const std::int64_t lo = std::max<std::int64_t>(g0, 0), hi = std::min(g0 + 4, n);
        if (lo < hi) apply_mask(block.word + (lo - g0), last_kept, scale, px + lo, py + lo, mask + lo, hi - lo);
        ++q;
      }
    });
  });
}

// The index of the output's first element in the batch it is part of (random_uniform, random_normal).
std::int64_t random_first_element(const KernelContext& ctx) {
  const Tensor& y = ctx.outputs[0];
  if (ctx.inputs.size() < 2 || y.shape().rank() == 0 || y.shape()[0] == 0) return 0;
  return ctx.inputs[1].data<std::int64_t>()[0] * (y.num_elements() / y.shape()[0]);
}

// y[i] = draw(block q, word j) for element g = first + i = 4 q + j, a fresh counter per run.
template <typename Draw>
void random_kernel(KernelContext& ctx, const char* op, Draw draw) {
  Tensor& y = ctx.outputs[0];
  const std::int64_t first = random_first_element(ctx);
  const auto seed = static_cast<std::uint64_t>(ctx.attrs().get_int("seed"));
  const std::uint64_t counter = ctx.node.next_random_counter();
  dispatch_floating(y.dtype(), op, [&]<typename T>() {
    T* py = y.data<T>();
    const std::int64_t n = y.num_elements(), q_first = first / 4;
    parallel_for(ctx, (first + n + 3) / 4 - q_first, kElementwiseGrain / 16, [&](std::int64_t q0, std::int64_t q1) {
      for (std::int64_t q = q_first + q0; q < q_first + q1; ++q) {
        const PhiloxBlock block = philox4x32_block(seed, counter, static_cast<std::uint64_t>(q));
        const std::int64_t lo = std::max<std::int64_t>(4 * q, first), hi = std::min(4 * q + 4, first + n);
        for (std::int64_t g = lo; g < hi; ++g) py[g - first] = static_cast<T>(draw(block, static_cast<int>(g - 4 * q)));
      }
    });
  });
}

// -> minval + (maxval - minval) u, u = word 2^-32 as uniform_at.
void random_uniform_kernel(KernelContext& ctx) {
  const double lo = ctx.attrs().get_float("minval"), width = ctx.attrs().get_float("maxval") - lo;
  random_kernel(ctx, op_names::random_uniform, [&](const PhiloxBlock& block, int j) {
    return lo + width * (block.word[j] * kPhiloxInv2Pow32);
  });
}

// -> mean + stddev z, z = philox_normal (Box-Muller).
void random_normal_kernel(KernelContext& ctx) {
  const double mean = ctx.attrs().get_float("mean"), stddev = ctx.attrs().get_float("stddev");
  random_kernel(ctx, op_names::random_normal,
                [&](const PhiloxBlock& block, int j) { return mean + stddev * philox_normal(block, j); });
}

}  // namespace

void register_dropout_kernels() {
  register_kernel(op_names::dropout, DeviceKind::cpu, dropout_kernel);
  register_kernel(op_names::random_uniform, DeviceKind::cpu, random_uniform_kernel);
  register_kernel(op_names::random_normal, DeviceKind::cpu, random_normal_kernel);
}

}  // namespace tower::cpu
