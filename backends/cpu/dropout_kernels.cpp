// CPU inverted dropout: a counter-based mask (core/random.h's uniform_at), so every backend draws the same one.
#include <algorithm>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/core/op_names.h"
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
    const std::int64_t n = x.num_elements(), end = first + n;
    // One Philox call gives the four words uniform_at would use for elements 4q .. 4q + 3.
    const std::int64_t q_first = first / 4;
    parallel_for(ctx, (end + 3) / 4 - q_first, kElementwiseGrain / 4, [&](std::int64_t q0, std::int64_t q1) {
      for (std::int64_t q = q_first + q0; q < q_first + q1; ++q) {
        const auto words = philox4x32(seed, counter, static_cast<std::uint64_t>(q));
        for (std::int64_t g = std::max(4 * q, first); g < std::min(4 * q + 4, end); ++g) {
          const std::int64_t i = g - first;
          const double u = words[static_cast<std::size_t>(g - 4 * q)] * (1.0 / 4294967296.0);  // as uniform_at
          mask[i] = u < keep ? scale : T(0);
          py[i] = px[i] * mask[i];
        }
      }
    });
  });
}

}  // namespace

void register_dropout_kernels() { register_kernel(op_names::dropout, DeviceKind::cpu, dropout_kernel); }

}  // namespace tower::cpu
