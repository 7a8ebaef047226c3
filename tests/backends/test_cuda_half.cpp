// float16 and bfloat16 on the GPU (label gpu), backends/cuda/half_ops.cpp: casts round bit for bit as the
// CPU's; ops without half kernels (widened to float32, rounded once) give the CPU's half results; the
// native half GEMMs and convolutions (tensor cores, float32 accumulation) stay within a half-precision
// bound of a float64 reference; a mixed-precision convnet trains on cuda:0 as on the CPU, and
// LossScaleOptimizer skips an overflowing step there. With no visible GPU, gpu_main.cpp skips the suite.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/gpu_parity.h"
#include "tests/support/grad_check.h"
#include "tests/support/policy_scope.h"
#include "tests/support/weights.h"

using namespace tower;
using tower::testing::flat_weights;
using tower::testing::ParityBuild;
using tower::testing::PolicyScope;
using tower::testing::random_tensor;

namespace {

constexpr DType kHalves[] = {DType::float16, DType::bfloat16};

// The unit roundoff of a half dtype.
double unit_roundoff(DType half) { return half == DType::float16 ? 0x1p-11 : 0x1p-8; }

// `inputs` cast to `source` on the CPU (so both devices see the same values), then f once on the CPU
// and once on cuda:0; both results on the host.
std::pair<Tensor, Tensor> on_both(const std::vector<Tensor>& inputs, DType source, const ParityBuild& f) {
  std::vector<Tensor> converted;
  for (const Tensor& t : inputs) {
    Graph g;
    converted.push_back(testing::evaluate({ops::cast(g.constant(t), source)})[0]);
  }
  return testing::results_on_cpu_and_gpu(converted, f);
}

// Equal bit for bit (compared as doubles, which every dtype here widens to exactly; -0 is not 0), NaN
// where the other is NaN.
void check_same_values(const Tensor& cpu, const Tensor& gpu) {
  REQUIRE(cpu.dtype() == gpu.dtype());
  REQUIRE(cpu.shape() == gpu.shape());
  const auto a = cpu.to_vector<double>(), b = gpu.to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CAPTURE(a[i]);
    CAPTURE(b[i]);
    if (std::isnan(a[i]))
      CHECK(std::isnan(b[i]));
    else
      CHECK(std::memcmp(&a[i], &b[i], sizeof(double)) == 0);
  }
}

// |gpu - cpu| <= ulps · 2u · max|cpu| elementwise: for ops whose float32 kernels differ between the devices
// in the last float bits (transcendentals, sums in another order), which rounding to half may turn into
// one half ulp.
void check_within_ulps(const Tensor& cpu, const Tensor& gpu, DType half, double ulps) {
  REQUIRE(cpu.shape() == gpu.shape());
  const auto a = cpu.to_vector<double>(), b = gpu.to_vector<double>();
  double scale = 0;
  for (double v : a) scale = std::max(scale, std::fabs(v));
  const double bound = ulps * 2 * unit_roundoff(half) * scale;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::isfinite(b[i]));
    CHECK(std::fabs(a[i] - b[i]) <= bound);
  }
}

}  // namespace

