#include "tests/support/gpu_parity.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

namespace tower::testing {

std::pair<Tensor, Tensor> results_on_cpu_and_gpu(const std::vector<Tensor>& inputs, const ParityBuild& build) {
  Graph g;
  std::vector<SymbolicTensor> xs;
  FeedMap feeds;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(g.placeholder(inputs[i].shape(), inputs[i].dtype(), "x" + std::to_string(i)));
    feeds.emplace_back(xs.back(), inputs[i]);
  }
  SymbolicTensor on_cpu = build(xs), on_gpu;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    on_gpu = build(xs);
  }
  Executor executor;
  auto r = executor.run(feeds, {on_cpu, on_gpu});
  REQUIRE(r[1].device().kind() == DeviceKind::cuda);
  return {r[0], r[1].to(cpu_device())};
}

void check_parity(const std::vector<Tensor>& inputs, const ParityBuild& build, double rtol, double atol) {
  const auto [cpu, gpu] = results_on_cpu_and_gpu(inputs, build);
  check_close(gpu, cpu, rtol, atol);
}

double gemm_error_bound(std::int64_t k, DType dtype) {
  const double u = dtype == DType::float64 ? std::numeric_limits<double>::epsilon() / 2
                                           : std::numeric_limits<float>::epsilon() / 2;
  const double ku = static_cast<double>(k) * u;
  return ku / (1.0 - ku) + 2.0 * u;
}

std::string GemmBoundCheck::describe() const {
  return fmt::format("{}: the worst element ({}) is at {:.3g} of its bound", ok ? "within the bound" : "PAST the bound",
                     worst, worst_ratio);
}

GemmBoundCheck check_gemm_bound(const Tensor& result, const Tensor& reference, const Tensor& magnitude, std::int64_t k,
                                DType dtype) {
  const Tensor r = result.to(cpu_device());
  REQUIRE(r.shape() == reference.shape());
  REQUIRE(r.shape() == magnitude.shape());
  const double gamma = gemm_error_bound(k, dtype);
  const double tiny = dtype == DType::float64 ? 1e-300 : std::numeric_limits<float>::denorm_min();
  const double* ref = reference.data<double>();
  const double* mag = magnitude.data<double>();
  GemmBoundCheck out;
  for (std::int64_t i = 0; i < r.num_elements(); ++i) {
    const double value = r.dtype() == DType::float64 ? r.data<double>()[i] : r.data<float>()[i];
    const double ratio = std::abs(value - ref[i]) / (gamma * mag[i] + tiny);
    if (!(ratio <= out.worst_ratio) || out.worst < 0) {  // NaN counts as the worst
      out.worst = i;
      out.worst_ratio = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
    }
  }
  out.ok = out.worst_ratio <= 1.0;
  return out;
}

void check_gemm_parity(const std::vector<Tensor>& inputs, const ParityBuild& build, std::int64_t k) {
  Graph g;
  std::vector<SymbolicTensor> xs, as64, abs64;
  FeedMap feeds;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(g.placeholder(inputs[i].shape(), inputs[i].dtype(), "x" + std::to_string(i)));
    feeds.emplace_back(xs.back(), inputs[i]);
    as64.push_back(ops::cast(xs.back(), DType::float64));
    abs64.push_back(ops::abs(as64.back()));
  }
  SymbolicTensor on_cpu = build(xs), reference = build(as64), magnitude = build(abs64), on_gpu;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    on_gpu = build(xs);
  }
  Executor executor;
  auto r = executor.run(feeds, {on_cpu, on_gpu, reference, magnitude});
  REQUIRE(r[1].device().kind() == DeviceKind::cuda);
  const DType dtype = inputs.front().dtype();
  const GemmBoundCheck cpu = check_gemm_bound(r[0], r[2], r[3], k, dtype);
  const GemmBoundCheck gpu = check_gemm_bound(r[1], r[2], r[3], k, dtype);
  CHECK_MESSAGE(cpu.ok, "CPU against the float64 reference (k = " << k << "): " << cpu.describe());
  CHECK_MESSAGE(gpu.ok, "GPU against the float64 reference (k = " << k << "): " << gpu.describe());
}

}  // namespace tower::testing
