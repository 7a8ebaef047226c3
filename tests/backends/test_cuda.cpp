// GPU checks of the CUDA backend (label gpu): every op against the CPU, memory, pinned host memory,
// grouped optimizer updates and mnist_cnn training. With no visible GPU, gpu_main.cpp skips the suite.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tower/core/autodiff.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/gpu_parity.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gemm_parity;
using tower::testing::check_parity;

TEST_CASE("cuda: tensors round-trip through cuda:0") {
  Tensor host = testing::random_tensor({3, 5}, 1, 0.1, 1, false, DType::float32);
  Tensor gpu = host.to(device("cuda:0"));
  CHECK(gpu.device().kind() == DeviceKind::cuda);
  check_close(gpu.to(cpu_device()), host, 0, 0);
  CHECK(device("gpu:0").memory_stats().in_use > 0);
}

TEST_CASE("cuda: fill_like, scale and add match the CPU, with copies in and out") {
  Graph g;
  auto x = g.placeholder({-1, 7}, DType::float32, "x");
  auto on_cpu = ops::add(ops::scale(x, 3.0), ops::ones_like(x));
  SymbolicTensor on_gpu;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    on_gpu = ops::add(ops::scale(x, 3.0), ops::ones_like(x));
  }
  Executor executor;
  FeedMap feeds{{x, testing::random_tensor({4, 7}, 2, 0.1, 1, false, DType::float32)}};
  auto r = executor.run(feeds, {on_cpu, on_gpu});
  CHECK(r[1].device().kind() == DeviceKind::cuda);
  check_close(r[1].to(cpu_device()), r[0], 1e-6, 1e-6);
  CHECK(executor.plan(feeds, {on_gpu}).num_copies() == 1);
}

TEST_CASE("cuda: pinned host memory feeds a GPU plan (copy stream, event-ordered) with the same results") {
  Device* pinned = pinned_host_device();
  REQUIRE(pinned != nullptr);
  CHECK(pinned->host_accessible());
  Tensor host = testing::random_tensor({64, 33}, 3, 0.1, 1, false, DType::float32);
  Tensor staged = host.to(*pinned);
  CHECK(&staged.device() == pinned);
  CHECK(pinned->memory_stats().in_use >= staged.nbytes());
  Graph g;
  auto x = g.placeholder({-1, 33}, DType::float32, "x");
  SymbolicTensor y;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    y = ops::scale(x, 2.0);
  }
  Executor executor;
  for (int step = 0; step < 3; ++step) {  // the feed slot is rewritten while the last step's kernels may run
    auto from_pinned = executor.run({{x, staged}}, {y});
    auto from_pageable = executor.run({{x, host}}, {y});
    check_close(from_pinned[0].to(cpu_device()), from_pageable[0].to(cpu_device()), 0, 0);
  }
}

TEST_CASE("cuda: the caching allocator reuses freed blocks and reports reserved memory") {
  Device& gpu = device("cuda:0");
  gpu.empty_cache();
  const auto before = gpu.memory_stats();
  {
    Tensor a(Shape{1024, 1024}, DType::float32, gpu);  // 4 MiB
    CHECK(gpu.memory_stats().in_use >= before.in_use + a.nbytes());
  }
  const auto freed = gpu.memory_stats();
  CHECK(freed.reserved >= before.reserved + 4 * 1024 * 1024);  // cached, not returned
  Tensor b(Shape{1024, 1024}, DType::float32, gpu);            // the same block again
  CHECK(gpu.memory_stats().reserved == freed.reserved);
  gpu.empty_cache();
  CHECK(gpu.memory_stats().reserved == before.reserved + 4 * 1024 * 1024);  // only b's block is left
}

TEST_CASE("cuda: matmul (cuBLAS) matches the CPU for every transpose, in float32 and float64") {
  for (DType dtype : {DType::float32, DType::float64})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(dtype_name(dtype));
        CAPTURE(ta);
        CAPTURE(tb);
        const std::int64_t m = 37, k = 129, n = 65;
        Tensor a = testing::random_tensor(ta ? Shape{k, m} : Shape{m, k}, 11, 0.1, 1, false, dtype);
        Tensor b = testing::random_tensor(tb ? Shape{n, k} : Shape{k, n}, 12, 0.1, 1, false, dtype);
        check_gemm_parity({a, b}, [&](std::vector<SymbolicTensor> x) { return ops::matmul(x[0], x[1], ta, tb); }, k);
      }
}

TEST_CASE("cuda: batch_matmul (strided batched cuBLAS) matches the CPU for every transpose, in float32 and float64") {
  for (DType dtype : {DType::float32, DType::float64})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(dtype_name(dtype));
        CAPTURE(ta);
        CAPTURE(tb);
        const std::int64_t m = 37, k = 129, n = 65;
        Tensor a = testing::random_tensor(ta ? Shape{2, 3, k, m} : Shape{2, 3, m, k}, 13, 0.1, 1, false, dtype);
        Tensor b = testing::random_tensor(tb ? Shape{2, 3, n, k} : Shape{2, 3, k, n}, 14, 0.1, 1, false, dtype);
        check_gemm_parity({a, b}, [&](std::vector<SymbolicTensor> x) { return ops::batch_matmul(x[0], x[1], ta, tb); }, k);
      }
}

