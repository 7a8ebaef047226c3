// check_gradients: the generic finite-difference gradient checker every differentiable op uses.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tower/core/executor.h"
#include "tower/core/graph.h"

namespace tower::testing {

struct GradCheckOptions {
  double delta = 1e-6;       // central-difference step
  double tolerance = 1e-5;   // max |analytic - numeric| / max(1, |numeric|)
  double min_abs = 0.1;      // random inputs are drawn with |x| in [min_abs, max_abs] (never zero)
  double max_abs = 1.0;
  bool positive = false;     // draw only positive values (log, sqrt)
  std::uint64_t seed = 1;
};

// Builds `build(inputs)` on float64 placeholders of `shapes`, filled with random values (never
// zero), and checks the autodiff gradient of sum(output * R), R a fixed random tensor, against
// central differences for every input element. Several outputs are all weighted and summed.
// `build` may add constants (integer labels, say) to the graph of its inputs. Fails the doctest
// case, naming the input and element, when they differ.
void check_gradients(const std::vector<Shape>& shapes,
                     const std::function<std::vector<SymbolicTensor>(const std::vector<SymbolicTensor>&)>& build,
                     GradCheckOptions options = {});

// Random float64 tensor with |x| in [min_abs, max_abs] (random sign unless positive).
Tensor random_tensor(const Shape& shape, std::uint64_t seed, double min_abs = 0.1, double max_abs = 1.0,
                     bool positive = false, DType dtype = DType::float64);

// Runs the graph of `fetches` on cpu:0 and returns the fetched values.
std::vector<Tensor> evaluate(const std::vector<SymbolicTensor>& fetches, const FeedMap& feeds = {});

// Asserts two tensors have the same shape and elements within rtol/atol (doctest CHECKs; NaN fails).
void check_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-6, double atol = 1e-6);
void check_close(const Tensor& actual, const std::vector<double>& expected, double rtol = 1e-6, double atol = 1e-6);

}  // namespace tower::testing