TEST_CASE("cuda half: casts to and from float16/bfloat16 round bit for bit as the CPU's") {
  // Ties to even in both types, subnormals, the overflow edge of float16 (65504 stays, 65520 goes to
  // inf), doubles past float32's range, signed zeros, inf and NaN; then random magnitudes.
  std::vector<double> values = {0.0, -0.0, 1.0, 1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8,
                                65504.0, 65519.99, 65520.0, -70000.0, 0x1p-24, 0x1p-25, 3 * 0x1p-26, 1e-8, 1.0 / 3,
                                -2.0 / 3, 1e39, -1e-46, 3.4e38, std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
  for (double v : random_tensor({200}, 7, 1e-6, 1e5, false, DType::float64).to_vector<double>()) values.push_back(v);
  const Tensor floats = Tensor::from_vector<double>({static_cast<std::int64_t>(values.size())}, values);
  const Tensor counts = random_tensor({64}, 8, 1, 250, true, DType::float64);  // in every integer type's range
  for (DType half : kHalves)
    for (DType other : {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int32, DType::int64,
                        DType::uint8}) {
      CAPTURE(dtype_name(half));
      CAPTURE(dtype_name(other));
      // Integer casts take finite values in every type's range (truncated toward zero on both devices).
      const Tensor& x = is_floating(other) ? floats : counts;
      auto [cpu_in, gpu_in] = on_both({x}, other, [&](std::vector<SymbolicTensor> v) { return ops::cast(v[0], half); });
      check_same_values(cpu_in, gpu_in);
      auto [cpu_out, gpu_out] = on_both({x}, half, [&](std::vector<SymbolicTensor> v) { return ops::cast(v[0], other); });
      check_same_values(cpu_out, gpu_out);
    }
}

TEST_CASE("cuda half: ops without half kernels widen to float32 and round once, as on the CPU") {
  const Tensor a = random_tensor({4, 6, 6, 8}, 11, 0.05, 3.0, false, DType::float64);
  const Tensor b = random_tensor({4, 6, 6, 8}, 12, 0.05, 3.0, false, DType::float64);
  const Tensor bias = random_tensor({8}, 13, 0.05, 1.0, false, DType::float64);
  for (DType half : kHalves) {
    CAPTURE(dtype_name(half));
    // Exact in float32 then rounded once: the same bits on both devices.
    const std::vector<std::pair<const char*, ParityBuild>> exact = {
        {"add", [](std::vector<SymbolicTensor> v) { return ops::add(v[0], v[1]); }},
        {"multiply", [](std::vector<SymbolicTensor> v) { return ops::multiply(v[0], v[1]); }},
        {"relu", [](std::vector<SymbolicTensor> v) { return ops::relu(v[0]); }},
        {"bias_add relu", [](std::vector<SymbolicTensor> v) { return ops::bias_add(v[0], v[2], "relu"); }},
        {"max_pool2d", [](std::vector<SymbolicTensor> v) { return ops::max_pool2d(v[0]); }},
        {"reduce_max", [](std::vector<SymbolicTensor> v) { return ops::reduce_max(v[0], {1, 2}); }},
    };
    for (const auto& [name, f] : exact) {
      CAPTURE(name);
      auto [cpu, gpu] = on_both({a, b, bias}, half, f);
      CHECK(gpu.dtype() == half);
      check_same_values(cpu, gpu);
    }
    // float32 kernels that may differ in the last float bits: within one half ulp of the largest value.
    const std::vector<std::pair<const char*, ParityBuild>> close = {
        {"sigmoid", [](std::vector<SymbolicTensor> v) { return ops::sigmoid(v[0]); }},
        {"tanh", [](std::vector<SymbolicTensor> v) { return ops::tanh(v[0]); }},
        {"softmax", [](std::vector<SymbolicTensor> v) { return ops::softmax(v[0], -1); }},
        {"reduce_sum", [](std::vector<SymbolicTensor> v) { return ops::reduce_sum(v[0], {0, 1, 2}); }},
        {"bias_add_grad", [](std::vector<SymbolicTensor> v) { return ops::bias_add_grad(v[0]); }},
    };
    for (const auto& [name, f] : close) {
      CAPTURE(name);
      auto [cpu, gpu] = on_both({a, b, bias}, half, f);
      CHECK(gpu.dtype() == half);
      check_within_ulps(cpu, gpu, half, 1.0);
    }
  }
}

namespace {

// f on the GPU over half copies of `inputs`, against f in float64 on the CPU over the same (widened)
// values: within one rounding of the output to the half type (two for a dense that falls back to a
// GEMM and a bias add) plus the float32 accumulation's worst case over k terms, (γ_k + 2u₃₂)·Σ|a||b|.
void check_half_gemm(const char* what, const std::vector<Tensor>& inputs, const ParityBuild& f, std::int64_t k) {
  for (DType half : kHalves) {
    INFO(what << " in " << dtype_name(half));
    Graph g;
    std::vector<SymbolicTensor> h, wide, magnitude;
    FeedMap feeds;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto p = g.placeholder(inputs[i].shape(), inputs[i].dtype(), "x" + std::to_string(i));
      feeds.emplace_back(p, inputs[i]);
      h.push_back(ops::cast(p, half));
      wide.push_back(ops::cast(h.back(), DType::float64));
      magnitude.push_back(ops::abs(wide.back()));
    }
    SymbolicTensor on_gpu;
    {
      Graph::DeviceScope scope(g, "cuda:0");
      on_gpu = f(h);
    }
    Executor executor;
    auto r = executor.run(feeds, {on_gpu, f(wide), f(magnitude)});
    REQUIRE(r[0].dtype() == half);
    const auto got = r[0].to(cpu_device()).to_vector<double>(), ref = r[1].to_vector<double>(),
               mag = r[2].to_vector<double>();
    const double u = unit_roundoff(half), accumulation = testing::gemm_error_bound(k, DType::float32);
    const double tiny = half == DType::float16 ? 0x1p-24 : 0x1p-133;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double bound = 2 * u * std::fabs(ref[i]) + 2 * accumulation * mag[i] + tiny;
      worst = std::max(worst, std::fabs(got[i] - ref[i]) / bound);
    }
    MESSAGE(what << " in " << dtype_name(half) << ": worst error at " << worst << " of the bound");
    CHECK(worst <= 1.0);
  }
}

}  // namespace