TEST_CASE("cuda: dense (cuBLASLt with bias and ReLU in the epilogue; float64 unfused) and its gradients match the CPU") {
  for (DType dtype : {DType::float32, DType::float64})
    for (const char* activation : {"linear", "relu"})
      for (std::int64_t m : {1, 37, 256}) {
        CAPTURE(dtype_name(dtype));
        CAPTURE(activation);
        CAPTURE(m);
        Tensor x = testing::random_tensor({m, 129}, 15, 0.1, 1, false, dtype);
        Tensor kernel = testing::random_tensor({129, 65}, 16, 0.1, 1, false, dtype);
        Tensor bias = testing::random_tensor({65}, 17, 0.1, 1, false, dtype);
        Tensor dy = testing::random_tensor({m, 65}, 18, 0.1, 1, false, dtype);
        check_gemm_parity({x, kernel, bias},
                          [&](std::vector<SymbolicTensor> v) { return ops::dense(v[0], v[1], v[2], activation); }, 129);
        // The gradients of sum(dense · dy): dy·kernelᵀ (65 terms), xᵀ·dy and dy's column sums (m terms),
        // each linear in its inputs, so the same bound applies.
        for (int which = 0; which < 3; ++which) {
          CAPTURE(which);
          check_gemm_parity({x, kernel, bias, dy}, [&](std::vector<SymbolicTensor> v) {
            return gradients(ops::reduce_sum(ops::multiply(ops::dense(v[0], v[1], v[2], activation), v[3])), {v[which]})[0];
          }, which == 0 ? 65 : m);
        }
      }
}

TEST_CASE("cuda: bias_add and bias_add_grad match the CPU") {
  Tensor x = testing::random_tensor({300, 7, 33}, 13, 0.1, 1, false, DType::float32);
  Tensor bias = testing::random_tensor({33}, 14, 0.1, 1, false, DType::float32);
  check_parity({x, bias}, [](std::vector<SymbolicTensor> v) { return ops::bias_add(v[0], v[1]); });
  check_parity({x, bias}, [](std::vector<SymbolicTensor> v) { return ops::bias_add(v[0], v[1], "relu"); }, 0, 0);
  check_parity({x}, [](std::vector<SymbolicTensor> v) { return ops::bias_add_grad(v[0]); }, 1e-5, 1e-4);
}

TEST_CASE("cuda: unary math ops, activations and their gradients match the CPU") {
  using Unary = std::function<SymbolicTensor(const SymbolicTensor&)>;
  const std::vector<std::pair<const char*, Unary>> unary = {
      {"negative", [](auto& x) { return ops::negative(x); }},
      {"exp", [](auto& x) { return ops::exp(x); }},
      {"log", [](auto& x) { return ops::log(ops::abs(x)); }},
      {"erf", [](auto& x) { return ops::erf(x); }},
      {"sqrt", [](auto& x) { return ops::sqrt(ops::abs(x)); }},
      {"square", [](auto& x) { return ops::square(x); }},
      {"sign", [](auto& x) { return ops::sign(x); }},
      {"relu", [](auto& x) { return ops::relu(x); }},
      {"leaky_relu", [](auto& x) { return ops::leaky_relu(x, 0.3); }},
      {"elu", [](auto& x) { return ops::elu(x, 0.7); }},
      {"sigmoid", [](auto& x) { return ops::sigmoid(x); }},
      {"tanh", [](auto& x) { return ops::tanh(x); }},
  };
  for (DType dtype : {DType::float32, DType::float64}) {
    // Values of both signs, never zero (random_tensor's min_abs), up to 3 in size.
    Tensor x = testing::random_tensor({129, 31}, 21, 0.1, 3, false, dtype);
    Tensor dy = testing::random_tensor({129, 31}, 22, 0.1, 1, false, dtype);
    for (const auto& [name, f] : unary) {
      CAPTURE(name);
      CAPTURE(dtype_name(dtype));
      check_parity({x}, [&](std::vector<SymbolicTensor> v) { return f(v[0]); });
    }
    check_parity({dy, x}, [](std::vector<SymbolicTensor> v) { return ops::relu_grad(v[0], ops::relu(v[1])); });
    check_parity({dy, x}, [](std::vector<SymbolicTensor> v) { return ops::leaky_relu_grad(v[0], v[1], 0.3); });
    check_parity({dy, x}, [](std::vector<SymbolicTensor> v) { return ops::elu_grad(v[0], v[1], 0.7); });
    check_parity({dy, x}, [](std::vector<SymbolicTensor> v) { return ops::sigmoid_grad(v[0], ops::sigmoid(v[1])); });
    check_parity({dy, x}, [](std::vector<SymbolicTensor> v) { return ops::tanh_grad(v[0], ops::tanh(v[1])); });
  }
}

