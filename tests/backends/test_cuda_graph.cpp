// Whole-step CUDA graphs and TF32 on a real GPU (label gpu; skipped with the reason when none is
// visible): a recorded and replayed training step gives the eager step's weights bit for bit, replays
// are timed against eager steps (printed, not asserted), and TF32 GEMMs and convolutions stay within a
// TF32-sized bound of a float64 reference.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tower/core/config.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/core/step_graph.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/gpu_parity.h"
#include "tests/support/grad_check.h"

using namespace tower;

namespace {

// Collects the fallback warnings while it lives: a step that should be recorded must not give one.
struct Warnings {
  Warnings() {
    reset_step_graph_warnings();
    previous = set_step_graph_warning_handler([this](const std::string& m) { said.push_back(m); });
  }
  ~Warnings() { set_step_graph_warning_handler(previous); }
  std::vector<std::string> said;
  StepGraphWarningHandler previous;
};

struct Trained {
  std::vector<double> losses;
  std::vector<Tensor> weights;
  double seconds = 0;  // the steps after the first three (the warm-up and the two recordings)
};

// Dense + Dropout + BatchNormalization with Adam on an exponentially decaying learning rate, `steps`
// steps of train_on_batch on cuda:0, with CUDA graphs on or off.
Trained train(bool graphs, int steps, std::int64_t batch = 64) {
  config::enable_cuda_graphs(graphs);
  clear_session();
  set_random_seed(11);
  DefaultDeviceScope scope("cuda:0");
  Sequential model({layers::Input({32}), layers::Dense(64, {.activation = "relu"}), layers::Dropout(0.3),
                    layers::BatchNormalization(), layers::Dense(64, {.activation = "relu"}), layers::Dropout(0.2),
                    layers::Dense(10, {.activation = "softmax"})});
  auto schedule = std::make_shared<optimizers::ExponentialDecay>(1e-2, 5, 0.8);
  model.compile(optimizers::Adam(schedule), "sparse_categorical_crossentropy", {"accuracy"});
  Trained out;
  std::chrono::steady_clock::time_point start;
  for (int step = 0; step < steps; ++step) {
    if (step == 3) start = std::chrono::steady_clock::now();
    Tensor x = testing::random_tensor({batch, 32}, 1000 + step, 0.1, 1, false, DType::float32);
    std::vector<std::int32_t> ids;
    for (std::int64_t i = 0; i < batch; ++i) ids.push_back(static_cast<std::int32_t>((i * 7 + step) % 10));
    out.losses.push_back(model.train_on_batch({x}, {Tensor::from_vector<std::int32_t>({batch}, ids)}).at("loss"));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.weights = model.get_weights();
  config::enable_cuda_graphs(true);
  return out;
}

}  // namespace

TEST_CASE("cuda graphs: 20 recorded steps give the eager steps' losses and weights bit for bit") {
  Warnings warnings;
  const Trained eager = train(false, 20);
  const Trained graphs = train(true, 20);
  CHECK(warnings.said.empty());
  for (const auto& w : warnings.said) MESSAGE(w);
  REQUIRE(graphs.losses.size() == eager.losses.size());
  for (std::size_t i = 0; i < eager.losses.size(); ++i) {
    CAPTURE(i);
    CHECK(graphs.losses[i] == eager.losses[i]);
  }
  REQUIRE(graphs.weights.size() == eager.weights.size());
  for (std::size_t i = 0; i < eager.weights.size(); ++i) testing::check_close(graphs.weights[i], eager.weights[i], 0, 0);
  // Dropout drew new masks in every replay: the losses of consecutive steps are not repeated.
  CHECK(graphs.losses[10] != graphs.losses[12]);
}

TEST_CASE("cuda graphs: a plan with dropout on cuda:0 replays, with the eager step's numbers") {
  Warnings warnings;
  Graph g;
  SymbolicTensor x = g.placeholder({-1, 256}, DType::float32, "x");
  SymbolicTensor y;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    y = ops::scale(ops::dropout(ops::relu(ops::scale(x, 2.0)), 0.5, 3)[0], 0.5);
  }
  const auto run = [&](bool graphs) {
    config::enable_cuda_graphs(graphs);
    Executor executor(device("cuda:0"));
    std::vector<Tensor> out;
    for (int step = 0; step < 6; ++step) {
      g.set_random_counters(static_cast<std::uint64_t>(step));
      const Tensor batch = testing::random_tensor({128, 256}, 40 + step, 0.1, 1, false, DType::float32);
      out.push_back(executor.run({{x, batch}}, {y})[0].to(cpu_device()));
    }
    CHECK(executor.last_plan()->replays_graph() == graphs);
    CHECK(executor.last_plan()->graph_captures() == (graphs ? 2 : 0));
    config::enable_cuda_graphs(true);
    return out;
  };
  const auto eager = run(false);
  const auto graphs = run(true);
  for (std::size_t i = 0; i < eager.size(); ++i) testing::check_close(graphs[i], eager[i], 0, 0);
  CHECK(warnings.said.empty());
}

TEST_CASE("cuda graphs: replayed steps against eager steps (printed, not asserted)") {
  for (std::int64_t batch : {64, 512}) {
    const Trained eager = train(false, 203, batch);
    const Trained graphs = train(true, 203, batch);
    std::printf("tower cuda graphs: Dense+Dropout+BatchNorm, Adam, batch %lld: eager %.1f us/step, graph %.1f us/step "
                "(%.2fx)\n",
                static_cast<long long>(batch), eager.seconds / 200 * 1e6, graphs.seconds / 200 * 1e6,
                eager.seconds / graphs.seconds);
  }
}

