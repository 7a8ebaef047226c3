// FP32 GEMM throughput on a GPU: C = A·B through tower (ops::matmul run by the Executor on cuda:N,
// which calls cuBLAS) beside cublasSgemm called directly on the same sizes, in TFLOP/s. Both run in
// full FP32 (no TF32). Built with the CUDA backend only; scripts/gpu/bench.sh runs it.
#include <boost/program_options.hpp>

#include <chrono>
#include <iostream>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "apps/command_line.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/core/variable.h"

using namespace tower;

namespace {

double tflops(std::int64_t n, int repeats, double seconds) {
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) * repeats / seconds / 1e12;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw DeviceError(std::string(what) + ": " + cudaGetErrorString(status));
}

// cublasSgemm alone on the n×n matrices host_a, host_b (the data tower multiplies: a GPU runs GEMMs on
// zeros faster, at lower power, than on random data) on GPU `ordinal` (cuda:N without logical GPUs):
// seconds for `repeats` calls, timed with events.
double cublas_seconds(int ordinal, const Tensor& host_a, const Tensor& host_b, int repeats) {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  const std::int64_t n = host_a.shape()[0];
  const auto bytes = static_cast<std::size_t>(n * n) * sizeof(float);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMalloc(&c, bytes), "cudaMalloc");
  check(cudaMemcpy(a, host_a.data<float>(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(b, host_b.data<float>(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) throw DeviceError("cublasCreate failed");
  cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
  const float one = 1, zero = 0;
  const int m = static_cast<int>(n);
  const auto gemm = [&] { cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, b, m, a, m, &zero, c, m); };
  gemm();  // warm-up
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < repeats; ++i) gemm();
  cudaEventRecord(stop);
  check(cudaEventSynchronize(stop), "gemm");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasDestroy(handle);
  cudaFree(a), cudaFree(b), cudaFree(c);
  return ms / 1000.0;
}

// tower: C = matmul(A, B) with A, B and C variables on the device (no host copies), `repeats` steps
// of the Executor, then one synchronisation.
double tower_seconds(Device& gpu, const Tensor& host_a, const Tensor& host_b, int repeats) {
  const std::int64_t n = host_a.shape()[0];
  auto a = make_variable("a", host_a.to(gpu), false);
  auto b = make_variable("b", host_b.to(gpu), false);
  auto c = make_variable("c", Tensor::full({n, n}, 0.0).to(gpu), false);
  Graph g;
  Node* step = nullptr;
  {
    Graph::DeviceScope scope(g, gpu.name());
    step = ops::assign(g.variable(c), ops::matmul(g.variable(a), g.variable(b)));
  }
  Executor executor(gpu);
  executor.run({}, {}, {step});  // warm-up: compiles the plan
  gpu.synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) executor.run({}, {}, {step});
  gpu.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) try {
  namespace po = boost::program_options;
  std::string device_name = "cuda:0";
  std::vector<std::int64_t> sizes{1024, 2048, 4096, 8192};
  int repeats = 20;
  po::options_description options("Usage: bench_gemm [options]\nOptions");
  options.add_options()("help,h", "show this help")("device", po::value(&device_name)->default_value(device_name),
                                                    "the GPU")(
      "sizes", po::value(&sizes)->multitoken(), "n of the n×n×n GEMMs (default 1024 2048 4096 8192)")(
      "repeats", po::value(&repeats)->default_value(repeats), "timed GEMMs per size");
  if (!apps::parse_command_line(options, argc, argv)) return 0;
  Device& gpu = device(device_name);
  if (gpu.kind() != DeviceKind::cuda) throw ValueError("--device must be a GPU (cuda:N), got " + device_name);
  std::cout << "n      tower TFLOP/s  cuBLAS TFLOP/s  tower/cuBLAS   (FP32, no TF32, " << gpu.name() << ")\n";
  for (std::int64_t n : sizes) {
    const Tensor a = random_normal({n, n}, 0, 1, 1), b = random_normal({n, n}, 0, 1, 2);  // float32, on the host
    const double t = tflops(n, repeats, tower_seconds(gpu, a, b, repeats));
    const double c = tflops(n, repeats, cublas_seconds(gpu.index(), a, b, repeats));
    std::cout << n << "  " << t << "  " << c << "  " << t / c << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_gemm: " << e.what() << "\n";
  return 1;
}