TEST_CASE("cuda: broadcasting binary arithmetic matches the CPU") {
  using Binary = std::function<SymbolicTensor(const SymbolicTensor&, const SymbolicTensor&)>;
  const std::vector<std::pair<const char*, Binary>> binary = {
      {"add", [](auto& a, auto& b) { return ops::add(a, b); }},
      {"subtract", [](auto& a, auto& b) { return ops::subtract(a, b); }},
      {"multiply", [](auto& a, auto& b) { return ops::multiply(a, b); }},
      {"divide", [](auto& a, auto& b) { return ops::divide(a, b); }},
      {"maximum", [](auto& a, auto& b) { return ops::maximum(a, b); }},
      {"minimum", [](auto& a, auto& b) { return ops::minimum(a, b); }},
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{40, 33}, {40, 33}}, {{40, 33}, {33}}, {{40, 1}, {1, 33}}, {{7, 1, 5, 3}, {6, 1, 3}}, {{40, 33}, {1}}};
  for (const auto& [shape_a, shape_b] : shapes)
    for (const auto& [name, f] : binary) {
      CAPTURE(name);
      CAPTURE(shape_a.to_string());
      CAPTURE(shape_b.to_string());
      Tensor a = testing::random_tensor(shape_a, 31, 0.1, 2, false, DType::float32);
      Tensor b = testing::random_tensor(shape_b, 32, 0.1, 2, false, DType::float32);
      check_parity({a, b}, [&](std::vector<SymbolicTensor> v) { return f(v[0], v[1]); });
    }
}

TEST_CASE("cuda: reduce_sum, reduce_mean, reduce_max over any axes, and sum_to, match the CPU") {
  Tensor x = testing::random_tensor({6, 5, 4, 3}, 41, 0.1, 2, false, DType::float32);
  for (const ops::Ints& axes : std::vector<ops::Ints>{{}, {0}, {3}, {1, 2}, {0, 2}, {-1}, {0, 1, 2, 3}})
    for (bool keepdims : {false, true}) {
      CAPTURE(axes.size());
      CAPTURE(keepdims);
      check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::reduce_sum(v[0], axes, keepdims); }, 1e-5, 1e-5);
      check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::reduce_mean(v[0], axes, keepdims); });
      check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::reduce_max(v[0], axes, keepdims); }, 0, 0);
    }
  Tensor like = testing::random_tensor({5, 1, 3}, 42, 0.1, 2, false, DType::float32);
  check_parity({x, like}, [](std::vector<SymbolicTensor> v) { return ops::sum_to(v[0], v[1]); }, 1e-5, 1e-5);
  // A row of -inf reduces to -inf on both devices (the identity of max), not to -FLT_MAX.
  const float inf = std::numeric_limits<float>::infinity();
  Graph g;
  auto rows = g.constant(Tensor::from_vector<float>({2, 3}, {-inf, -inf, -inf, 1, -inf, 3}));
  SymbolicTensor on_gpu;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    on_gpu = ops::reduce_max(rows, {1});
  }
  Executor executor;
  const Tensor max = executor.run({}, {on_gpu})[0].to(cpu_device());
  CHECK(max.data<float>()[0] == -inf);
  CHECK(max.data<float>()[1] == 3.0f);
}

TEST_CASE("cuda: softmax, log_softmax, their gradients and the softmax cross-entropies match the CPU") {
  Tensor x = testing::random_tensor({64, 10}, 51, 0.1, 4, false, DType::float32);
  Tensor dy = testing::random_tensor({64, 10}, 52, 0.1, 1, false, DType::float32);
  for (int axis : {-1, 0}) {
    CAPTURE(axis);
    check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::softmax(v[0], axis); });
    check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::log_softmax(v[0], axis); });
    check_parity({dy, x}, [&](std::vector<SymbolicTensor> v) { return ops::softmax_grad(v[0], ops::softmax(v[1], axis), axis); });
    check_parity({dy, x},
                 [&](std::vector<SymbolicTensor> v) { return ops::log_softmax_grad(v[0], ops::log_softmax(v[1], axis), axis); });
  }
  std::vector<std::int32_t> classes;
  for (int i = 0; i < 64; ++i) classes.push_back((i * 7) % 10);
  Tensor labels = Tensor::from_vector<std::int32_t>({64}, classes);
  Tensor one_hot = testing::random_tensor({64, 10}, 53, 0.1, 1, false, DType::float32);  // soft labels
  check_parity({x, labels}, [](std::vector<SymbolicTensor> v) { return ops::sparse_softmax_cross_entropy(v[0], v[1]); });
  check_parity({x, one_hot}, [](std::vector<SymbolicTensor> v) { return ops::softmax_cross_entropy(v[0], v[1]); });
  // The gradients through the fused backprop output.
  check_parity({x, labels}, [](std::vector<SymbolicTensor> v) {
    auto loss = ops::reduce_mean(ops::sparse_softmax_cross_entropy(v[0], v[1]));
    return gradients(loss, {v[0]})[0];
  });
}