namespace {

// The float32 tensor's values in float64 (exact), and their absolute values.
Tensor to64(const Tensor& t, bool absolute = false) {
  std::vector<double> v;
  for (float e : t.to(cpu_device()).to_vector<float>()) v.push_back(absolute ? std::abs(e) : e);
  return Tensor::from_vector<double>(t.shape(), v);
}

// |tf32 - reference| <= bound · Σ|a||b| elementwise, with the reference and the magnitudes in float64.
void check_tf32_bound(const Tensor& result, const Tensor& reference, const Tensor& magnitude, double bound) {
  const auto r = result.to(cpu_device()).to_vector<float>();
  const auto ref = reference.to_vector<double>();
  const auto mag = magnitude.to_vector<double>();
  REQUIRE(r.size() == ref.size());
  int failures = 0;
  double worst = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double err = std::abs(static_cast<double>(r[i]) - ref[i]);
    worst = std::max(worst, mag[i] > 0 ? err / mag[i] : err);
    if (!(err <= bound * mag[i] + 1e-30)) ++failures;
  }
  MESSAGE("worst error / sum|a||b|: " << worst << " (bound " << bound << ")");
  CHECK(failures == 0);
}

// TF32 keeps 10 of float32's 23 mantissa bits: each operand is rounded by up to 2^-11 relatively, a
// product by about 2^-10; the float32 sum adds γ_k. Twice that for margin: TF32-sized, and far above
// what a float32 result (2^-24 per rounding) needs, so it cannot tell whether TF32 was used.
double tf32_bound(std::int64_t k) { return 2 * (std::ldexp(1.0, -10) + testing::gemm_error_bound(k, DType::float32)); }

}  // namespace

TEST_CASE("TF32: matmul and dense on cuda:0 stay within a TF32 bound of float64; off, within float32's") {
  const std::int64_t m = 96, k = 512, n = 80;
  const Tensor a = testing::random_tensor({m, k}, 7, 0.1, 1, false, DType::float32);
  const Tensor b = testing::random_tensor({k, n}, 8, 0.1, 1, false, DType::float32);
  const Tensor bias = testing::random_tensor({n}, 9, 0.1, 1, false, DType::float32);
  Graph g;
  auto pa = g.placeholder({m, k}, DType::float32, "a"), pb = g.placeholder({k, n}, DType::float32, "b");
  auto pbias = g.placeholder({n}, DType::float32, "bias");
  SymbolicTensor mm, dense;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    mm = ops::matmul(pa, pb);
    dense = ops::dense(pa, pb, pbias, "linear");
  }
  Graph ref;
  auto ra = ref.placeholder({m, k}, DType::float64, "a"), rb = ref.placeholder({k, n}, DType::float64, "b");
  auto rbias = ref.placeholder({n}, DType::float64, "bias");
  Executor cpu;
  const auto product = ops::matmul(ra, rb);
  const auto exact = cpu.run({{ra, to64(a)}, {rb, to64(b)}, {rbias, to64(bias)}}, {product, ops::bias_add(product, rbias)});
  const auto magnitude = cpu.run({{ra, to64(a, true)}, {rb, to64(b, true)}}, {product})[0];
  for (bool tf32 : {true, false}) {
    CAPTURE(tf32);
    config::enable_tensor_float_32_execution(tf32);
    Executor gpu(device("cuda:0"));
    const auto got = gpu.run({{pa, a}, {pb, b}, {pbias, bias}}, {mm, dense});
    const double bound = tf32 ? tf32_bound(k) : testing::gemm_error_bound(k, DType::float32);
    check_tf32_bound(got[0], exact[0], magnitude, bound);
    check_tf32_bound(got[1], exact[1], magnitude, bound);
  }
  config::enable_tensor_float_32_execution(false);
}

TEST_CASE("TF32: conv2d on cuda:0 stays within a TF32 bound of float64") {
  const Tensor x = testing::random_tensor({8, 16, 16, 32}, 21, 0.1, 1, false, DType::float32);
  const Tensor w = testing::random_tensor({3, 3, 32, 48}, 22, 0.1, 1, false, DType::float32);
  Graph g;
  auto px = g.placeholder({8, 16, 16, 32}, DType::float32, "x"), pw = g.placeholder({3, 3, 32, 48}, DType::float32, "w");
  SymbolicTensor y;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    y = ops::conv2d(px, pw, {.padding = "same"});
  }
  Graph ref;
  auto rx = ref.placeholder({8, 16, 16, 32}, DType::float64, "x"), rw = ref.placeholder({3, 3, 32, 48}, DType::float64, "w");
  Executor cpu;
  const auto conv = ops::conv2d(rx, rw, {.padding = "same"});
  const auto exact = cpu.run({{rx, to64(x)}, {rw, to64(w)}}, {conv})[0];
  const auto magnitude = cpu.run({{rx, to64(x, true)}, {rw, to64(w, true)}}, {conv})[0];
  config::enable_tensor_float_32_execution(true);
  Executor gpu(device("cuda:0"));
  const auto got = gpu.run({{px, x}, {pw, w}}, {y})[0];
  config::enable_tensor_float_32_execution(false);
  check_tf32_bound(got, exact, magnitude, tf32_bound(3 * 3 * 32));
}
