// The CPU's bfloat16 GEMMs and convolutions through oneDNN (backends/cpu/onednn_bf16.h) against the
// widening path (half_kernels.cpp) they replace: both accumulate in float32 and round each output once,
// so they differ by at most one bfloat16 ulp plus the two float32 summation orders' difference. Without
// bfloat16 instructions (or oneDNN) the widening path runs both times, and the cases say so.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

#include "tower/backends/cpu/onednn_bf16.h"
#include "tower/core/graph.h"
#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::evaluate;
using tower::testing::random_tensor;
namespace bf16_path = tower::cpu::onednn_bf16;

namespace {

using Build = std::function<SymbolicTensor(const std::vector<SymbolicTensor>&)>;

// Whether this process runs the native path, said once per case.
bool announce() {
  const bool native = bf16_path::available();
  MESSAGE((std::string("oneDNN ISA ") + bf16_path::isa_name() + ": " +
           (native ? "bfloat16 through oneDNN compared with the widening path"
                   : "no native bfloat16 (or oneDNN off): the widening path compared with itself")));
  // scripts' and CTest's run with DNNL_MAX_CPU_ISA=AVX512_CORE stands for a processor without AVX512_BF16.
  if (const char* isa = std::getenv("DNNL_MAX_CPU_ISA"); isa != nullptr && std::string(isa) == "AVX512_CORE")
    CHECK_FALSE(native);
  return native;
}

// build(inputs) in bfloat16 through oneDNN and through the widening path, against the bound
// ulp + 2 k u32 S per element: one bfloat16 ulp at the larger result (both round once) plus
// twice the float32 summation error of k terms, S = build(|inputs|) in float64 (the sum of the terms'
// magnitudes). The widening path must also equal the float32 op rounded once, bit for bit.
void check_native(const char* what, const std::vector<Shape>& shapes, std::int64_t k, const Build& build) {
  INFO(what);
  const bool native = bf16_path::available();
  Graph g;
  std::vector<SymbolicTensor> half, wide, magnitude;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto h = ops::cast(g.constant(random_tensor(shapes[i], 40 + i, 0.01, 1.0)), DType::bfloat16);
    half.push_back(h);
    wide.push_back(ops::cast(h, DType::float32));
    magnitude.push_back(ops::abs(ops::cast(h, DType::float64)));
  }
  auto y = build(half);
  REQUIRE(y.dtype() == DType::bfloat16);
  auto rounded = ops::cast(build(wide), DType::bfloat16);
  auto sum_of_terms = build(magnitude);

  const std::int64_t before = bf16_path::steps_run();
  const auto onednn = evaluate({y, sum_of_terms})[0].to_vector<double>();
  CHECK(bf16_path::steps_run() - before == (native ? 1 : 0));  // the one bfloat16 op ran natively (or not)
  bf16_path::set_enabled(false);
  const auto r = evaluate({y, rounded, sum_of_terms});
  bf16_path::set_enabled(true);
  CHECK(bf16_path::steps_run() - before == (native ? 1 : 0));
  const auto widened = r[0].to_vector<double>(), f32 = r[1].to_vector<double>(), s = r[2].to_vector<double>();

  CHECK(widened == f32);  // the fallback is the float32 op rounded once
  REQUIRE(onednn.size() == widened.size());
  double worst_ulps = 0;
  int over = 0;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < onednn.size(); ++i) {
    const double a = onednn[i], b = widened[i];
    const double larger = std::max(std::fabs(a), std::fabs(b));
    const double ulp = larger > 0 ? std::ldexp(1.0, std::ilogb(larger) - 7) : 0;  // bfloat16's spacing there
    const double bound = ulp + 2.0 * static_cast<double>(k) * 0x1p-24 * s[i];
    if (!(std::fabs(a - b) <= bound) && over++ < 5)
      FAIL_CHECK("element " << i << ": oneDNN " << a << ", widened " << b << ", bound " << bound);
    differing += a != b;
    if (ulp > 0) worst_ulps = std::max(worst_ulps, std::fabs(a - b) / ulp);
  }
  CHECK(over == 0);
  MESSAGE((std::string(what) + ": largest difference " + std::to_string(worst_ulps) + " ulp of bfloat16, " +
           std::to_string(differing) + " of " + std::to_string(onednn.size()) + " elements differ"));
}

}  // namespace