TEST_CASE("cuda: broadcast_like and broadcast_reduced (the gradients of sums and means) match the CPU") {
  Tensor x = testing::random_tensor({5, 1, 3}, 61, 0.1, 2, false, DType::float32);
  Tensor like = testing::random_tensor({6, 5, 4, 3}, 62, 0.1, 2, false, DType::float32);
  check_parity({x, like}, [](std::vector<SymbolicTensor> v) { return ops::broadcast_like(v[0], v[1]); });
  for (const ops::Ints& axes : std::vector<ops::Ints>{{}, {1, 2}, {0, 3}}) {
    CAPTURE(axes.size());
    check_parity({like}, [&](std::vector<SymbolicTensor> v) {
      return gradients(ops::reduce_mean(ops::multiply(v[0], v[0]), axes), {v[0]})[0];
    });
  }
}

TEST_CASE("cuda: optimizer updates match the CPU over several steps, variables and slots alike") {
  using Vars = std::vector<SymbolicTensor>;
  using Build = std::function<Node*(const Vars&, const SymbolicTensor& grad, const SymbolicTensor& lr,
                                    const SymbolicTensor& iteration)>;
  const std::vector<std::tuple<const char*, int, Build>> updates = {
      {"sgd nesterov", 1, [](auto& v, auto& g, auto& lr, auto&) { return ops::apply_sgd(v[0], g, lr, v[1], 0.9, true); }},
      {"rmsprop centered momentum", 3,
       [](auto& v, auto& g, auto& lr, auto&) { return ops::apply_rmsprop(v[0], g, lr, v[1], v[2], v[3], 0.9, 0.5, 1e-7, true); }},
      {"adam amsgrad adamw", 3,
       [](auto& v, auto& g, auto& lr, auto& t) {
         return ops::apply_adam(v[0], g, lr, t, v[1], v[2], v[3], 0.9, 0.999, 1e-7, true, 0.01);
       }},
      {"adagrad", 1, [](auto& v, auto& g, auto& lr, auto&) { return ops::apply_adagrad(v[0], g, lr, v[1]); }},
      {"adadelta", 2, [](auto& v, auto& g, auto& lr, auto&) { return ops::apply_adadelta(v[0], g, lr, v[1], v[2]); }},
      {"sgd weight decay", 0, [](auto& v, auto& g, auto& lr, auto&) { return ops::apply_sgd(v[0], g, lr, {}, 0, false, 0.1); }},
      {"adamax", 2,
       [](auto& v, auto& g, auto& lr, auto& t) { return ops::apply_adamax(v[0], g, lr, t, v[1], v[2], 0.9, 0.99); }},
      {"nadam weight decay", 2,
       [](auto& v, auto& g, auto& lr, auto& t) {
         return ops::apply_nadam(v[0], g, lr, t, v[1], v[2], 0.9, 0.999, 1e-7, 0.1);
       }},
      {"lion", 1, [](auto& v, auto& g, auto& lr, auto&) { return ops::apply_lion(v[0], g, lr, v[1], 0.9, 0.99); }},
      {"ftrl l1 l2", 2,
       [](auto& v, auto& g, auto& lr, auto&) {
         return ops::apply_ftrl(v[0], g, lr, v[1], v[2], {-0.5, 0.01, 0.1, 0.05, 0.2});
       }},
      {"ema", 1, [](auto& v, auto&, auto&, auto& t) { return ops::apply_ema(v[0], v[1], t, 0.9); }},
  };
  const Shape shape{37, 11};
  for (const auto& [name, slots, build] : updates) {
    CAPTURE(name);
    Graph g;
    std::vector<VariablePtr> on_cpu, on_gpu;
    for (int k = 0; k <= slots; ++k) {
      Tensor init = k == 0 ? testing::random_tensor(shape, 71, 0.1, 1, false, DType::float32) : Tensor::full(shape, 0.1);
      on_cpu.push_back(make_variable("c" + std::to_string(k), init.clone(), false));
      on_gpu.push_back(make_variable("g" + std::to_string(k), init.to(device("cuda:0")), false));
    }
    auto grad = g.placeholder(shape, DType::float32, "grad");
    auto iteration = g.placeholder({}, DType::float32, "iteration");
    auto lr = g.constant(Tensor::scalar(0.01, DType::float32), "lr");
    Vars cpu_reads, gpu_reads;
    for (auto& v : on_cpu) cpu_reads.push_back(g.variable(v));
    Node* cpu_update = build(cpu_reads, grad, lr, iteration);
    Node* gpu_update = nullptr;
    {
      Graph::DeviceScope scope(g, "cuda:0");
      for (auto& v : on_gpu) gpu_reads.push_back(g.variable(v));
      gpu_update = build(gpu_reads, grad, lr, iteration);
    }
    Executor executor;
    for (int step = 1; step <= 3; ++step) {
      Tensor gv = testing::random_tensor(shape, 80 + static_cast<std::uint64_t>(step), 0.1, 1, false, DType::float32);
      executor.run({{grad, gv}, {iteration, Tensor::scalar(step, DType::float32)}}, {}, {cpu_update, gpu_update});
      for (int k = 0; k <= slots; ++k) check_close(on_gpu[k]->value().to(cpu_device()), on_cpu[k]->value(), 1e-5, 1e-6);
    }
  }
}

