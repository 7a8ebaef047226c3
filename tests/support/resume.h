// Helpers of the tests that crash a fit and resume it: a callback that crashes, and bit-for-bit
// comparison of weights.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "tower/layers/callbacks/callback.h"

namespace tower::testing {

// Throws "simulated crash" at batch `step` of epoch `epoch`: a crash in the middle of fit.
struct CrashAt : Callback {
  int epoch, current = 0;
  std::int64_t step;
  CrashAt(int e, std::int64_t s) : epoch(e), step(s) {}
  void on_epoch_begin(int e, const Logs&) override { current = e; }
  void on_train_batch_begin(std::int64_t b, const Logs&) override {
    if (current == epoch && b == step) throw std::runtime_error("simulated crash");
  }
};

// The same tensors to the bit (e.g. two models' get_weights()).
inline bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].nbytes() != b[i].nbytes() || std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()) != 0)
      return false;
  return true;
}

}  // namespace tower::testing