TEST_CASE("onednn bf16: GEMMs (matmul with transposes, dense, batch_matmul) equal the widening path") {
  announce();
  check_native("matmul 40x48 * 48x36", {{40, 48}, {48, 36}}, 48, [](auto& x) { return ops::matmul(x[0], x[1]); });
  check_native("matmul a^T", {{48, 40}, {48, 36}}, 48, [](auto& x) { return ops::matmul(x[0], x[1], true); });
  check_native("matmul b^T", {{40, 48}, {36, 48}}, 48, [](auto& x) { return ops::matmul(x[0], x[1], false, true); });
  check_native("matmul a^T b^T", {{48, 40}, {36, 48}}, 48,
               [](auto& x) { return ops::matmul(x[0], x[1], true, true); });
  // Large enough to be split over the pool, into uneven row blocks (and a weight gradient's shape).
  check_native("matmul 257x300 * 300x130", {{257, 300}, {300, 130}}, 300,
               [](auto& x) { return ops::matmul(x[0], x[1]); });
  check_native("matmul x^T dy 300x128 * 128x130", {{128, 300}, {128, 130}}, 128,
               [](auto& x) { return ops::matmul(x[0], x[1], true); });
  check_native("dense relu", {{33, 70}, {70, 19}, {19}}, 71,
               [](auto& x) { return ops::dense(x[0], x[1], x[2], "relu"); });
  check_native("dense linear, split", {{200, 160}, {160, 128}, {128}}, 161,
               [](auto& x) { return ops::dense(x[0], x[1], x[2]); });
  check_native("batch_matmul", {{3, 2, 20, 24}, {3, 2, 24, 18}}, 24,
               [](auto& x) { return ops::batch_matmul(x[0], x[1]); });
  check_native("batch_matmul a^T b^T", {{5, 24, 20}, {5, 18, 24}}, 24,
               [](auto& x) { return ops::batch_matmul(x[0], x[1], true, true); });
}

TEST_CASE("onednn bf16: conv2d, backward data and backward filter equal the widening path") {
  announce();
  struct Case {
    Shape x, kernel;
    ops::Conv2DArgs args;
  };
  // 7 images split unevenly over the pool; strides, "same" padding, an uneven window, dilation; one
  // input channel (mnist_cnn's first layer).
  for (const auto& c : {Case{{7, 26, 26, 32}, {3, 3, 32, 64}, {}},
                        Case{{5, 13, 12, 8}, {3, 3, 8, 16}, {.strides = {2, 2}, .padding = "same"}},
                        Case{{5, 14, 15, 6}, {3, 2, 6, 5}, {.strides = {2, 3}, .padding = "valid"}},
                        Case{{3, 11, 10, 4}, {3, 3, 4, 7}, {.padding = "same", .dilation_rate = {2, 2}}},
                        Case{{4, 28, 28, 1}, {3, 3, 1, 32}, {}}}) {
    CAPTURE(c.x.to_string());
    CAPTURE(c.kernel.to_string());
    const auto& args = c.args;
    Shape y;  // conv2d's output shape, from a float32 graph
    {
      Graph g;
      y = ops::conv2d(g.placeholder(c.x), g.placeholder(c.kernel), args).shape();
    }
    const std::int64_t window = c.kernel[0] * c.kernel[1];
    check_native("conv2d", {c.x, c.kernel}, window * c.kernel[2],
                 [&](auto& x) { return ops::conv2d(x[0], x[1], args); });
    // Conv2D's fused op: its bias and ReLU added before the one rounding.
    for (const char* activation : {"linear", "relu"})
      check_native((std::string("conv2d_bias ") + activation).c_str(), {c.x, c.kernel, {c.kernel[3]}},
                   window * c.kernel[2] + 1,
                   [&](auto& x) { return ops::conv2d_bias(x[0], x[1], x[2], args, activation); });
    // dx (the x shape) from dy and the kernel; x itself only gives its shape.
    check_native("conv2d_backward_data", {y, c.kernel, c.x}, window * c.kernel[3],
                 [&](auto& x) { return ops::conv2d_backward_data(x[0], x[1], x[2], args); });
    check_native("conv2d_backward_filter", {c.x, y, c.kernel}, y[0] * y[1] * y[2],
                 [&](auto& x) { return ops::conv2d_backward_filter(x[0], x[1], x[2], args); });
  }
}

TEST_CASE("onednn bf16: switched off, the widening path runs") {
  announce();
  bf16_path::set_enabled(false);
  CHECK_FALSE(bf16_path::available());
  Graph g;
  auto a = ops::cast(g.constant(random_tensor({64, 64}, 1)), DType::bfloat16);
  auto b = ops::cast(g.constant(random_tensor({64, 64}, 2)), DType::bfloat16);
  const std::int64_t before = bf16_path::steps_run();
  auto r = evaluate({ops::matmul(a, b), ops::cast(ops::matmul(ops::cast(a, DType::float32), ops::cast(b, DType::float32)),
                                                  DType::bfloat16)});
  bf16_path::set_enabled(true);
  CHECK(bf16_path::steps_run() == before);
  CHECK(r[0].to_vector<double>() == r[1].to_vector<double>());
}