TEST_CASE("cuda: Adam over 100 variables of many sizes runs as one group (launches of 48) and matches the CPU") {
  Graph g;
  auto lr = g.constant(Tensor::scalar(0.01, DType::float32), "lr");
  auto iteration = g.placeholder({}, DType::float32, "iteration");
  FeedMap feeds;
  std::vector<Tensor> inits;
  for (int k = 0; k < 100; ++k) {
    const Shape shape{1 + (k * 37) % 300, 1 + k % 5};  // 1 to 1500 elements: chunks of every size
    inits.push_back(testing::random_tensor(shape, 200 + static_cast<std::uint64_t>(k), 0.1, 1, false, DType::float32));
    feeds.emplace_back(g.placeholder(shape, DType::float32, "grad" + std::to_string(k)),
                       testing::random_tensor(shape, 400 + static_cast<std::uint64_t>(k), 0.1, 1, false, DType::float32));
  }
  // Each device's updates one after another (the plan groups consecutive steps).
  const auto build = [&](const char* device_name, std::vector<VariablePtr>& vars, std::vector<Node*>& updates) {
    Graph::DeviceScope scope(g, device_name);
    for (std::size_t k = 0; k < inits.size(); ++k) {
      std::vector<SymbolicTensor> reads;
      for (int slot = 0; slot < 3; ++slot) {
        Tensor value = slot == 0 ? inits[k] : Tensor::full(inits[k].shape(), 0.0);
        vars.push_back(make_variable(fmt::format("{}/{}/{}", device_name, k, slot), value.to(device(device_name)), false));
        reads.push_back(g.variable(vars.back()));
      }
      updates.push_back(ops::apply_adam(reads[0], feeds[k].first, lr, iteration, reads[1], reads[2], {}, 0.9, 0.999,
                                        1e-7, false, 0.0));
    }
  };
  std::vector<VariablePtr> cpu_vars, gpu_vars;
  std::vector<Node*> targets;
  build("cpu:0", cpu_vars, targets);
  build("cuda:0", gpu_vars, targets);
  Executor executor;
  for (int step = 1; step <= 2; ++step) {
    FeedMap step_feeds = feeds;
    step_feeds.emplace_back(iteration, Tensor::scalar(step, DType::float32));
    executor.run(step_feeds, {}, targets);
    CHECK(executor.plan(step_feeds, {}, targets).num_groups() == 1);  // the GPU's 100 updates
  }
  for (std::size_t i = 0; i < cpu_vars.size(); ++i) {
    CAPTURE(cpu_vars[i]->name());
    check_close(gpu_vars[i]->value().to(cpu_device()), cpu_vars[i]->value(), 1e-5, 1e-6);
  }
}

TEST_CASE("cuda: dropout draws the CPU's masks, bit for bit") {
  Tensor x = testing::random_tensor({123, 45}, 91, 0.1, 1, false, DType::float32);
  check_parity({x}, [](std::vector<SymbolicTensor> v) { return ops::dropout(v[0], 0.3, 42)[0]; }, 0, 0);
  check_parity({x}, [](std::vector<SymbolicTensor> v) { return ops::dropout(v[0], 0.5, 7)[1]; }, 0, 0);
  // A tower's share with its row offset (computed on the GPU by batch_share_start), rows of 45 elements.
  check_parity({x}, [](std::vector<SymbolicTensor> v) {
    return ops::dropout(ops::batch_share(v[0], {5, 3}, 1), 0.4, 9, ops::batch_share_start(v[0], {5, 3}, 1))[1];
  }, 0, 0);
}

TEST_CASE("cuda: random_uniform and random_normal draw the CPU's values") {
  Tensor x = testing::random_tensor({123, 45}, 93, 0.1, 1, false, DType::float32);
  // The uniform words are the CPU's bit for bit; Box-Muller's log, sin and cos are CUDA's, an ulp or two
  // of a double from the C library's.
  check_parity({x}, [](std::vector<SymbolicTensor> v) { return ops::random_uniform(v[0], -1.0, 2.0, 42); }, 0, 0);
  check_parity({x}, [](std::vector<SymbolicTensor> v) { return ops::random_normal(v[0], 0.5, 2.0, 42); }, 1e-6, 1e-6);
  check_parity({testing::random_tensor({31, 7}, 94, 0.1, 1, false, DType::float64)},
               [](std::vector<SymbolicTensor> v) { return ops::random_normal(v[0], 0.0, 1.0, 8); }, 1e-12, 1e-12);
  check_parity({x}, [](std::vector<SymbolicTensor> v) {
    return ops::random_normal(ops::batch_share(v[0], {5, 3}, 1), 0.0, 1.0, 9, ops::batch_share_start(v[0], {5, 3}, 1));
  }, 1e-6, 1e-6);
  check_parity({x}, [](std::vector<SymbolicTensor> v) {
    return ops::random_uniform(v[0], 0.0, 1.0, 5, ops::batch_share_start(v[0], {5, 3}, 1), {-1, 1, 7});
  }, 0, 0);
}