TEST_CASE("cuda half: GEMMs and convolutions run in half on tensor cores within a half bound") {
  const Tensor a = random_tensor({64, 96}, 21), b = random_tensor({96, 40}, 22), bias = random_tensor({40}, 23);
  check_half_gemm("matmul", {a, b}, [](std::vector<SymbolicTensor> v) { return ops::matmul(v[0], v[1]); }, 96);
  check_half_gemm("matmul transposed", {random_tensor({96, 64}, 24), random_tensor({40, 96}, 25)},
                  [](std::vector<SymbolicTensor> v) { return ops::matmul(v[0], v[1], true, true); }, 96);
  check_half_gemm("batch_matmul", {random_tensor({3, 16, 24}, 26), random_tensor({3, 24, 8}, 27)},
                  [](std::vector<SymbolicTensor> v) { return ops::batch_matmul(v[0], v[1]); }, 24);
  check_half_gemm("dense", {a, b, bias},
                  [](std::vector<SymbolicTensor> v) { return ops::dense(v[0], v[1], v[2], "linear"); }, 96);
  check_half_gemm("dense relu", {a, b, bias},
                  [](std::vector<SymbolicTensor> v) { return ops::dense(v[0], v[1], v[2], "relu"); }, 96);
  const Tensor x = random_tensor({4, 12, 12, 8}, 28), kernel = random_tensor({3, 3, 8, 16}, 29);
  const ops::Conv2DArgs args{{1, 1}, "same", {1, 1}};
  check_half_gemm("conv2d", {x, kernel}, [&](std::vector<SymbolicTensor> v) { return ops::conv2d(v[0], v[1], args); },
                  72);
  const Tensor dy = random_tensor({4, 12, 12, 16}, 30);
  check_half_gemm("conv2d_backward_data", {dy, kernel, x},
                  [&](std::vector<SymbolicTensor> v) { return ops::conv2d_backward_data(v[0], v[1], v[2], args); },
                  144);
  check_half_gemm("conv2d_backward_filter", {x, dy, kernel},
                  [&](std::vector<SymbolicTensor> v) { return ops::conv2d_backward_filter(v[0], v[1], v[2], args); },
                  4 * 12 * 12);
}

