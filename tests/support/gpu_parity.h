// What the GPU test suites share (label gpu): the CPU-against-cuda:0 comparison of a small graph.
// Their main (gpu_main.cpp) skips the suite, with exit code 77, when no GPU is visible. The GEMM error
// bound below is plain host code, tested on the CPU (tests/backends/test_math_ops.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tower/core/graph.h"
#include "tower/core/tensor.h"

namespace tower::testing {

using ParityBuild = std::function<SymbolicTensor(std::vector<SymbolicTensor>)>;

// Builds the ops of `build` twice over placeholders fed `inputs`, once on the CPU and once on cuda:0,
// and runs them: the CPU's result and the GPU's, both on the host.
std::pair<Tensor, Tensor> results_on_cpu_and_gpu(const std::vector<Tensor>& inputs, const ParityBuild& build);

// The same, checking that the GPU's result matches the CPU's within rtol/atol.
void check_parity(const std::vector<Tensor>& inputs, const ParityBuild& build, double rtol = 1e-5, double atol = 1e-6);

// ---- GEMM-like ops: a bound from the reduction length, not a fixed tolerance --------------------------
// Two correct float32 GEMMs that add their k products in different orders differ by about
// sqrt(k)·u·Σ|a||b| (u = 2^-24), more than a fixed rtol of 1e-5 allows for outputs that cancel. So
// GEMM-like results are checked against a float64 reference with the worst-case bound of a k-term dot
// product (Higham's γ_k = k·u / (1 - k·u)), plus two roundings for a bias add and the output:
//   |result - reference| <= (γ_k + 2u) · Σ|a||b|   elementwise.

// (γ_k + 2u) for `dtype` (float32 or float64): the relative part of the bound.
double gemm_error_bound(std::int64_t k, DType dtype);

struct GemmBoundCheck {
  bool ok = true;
  std::int64_t worst = -1;  // the element closest to (or furthest past) its bound
  double worst_ratio = 0;   // |result - reference| / bound there (<= 1 passes)
  std::string describe() const;
};
// result: the op in `dtype`; reference and magnitude (Σ|a||b| per element): float64, same shape.
GemmBoundCheck check_gemm_bound(const Tensor& result, const Tensor& reference, const Tensor& magnitude, std::int64_t k,
                                DType dtype);

// For ops linear in each input (matmul, batch_matmul, dense without activation, convolutions and their
// backward ops): builds `build` on cuda:0 and on the CPU in the inputs' dtype, and on the CPU in float64
// on the inputs (the reference) and on their absolute values (Σ|a||b|), and checks both results against
// the bound of reduction length k. A fused ReLU keeps the bound (it only moves values toward 0).
void check_gemm_parity(const std::vector<Tensor>& inputs, const ParityBuild& build, std::int64_t k);

}  // namespace tower::testing