TEST_CASE("cuda: cast between every pair of dtypes matches the CPU") {
  const DType dtypes[] = {DType::float32, DType::float64, DType::int32, DType::int64, DType::uint8};
  Tensor x = testing::random_tensor({17, 9}, 95, 0.1, 100, true, DType::float64);  // positive: uint8 too
  for (DType from : dtypes)
    for (DType to : dtypes) {
      CAPTURE(dtype_name(from));
      CAPTURE(dtype_name(to));
      check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::cast(ops::cast(v[0], from), to); }, 0, 0);
    }
}

TEST_CASE("cuda: transpose (any permutation, any dtype) and reshape match the CPU") {
  Tensor x = testing::random_tensor({4, 5, 6, 3}, 97, 0.1, 100, true, DType::float64);
  for (DType dtype : {DType::float32, DType::float64, DType::uint8, DType::int64})
    for (const ops::Ints& perm : std::vector<ops::Ints>{{}, {0, 2, 1, 3}, {3, 0, 1, 2}, {1, 3, 0, 2}}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(perm.size());
      check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::transpose(ops::cast(v[0], dtype), perm); }, 0, 0);
    }
  check_parity({x}, [](std::vector<SymbolicTensor> v) { return ops::reshape(v[0], {20, 18}); }, 0, 0);
  check_parity({x}, [](std::vector<SymbolicTensor> v) {
    return ops::reshape_like(ops::reshape(v[0], {-1, 3}), v[0], 2, {-1});
  }, 0, 0);
}

TEST_CASE("cuda: reverse along every axis, any dtype, and its gradient match the CPU") {
  Tensor x = testing::random_tensor({4, 5, 6, 3}, 98, 0.1, 100, true, DType::float64);
  for (DType dtype : {DType::float32, DType::float64, DType::uint8, DType::int64})
    for (int axis : {0, 1, 2, 3}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(axis);
      check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::reverse(ops::cast(v[0], dtype), axis); }, 0, 0);
    }
  Tensor xf = testing::random_tensor({7, 2, 5}, 99, 0.1, 2, false, DType::float32);
  check_parity({xf}, [](std::vector<SymbolicTensor> v) {
    return gradients(ops::reduce_sum(ops::square(ops::reverse(v[0], 0))), {v[0]})[0];
  });
}

namespace {

// d(sum(y²))/dx: a gradient with a different value at every element of y.
SymbolicTensor squared_gradient(const SymbolicTensor& y, const SymbolicTensor& x) {
  return gradients(ops::reduce_sum(ops::square(y)), {x})[0];
}

}  // namespace

TEST_CASE("cuda: concat, split, slice, pad and their gradients match the CPU, in any dtype") {
  Tensor a = testing::random_tensor({4, 5, 6}, 101, 0.1, 100, true, DType::float64);
  Tensor b = testing::random_tensor({4, 3, 6}, 102, 0.1, 100, true, DType::float64);
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::uint8}) {
    CAPTURE(dtype_name(dtype));
    check_parity({a, b}, [&](std::vector<SymbolicTensor> v) {
      return ops::concat({ops::cast(v[0], dtype), ops::cast(v[1], dtype), ops::cast(v[0], dtype)}, 1);
    }, 0, 0);
    for (int part = 0; part < 3; ++part) {
      CAPTURE(part);
      check_parity({a}, [&](std::vector<SymbolicTensor> v) { return ops::split(ops::cast(v[0], dtype), -1, {1, 3, 2})[part]; }, 0, 0);
    }
    check_parity({a}, [&](std::vector<SymbolicTensor> v) { return ops::slice(ops::cast(v[0], dtype), {1, 0, 2}, {2, 5, 3}); }, 0, 0);
    check_parity({a}, [&](std::vector<SymbolicTensor> v) { return ops::pad(ops::cast(v[0], dtype), {0, 1, 2, 0, 1, 3}, 7.0); }, 0, 0);
  }
  // Gradients (float32): concat_grad, slice_grad, pad_grad, and concat along the first and last axes.
  Tensor af = testing::random_tensor({4, 5, 6}, 103, 0.1, 2, false, DType::float32);
  Tensor bf = testing::random_tensor({4, 5, 2}, 104, 0.1, 2, false, DType::float32);
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    check_parity({af, bf}, [&](std::vector<SymbolicTensor> v) {
      return squared_gradient(ops::concat({v[0], v[1]}, -1), v[which]);
    });
  }
  check_parity({af}, [](std::vector<SymbolicTensor> v) { return squared_gradient(ops::concat({v[0], v[0]}, 0), v[0]); });
  check_parity({af}, [](std::vector<SymbolicTensor> v) {
    return squared_gradient(ops::slice(v[0], {1, 2, 0}, {3, 2, 6}), v[0]);
  });
  check_parity({af}, [](std::vector<SymbolicTensor> v) {
    return squared_gradient(ops::pad(v[0], {1, 1, 0, 2, 3, 0}), v[0]);
  });
}