TEST_CASE("cuda half: a mixed-precision convnet trains on cuda:0 as on the CPU") {
  Tensor x = random_tensor({96, 12, 12, 1}, 41, 0.0, 1.0, true, DType::float32);
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 96; ++i) ids.push_back((i * 7 + i / 3) % 10);
  const Tensor y = Tensor::from_vector<std::int32_t>({96}, ids);
  for (const char* policy : {"mixed_float16", "mixed_bfloat16"}) {
    CAPTURE(policy);
    const auto train = [&](const char* where) {
      clear_session();
      set_random_seed(5);
      PolicyScope scope(policy);
      DefaultDeviceScope device(where);
      layers::Activation softmax("softmax");
      softmax.set_dtype_policy("float32");  // as the Keras guide recommends
      Sequential model({layers::Input({12, 12, 1}), layers::Conv2D(8, {3, 3}, {.activation = "relu"}),
                        layers::MaxPooling2D({2, 2}), layers::Flatten(), layers::Dense(32, {.activation = "relu"}),
                        layers::Dense(10), softmax});
      model.compile(optimizers::Adam(1e-3), "sparse_categorical_crossentropy");
      const auto history = model.fit(x, y, {.batch_size = 32, .epochs = 2, .verbose = 0, .shuffle = false});
      return std::make_pair(history.history.at("loss"), flat_weights(model));
    };
    const auto [cpu_losses, cpu_weights] = train("cpu:0");
    const auto [gpu_losses, gpu_weights] = train("cuda:0");
    // The GPU accumulates its half GEMMs in another order: its roundings differ from the CPU's by an
    // ulp here and there, which six Adam steps carry into the weights.
    const double tolerance = std::string(policy) == "mixed_float16" ? 1e-2 : 4e-2;
    REQUIRE(gpu_losses.size() == cpu_losses.size());
    for (std::size_t i = 0; i < cpu_losses.size(); ++i) CHECK(gpu_losses[i] == doctest::Approx(cpu_losses[i]).epsilon(tolerance));
    REQUIRE(gpu_weights.size() == cpu_weights.size());
    double worst = 0;
    for (std::size_t i = 0; i < cpu_weights.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(gpu_weights[i] - cpu_weights[i])));
    MESSAGE(policy << ": largest weight difference GPU - CPU after 6 steps " << worst);
    CHECK(worst < tolerance);
  }
}

TEST_CASE("cuda half: LossScaleOptimizer on cuda:0 skips an overflowing step and halves the scale") {
  clear_session();
  PolicyScope scope("mixed_float16");
  DefaultDeviceScope device("cuda:0");
  Sequential model({layers::Input({3}), layers::Dense(2)});
  model.compile(optimizers::LossScaleOptimizer(optimizers::Adam(0.1), {.initial_scale = 4.0, .dynamic_growth_steps = 2}),
                "mse");
  const auto& lso = dynamic_cast<const optimizers::LossScaleOptimizer&>(model.optimizer());
  const Tensor x = random_tensor({4, 3}, 1, 0.1, 1.0, false, DType::float32);
  const Tensor y = random_tensor({4, 2}, 2, 0.1, 1.0, false, DType::float32);
  auto before = flat_weights(model);
  model.train_on_batch({x}, {y});
  model.train_on_batch({x}, {y});
  CHECK(flat_weights(model) != before);
  CHECK(lso.dynamic_scale() == 8.0);  // two good steps: doubled
  // 60000 is finite in float16, its square in the gradient is not: skipped, not a bit of a weight changed.
  before = flat_weights(model);
  model.train_on_batch({Tensor::full({4, 3}, 60000.0, DType::float32)}, {y});
  CHECK(flat_weights(model) == before);
  CHECK(lso.dynamic_scale() == 4.0);
  CHECK(lso.applied_steps() == 2);
  model.train_on_batch({x}, {y});
  CHECK(flat_weights(model) != before);
  CHECK(lso.applied_steps() == 3);
}
