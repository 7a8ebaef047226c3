// CPU inverted dropout: a counter-based mask (core/random.h's uniform_at), so every backend draws the same one.
#include "backends/cpu/kernels.h"
#include "backends/cpu/nn_kernels.h"
#include "core/random.h"

namespace tower::cpu {

namespace {

// x -> {y = x * mask, mask}; mask[i] = 1 / (1 - rate) if uniform_at(seed, counter, i) < 1 - rate
// else 0, with a fresh counter per run of the node.
void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const double rate = ctx.attrs().get_float("rate");
  const auto seed = static_cast<std::uint64_t>(ctx.attrs().get_int("seed"));
  const std::uint64_t counter = ctx.node.next_random_counter();
  const double keep = 1.0 - rate;
  dispatch_floating(x.dtype(), "dropout", [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = ctx.outputs[0].data<T>();
    T* mask = ctx.outputs[1].data<T>();
    const T scale = static_cast<T>(1.0 / keep);
    const std::int64_t n = x.num_elements();
    // One Philox call gives the four words uniform_at would use for elements 4q .. 4q + 3.
    parallel_for(ctx, (n + 3) / 4, kElementwiseGrain / 4, [&](std::int64_t q0, std::int64_t q1) {
      for (std::int64_t q = q0; q < q1; ++q) {
        const auto words = philox4x32(seed, counter, static_cast<std::uint64_t>(q));
        for (std::int64_t k = 0; k < 4 && 4 * q + k < n; ++k) {
          const std::int64_t i = 4 * q + k;
          const double u = words[static_cast<std::size_t>(k)] * (1.0 / 4294967296.0);  // as uniform_at
          mask[i] = u < keep ? scale : T(0);
          py[i] = px[i] * mask[i];
        }
      }
    });
  });
}

}  // namespace

void register_dropout_kernels() { register_kernel("dropout", DeviceKind::cpu, dropout_kernel); }

}  // namespace tower::cpu