TEST_CASE("cuda: one_hot, gather and gather_grad (repeated indices) match the CPU") {
  std::vector<std::int64_t> picks = {3, 0, 9, 3, 3, 7, 0, 12, -1, 5};  // 12 and -1: out of range for one_hot
  Tensor indices = Tensor::from_vector<std::int64_t>({2, 5}, picks);
  for (DType dtype : {DType::float32, DType::int32, DType::uint8}) {
    CAPTURE(dtype_name(dtype));
    check_parity({indices}, [&](std::vector<SymbolicTensor> v) { return ops::one_hot(v[0], 10, dtype, 5.0, 2.0); }, 0, 0);
  }
  std::vector<std::int32_t> rows = {3, 0, 9, 3, 3, 7, 0, 11, 1, 5};  // params has 12 rows
  Tensor row_indices = Tensor::from_vector<std::int32_t>({2, 5}, rows);
  Tensor params = testing::random_tensor({12, 4, 3}, 105, 0.1, 2, false, DType::float32);
  check_parity({params, row_indices}, [](std::vector<SymbolicTensor> v) { return ops::gather(v[0], v[1]); }, 0, 0);
  check_parity({params, row_indices}, [](std::vector<SymbolicTensor> v) {
    return squared_gradient(ops::gather(v[0], v[1]), v[0]);
  });
}

TEST_CASE("cuda: argmax, reduce_max's gradient (ties shared) and compare_mask match the CPU") {
  // Whole numbers 0..3: many ties.
  Tensor x = testing::random_tensor({6, 5, 4}, 106, 0.1, 3.9, true, DType::float64);
  Tensor y = testing::random_tensor({5, 4}, 107, 0.1, 3.9, true, DType::float64);
  const auto whole = [](const SymbolicTensor& v, DType dtype) { return ops::cast(ops::cast(v, DType::int32), dtype); };
  for (DType dtype : {DType::float32, DType::float64, DType::int64})
    for (int axis : {0, 1, -1}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(axis);
      check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::argmax(whole(v[0], dtype), axis); }, 0, 0);
    }
  for (const ops::Ints& axes : std::vector<ops::Ints>{{}, {1}, {0, 2}}) {
    CAPTURE(axes.size());
    check_parity({x}, [&](std::vector<SymbolicTensor> v) {
      auto xf = whole(v[0], DType::float32);
      return squared_gradient(ops::reduce_max(xf, axes), xf);
    });
  }
  for (const char* mode : {"eq", "gt", "ge", "lt", "le"}) {
    CAPTURE(mode);
    check_parity({x, y}, [&](std::vector<SymbolicTensor> v) {
      return ops::compare_mask(whole(v[0], DType::float32), whole(v[1], DType::float32), mode);
    }, 0, 0);
  }
}

TEST_CASE("cuda: mean squared and mean absolute error and their gradients match the CPU") {
  for (DType dtype : {DType::float32, DType::float64}) {
    CAPTURE(dtype_name(dtype));
    Tensor y_true = testing::random_tensor({33, 3}, 108, 0.1, 2, false, dtype);
    Tensor y_pred = testing::random_tensor({33, 3}, 109, 0.1, 2, false, dtype);
    check_parity({y_true, y_pred}, [](std::vector<SymbolicTensor> v) { return ops::mean_squared_error(v[0], v[1]); });
    check_parity({y_true, y_pred}, [](std::vector<SymbolicTensor> v) { return ops::mean_absolute_error(v[0], v[1]); });
    check_parity({y_true, y_pred}, [](std::vector<SymbolicTensor> v) {
      return squared_gradient(ops::mean_squared_error(v[0], v[1]), v[1]);
    });
    check_parity({y_true, y_pred}, [](std::vector<SymbolicTensor> v) {
      return squared_gradient(ops::mean_absolute_error(v[0], v[1]), v[1]);
    });
  }
}

