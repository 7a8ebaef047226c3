// What the GPU test suites share (label gpu): the CPU-against-cuda:0 comparison of a small graph.
// Their main (gpu_main.cpp) skips the suite, with exit code 77, when no GPU is visible.
#pragma once

#include <functional>
#include <vector>

#include "tower/core/graph.h"
#include "tower/core/tensor.h"

namespace tower::testing {

using ParityBuild = std::function<SymbolicTensor(std::vector<SymbolicTensor>)>;

// Builds the ops of `build` twice over placeholders fed `inputs`, once on the CPU and once on cuda:0,
// and checks that the GPU's result matches the CPU's within rtol/atol.
void check_parity(const std::vector<Tensor>& inputs, const ParityBuild& build, double rtol = 1e-5, double atol = 1e-6);

}  // namespace tower::testing
