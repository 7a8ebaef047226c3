// The data the loss and metric tests share (tests/layers/losses, tests/layers/metrics): float32 inputs
// on which every expected value was computed by real Keras 3.15, and a check of per-sample results.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "tower/core/graph.h"
#include "tests/support/grad_check.h"

namespace tower::testing::loss_metric_data {

using Floats = std::vector<float>;

// The data every Keras reference in the tests was computed on (same names in the python snippets).
const Floats yt = {0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0};                                      // (3, 4) one-hot
const Floats soft = {0.1f, 0.6f, 0.2f, 0.1f, 0.25f, 0.25f, 0.25f, 0.25f, 0.7f, 0, 0.3f, 0};  // (3, 4)
const Floats p = {0.2f, 0.3f, 0.1f, 0.4f, 0, 0.5f, 0.3f, 0.2f, 0.6f, 0.1f, 0.1f, 0.3f};      // (3, 4) unnormalised, a 0
const Floats logits = {1, 2, -1, 0.5f, -2, 0.3f, 1.5f, 3, 30, -30, 0, 1};                    // (3, 4)
const Floats ids = {1, 3, 0};                                                                // class ids of yt
const Floats bt = {0, 1, 1, 1, 0, 0};                                                        // (3, 2)
const Floats bt_soft = {0.2f, 0.9f, 1, 0.5f, 0, 0.3f};
const Floats bp = {0.1f, 0.8f, 1, 0.4f, 0, 0.6f};
const Floats bl = {-1.5f, 2, 20, -0.3f, -20, 0};
const Floats rt = {1, -2, 0.5f, 0, 3, -1};  // (2, 3)
const Floats rp = {1.5f, 0, 0.4f, -0.2f, 1, -1.3f};

struct Case {
  Graph g;
  SymbolicTensor c(const Shape& shape, const Floats& v) { return g.constant(Tensor::from_vector<float>(shape, v)); }
  SymbolicTensor ints(const Shape& shape, const std::vector<std::int32_t>& v) {
    return g.constant(Tensor::from_vector<std::int32_t>(shape, v));
  }
};

// Evaluates a per-sample result and checks its shape (batch,) and values.
inline void expect_values(const SymbolicTensor& t, const std::vector<double>& expected, double rtol = 2e-6,
                          double atol = 1e-6) {
  REQUIRE(t.rank() == 1);
  auto value = evaluate({t})[0];
  CHECK(value.shape() == Shape{static_cast<std::int64_t>(expected.size())});
  CHECK(value.dtype() == t.dtype());
  check_close(value, expected, rtol, atol);
}

}  // namespace tower::testing::loss_metric_data