// Sizes only large tensors reach: more elements than one launch's grid covers (2^24 + 3: the grid-stride
// loops), more reduction outputs than a grid dimension allows (70,000 > 65,535), batch norm over 70,000
// rows (past its 128-part cap). One case per kernel family.
TEST_CASE("cuda: large tensors (grid-stride loops, > 65,535 outputs, batch norm over 70,000 rows) match the CPU") {
  const std::int64_t big = (std::int64_t{1} << 24) + 3;
  Tensor a = testing::random_tensor({big}, 201, 0.1, 1, false, DType::float32);
  Tensor b = testing::random_tensor({big}, 202, 0.1, 1, false, DType::float32);
  check_parity({a, b}, [](std::vector<SymbolicTensor> v) { return ops::add(ops::multiply(v[0], v[1]), v[0]); }, 0, 0);
  check_parity({a}, [](std::vector<SymbolicTensor> v) { return ops::relu(v[0]); }, 0, 0);
  check_parity({a}, [](std::vector<SymbolicTensor> v) { return ops::dropout(v[0], 0.3, 42)[0]; }, 0, 0);
  check_parity({a}, [](std::vector<SymbolicTensor> v) {  // a transpose of (2, 2^23 + 1): 2^24 + 2 elements
    return ops::transpose(ops::reshape(ops::slice(v[0], {0}, {(std::int64_t{1} << 24) + 2}), {2, (std::int64_t{1} << 23) + 1}), {1, 0});
  }, 0, 0);
  Tensor rows = testing::random_tensor({70000, 10}, 203, 0.1, 3, false, DType::float32);
  check_parity({rows}, [](std::vector<SymbolicTensor> v) { return ops::reduce_max(v[0], {1}); }, 0, 0);
  check_parity({rows}, [](std::vector<SymbolicTensor> v) { return ops::reduce_sum(v[0], {1}); }, 1e-5, 1e-5);
  check_parity({rows}, [](std::vector<SymbolicTensor> v) { return ops::reduce_sum(v[0], {0}); }, 1e-5, 1e-4);
  check_parity({rows}, [](std::vector<SymbolicTensor> v) { return ops::softmax(v[0], -1); });
  check_parity({rows}, [](std::vector<SymbolicTensor> v) { return ops::argmax(v[0], -1); }, 0, 0);
  Tensor columns = testing::random_tensor({3, 70000}, 204, 0.1, 3, false, DType::float32);
  check_parity({columns}, [](std::vector<SymbolicTensor> v) { return ops::reduce_sum(v[0], {0}); }, 1e-5, 1e-5);
  check_parity({columns}, [](std::vector<SymbolicTensor> v) { return ops::bias_add_grad(ops::transpose(v[0], {1, 0})); },
               1e-5, 1e-3);
  Tensor bn = testing::random_tensor({70000, 3}, 205, 0.1, 3, false, DType::float32);
  Tensor gamma = testing::random_tensor({3}, 206, 0.5, 2, false, DType::float32);
  Tensor beta = testing::random_tensor({3}, 207, 0.1, 1, false, DType::float32);
  for (std::size_t k = 0; k < 3; ++k)  // y, mean, variance
    check_parity({bn, gamma, beta},
                 [&](std::vector<SymbolicTensor> v) { return ops::batch_norm_training(v[0], v[1], v[2], 1e-3)[k]; },
                 1e-4, 1e-4);
  Tensor image = testing::random_tensor({64, 256, 256, 4}, 208, 0.1, 1, false, DType::float32);  // 2^24 elements
  check_parity({image}, [](std::vector<SymbolicTensor> v) { return ops::max_pool2d(v[0]); }, 0, 0);
}

TEST_CASE("cuda: mnist_cnn trained on cuda:0 gives the CPU's loss sequence, step by step") {
  // Random images and labels: the same numbers on both devices (the weights are drawn on the host).
  Tensor x = testing::random_tensor({256, 28, 28, 1}, 501, 0.0, 1, true, DType::float32);
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 256; ++i) ids.push_back((i * 7 + i / 3) % 10);
  Tensor y = Tensor::from_vector<std::int32_t>({256}, ids);
  const auto train = [&](const char* where) {
    clear_session();
    set_random_seed(5);
    DefaultDeviceScope scope(where);
    Sequential model({layers::Input({28, 28, 1}), layers::Conv2D(32, {3, 3}, {.activation = "relu"}),
                      layers::Conv2D(64, {3, 3}, {.activation = "relu"}), layers::MaxPooling2D({2, 2}),
                      layers::Dropout(0.25), layers::Flatten(), layers::Dense(128, {.activation = "relu"}),
                      layers::Dropout(0.5), layers::Dense(10, {.activation = "softmax"})});
    model.compile(optimizers::Adadelta(1.0), "sparse_categorical_crossentropy", {"accuracy"});
    std::vector<double> losses;
    for (std::int64_t step = 0; step < 8; ++step) {
      const std::int64_t begin = step * 32;
      std::vector<float> rows(x.data<float>() + begin * 784, x.data<float>() + (begin + 32) * 784);
      std::vector<std::int32_t> labels(ids.begin() + begin, ids.begin() + begin + 32);
      auto logs = model.train_on_batch({Tensor::from_vector<float>({32, 28, 28, 1}, rows)},
                                       {Tensor::from_vector<std::int32_t>({32}, labels)});
      losses.push_back(logs.at("loss"));
    }
    losses.push_back(model.evaluate(x, y, {.batch_size = 64, .verbose = 0}).at("loss"));
    return std::make_pair(losses, model.get_weights());
  };
  const auto [cpu_losses, cpu_weights] = train("cpu:0");
  const auto [gpu_losses, gpu_weights] = train("cuda:0");
  REQUIRE(gpu_losses.size() == cpu_losses.size());
  for (std::size_t i = 0; i < cpu_losses.size(); ++i) {
    CAPTURE(i);
    CHECK(gpu_losses[i] == doctest::Approx(cpu_losses[i]).epsilon(1e-4));
  }
  for (std::size_t i = 0; i < cpu_weights.size(); ++i) check_close(gpu_weights[i], cpu_weights[i], 1e-3, 1e-4);
}
