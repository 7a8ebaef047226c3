// Elementwise arithmetic with broadcasting, scale, sum_to, broadcast_like, matmul, batch_matmul and bias_add:
// forward values and finite-difference gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "tower/core/op_names.h"
#include "tower/core/ops.h"
#include "tests/support/gpu_parity.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::evaluate;
using Inputs = std::vector<SymbolicTensor>;

TEST_CASE("math: broadcasting arithmetic forward") {
  Graph g;
  auto a = g.constant(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  auto row = g.constant(Tensor::from_vector<float>({3}, {10, 20, 30}));
  auto col = g.constant(Tensor::from_vector<float>({2, 1}, {2, 4}));
  auto r = evaluate({ops::add(a, row), ops::subtract(a, col), ops::multiply(col, row), ops::divide(a, col),
                     ops::maximum(a, g.constant(Tensor::scalar(3.5))), ops::minimum(row, a), ops::scale(a, -2)});
  check_close(r[0], {11, 22, 33, 14, 25, 36});
  check_close(r[1], {-1, 0, 1, 0, 1, 2});
  check_close(r[2], {20, 40, 60, 40, 80, 120});
  check_close(r[3], {0.5, 1, 1.5, 1, 1.25, 1.5});
  check_close(r[4], {3.5, 3.5, 3.5, 4, 5, 6});
  check_close(r[5], {1, 2, 3, 4, 5, 6});
  check_close(r[6], {-2, -4, -6, -8, -10, -12});
  CHECK(r[2].shape() == Shape{2, 3});
}

TEST_CASE("math: integer arithmetic") {
  Graph g;
  auto a = g.constant(Tensor::from_vector<std::int32_t>({3}, {1, 2, 3}));
  auto r = evaluate({ops::multiply(a, a)});
  CHECK(r[0].to_vector<int>() == std::vector<int>{1, 4, 9});
}

TEST_CASE("math: sum_to and broadcast_like") {
  Graph g;
  auto x = g.constant(Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6}));
  auto like_row = g.constant(Tensor::zeros({1, 3}, DType::float64));
  auto like_col = g.constant(Tensor::zeros({2, 1}, DType::float64));
  auto like_vec = g.constant(Tensor::zeros({3}, DType::float64));
  auto r = evaluate({ops::sum_to(x, like_row), ops::sum_to(x, like_col), ops::sum_to(x, like_vec),
                     ops::broadcast_like(like_vec, x)});
  check_close(r[0], {5, 7, 9});
  check_close(r[1], {6, 15});
  check_close(r[2], {5, 7, 9});
  CHECK(r[3].shape() == Shape{2, 3});
}

TEST_CASE("math: matmul with every transpose, against a naive product") {
  // (37, 19, 23): row blocks on the pool; (13, 5000, 17): a long k split between the threads.
  for (const auto& sizes : {std::array<std::int64_t, 3>{37, 19, 23}, std::array<std::int64_t, 3>{13, 5000, 17}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const std::int64_t m = sizes[0], k = sizes[1], n = sizes[2];
        CAPTURE(k);
        Graph g;
        Tensor av = testing::random_tensor(ta ? Shape{k, m} : Shape{m, k}, 5, 0.1, 1, false, DType::float32);
        Tensor bv = testing::random_tensor(tb ? Shape{n, k} : Shape{k, n}, 6, 0.1, 1, false, DType::float32);
        auto y = evaluate({ops::matmul(g.constant(av), g.constant(bv), ta, tb)})[0];
        auto A = av.to_vector<double>(), B = bv.to_vector<double>();
        std::vector<double> expected(static_cast<std::size_t>(m * n), 0.0);
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j)
            for (std::int64_t p = 0; p < k; ++p)
              expected[static_cast<std::size_t>(i * n + j)] += A[static_cast<std::size_t>(ta ? p * m + i : i * k + p)] *
                                                               B[static_cast<std::size_t>(tb ? j * k + p : p * n + j)];
        CHECK(y.shape() == Shape{m, n});
        const double tol = k > 1000 ? 2e-4 : 1e-5;  // float sums of 5000 products of up to 1 in size
        check_close(y, expected, tol, tol);
        if (ta || tb) continue;
        // dense adds the bias and ReLU after the split product's partials are summed.
        Tensor bias = testing::random_tensor({n}, 7, 0.1, 1, false, DType::float32);
        auto z = evaluate({ops::dense(g.constant(av), g.constant(bv), g.constant(bias), "relu")})[0];
        auto bias_values = bias.to_vector<double>();
        for (std::size_t i = 0; i < expected.size(); ++i)
          expected[i] = std::max(0.0, expected[i] + bias_values[i % static_cast<std::size_t>(n)]);
        check_close(z, expected, tol, tol);
      }
}

TEST_CASE("math: batch_matmul with every transpose, against a naive loop over the batch") {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (DType dtype : {DType::float32, DType::float64}) {
        CAPTURE(ta);
        CAPTURE(tb);
        Graph g;
        // Batch (2, 3); rows m = 37 so that the row blocks of the pool cross batch items.
        const std::int64_t b0 = 2, b1 = 3, m = 37, k = 19, n = 23, batch = b0 * b1;
        Tensor av = testing::random_tensor(ta ? Shape{b0, b1, k, m} : Shape{b0, b1, m, k}, 7, 0.1, 1, false, dtype);
        Tensor bv = testing::random_tensor(tb ? Shape{b0, b1, n, k} : Shape{b0, b1, k, n}, 8, 0.1, 1, false, dtype);
        auto y = evaluate({ops::batch_matmul(g.constant(av), g.constant(bv), ta, tb)})[0];
        auto A = av.to_vector<double>(), B = bv.to_vector<double>();
        std::vector<double> expected(static_cast<std::size_t>(batch * m * n), 0.0);
        for (std::int64_t q = 0; q < batch; ++q)
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j)
              for (std::int64_t p = 0; p < k; ++p)
                expected[static_cast<std::size_t>(q * m * n + i * n + j)] +=
                    A[static_cast<std::size_t>(q * m * k + (ta ? p * m + i : i * k + p))] *
                    B[static_cast<std::size_t>(q * k * n + (tb ? j * k + p : p * n + j))];
        CHECK(y.shape() == Shape{b0, b1, m, n});
        CHECK(y.dtype() == dtype);
        check_close(y, expected, 1e-5, 1e-5);
      }
  // Empty inner dimension: zeros; empty batch: an empty result.
  Graph g;
  auto z = evaluate({ops::batch_matmul(g.constant(Tensor::zeros({2, 3, 0}, DType::float32)),
                                       g.constant(Tensor::zeros({2, 0, 4}, DType::float32))),
                     ops::batch_matmul(g.constant(Tensor::zeros({0, 3, 2}, DType::float32)),
                                       g.constant(Tensor::zeros({0, 2, 4}, DType::float32)))});
  CHECK(z[0].shape() == Shape{2, 3, 4});
  check_close(z[0], std::vector<double>(24, 0.0));
  CHECK(z[1].shape() == Shape{0, 3, 4});
}

TEST_CASE("math: batch_matmul refuses mismatched shapes and ranks") {
  Graph g;
  auto a = g.placeholder({-1, 3, 4}, DType::float32, "a");
  CHECK(ops::batch_matmul(a, g.placeholder({-1, 4, 5}, DType::float32, "b")).shape() == Shape{-1, 3, 5});
  CHECK(ops::batch_matmul(a, g.placeholder({2, 5, 4}, DType::float32, "b"), false, true).shape() == Shape{2, 3, 5});
  CHECK_THROWS_AS(ops::batch_matmul(a, g.placeholder({-1, 5, 6}, DType::float32, "b")), ShapeError);  // inner 4 vs 5
  CHECK_THROWS_AS(ops::batch_matmul(g.placeholder({2, 3, 4}, DType::float32, "a"),
                                    g.placeholder({3, 4, 5}, DType::float32, "b")),
                  ShapeError);  // batch 2 vs 3: no broadcasting
  CHECK_THROWS_AS(ops::batch_matmul(a, g.placeholder({4, 5}, DType::float32, "b")), ShapeError);     // rank 2
  CHECK_THROWS_AS(ops::batch_matmul(a, g.placeholder({1, 2, 4, 5}, DType::float32, "b")), ShapeError);  // ranks differ
  CHECK_THROWS_AS(ops::batch_matmul(a, g.placeholder({-1, 4, 5}, DType::float64, "b")), DTypeError);
  CHECK_THROWS_AS(ops::batch_matmul(g.placeholder({2, 3, 4}, DType::int32, "a"), g.placeholder({2, 4, 5}, DType::int32, "b")),
                  DTypeError);
}

TEST_CASE("math: gradients of broadcasting arithmetic") {
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum"}) {
    CAPTURE(op);
    check_gradients({{3, 4}, {4}}, [&](const Inputs& in) -> Inputs { return {in[0].graph().add1(op, in)}; });
    check_gradients({{2, 1, 3}, {4, 1}}, [&](const Inputs& in) -> Inputs { return {in[0].graph().add1(op, in)}; });
  }
  check_gradients({{5, 3}}, [](const Inputs& in) -> Inputs { return {ops::scale(in[0], 0.7)}; });
}

TEST_CASE("math: gradients of matmul, batch_matmul, bias_add, sum_to, broadcast_like") {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      check_gradients({ta ? Shape{4, 3} : Shape{3, 4}, tb ? Shape{5, 4} : Shape{4, 5}},
                      [&](const Inputs& in) -> Inputs { return {ops::matmul(in[0], in[1], ta, tb)}; });
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      check_gradients({ta ? Shape{2, 2, 4, 3} : Shape{2, 2, 3, 4}, tb ? Shape{2, 2, 5, 4} : Shape{2, 2, 4, 5}},
                      [&](const Inputs& in) -> Inputs { return {ops::batch_matmul(in[0], in[1], ta, tb)}; });
  check_gradients({{2, 3, 4}, {4}}, [](const Inputs& in) -> Inputs { return {ops::bias_add(in[0], in[1])}; });
  // The second argument supplies only a shape (no gradient), so it is a constant here.
  check_gradients({{3, 4}}, [](const Inputs& in) -> Inputs {
    return {ops::sum_to(in[0], in[0].graph().constant(Tensor::zeros({1, 4}, DType::float64)))};
  });
  check_gradients({{4}}, [](const Inputs& in) -> Inputs {
    return {ops::broadcast_like(in[0], in[0].graph().constant(Tensor::zeros({3, 4}, DType::float64)))};
  });
}

TEST_CASE("math: bias_add and its gradient forward") {
  Graph g;
  auto x = g.constant(Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
  auto b = g.constant(Tensor::from_vector<float>({2}, {10, 20}));
  auto r = evaluate({ops::bias_add(x, b), ops::bias_add_grad(x)});
  check_close(r[0], {11, 22, 13, 24});
  check_close(r[1], {4, 6});
}

TEST_CASE("math: bias_add with relu equals bias_add then relu, and its gradients check") {
  Graph g;
  auto x = g.constant(testing::random_tensor({5, 4, 6}, 3, 0.1, 1, false, DType::float32));
  auto b = g.constant(testing::random_tensor({6}, 4, 0.1, 1, false, DType::float32));
  auto r = evaluate({ops::bias_add(x, b, "relu"), ops::relu(ops::bias_add(x, b))});
  check_close(r[0], r[1], 0, 0);
  check_gradients({{2, 3, 4}, {4}}, [](const Inputs& in) -> Inputs { return {ops::bias_add(in[0], in[1], "relu")}; });
  CHECK_THROWS_AS(ops::bias_add(x, b, "tanh"), ValueError);
}

TEST_CASE("math: bias_add_relu_grad equals relu_grad then bias_add_grad bit for bit, and its gradients check") {
  // (5, 4, 6) and one channel take bias_add_grad's own loops; (8, 30, 30, 32) the fused pass, whose
  // rows split over the pool as sum_over_axes splits them.
  for (const Shape& shape : {Shape{5, 4, 6}, Shape{8, 30, 30, 32}, Shape{300, 200, 1}})
    for (DType dtype : {DType::float32, DType::float64}) {
      CAPTURE(shape.to_string());
      CAPTURE(dtype_name(dtype));
      Graph g;
      auto dy = g.constant(testing::random_tensor(shape, 5, 0.1, 1, false, dtype));
      Tensor yt = testing::random_tensor(shape, 6, 0.1, 1, false, dtype);
      if (dtype == DType::float32) yt.data<float>()[1] = 0.0f;  // masked: y > 0 only
      auto y = g.constant(yt);
      auto fused = ops::bias_add_relu_grad(dy, y);
      CHECK(fused[0].node()->op() == std::string(op_names::bias_add_relu_grad));
      auto dz = ops::relu_grad(dy, y);
      auto r = evaluate({fused[0], fused[1], dz, ops::bias_add_grad(dz)});
      check_close(r[0], r[2], 0, 0);
      check_close(r[1], r[3], 0, 0);
    }
  // Linear in dy; y only masks (no gradient reaches it).
  check_gradients({{3, 4, 5}}, [](const Inputs& in) -> Inputs {
    return ops::bias_add_relu_grad(in[0], in[0].graph().constant(testing::random_tensor({3, 4, 5}, 7)));
  });
}

TEST_CASE("math: dense equals matmul, bias_add and relu bit for bit, and its gradients check") {
  Graph g;
  auto x = g.constant(testing::random_tensor({37, 19}, 1, 0.1, 1, false, DType::float32));
  auto kernel = g.constant(testing::random_tensor({19, 23}, 2, 0.1, 1, false, DType::float32));
  auto bias = g.constant(testing::random_tensor({23}, 3, 0.1, 1, false, DType::float32));
  auto unfused = ops::bias_add(ops::matmul(x, kernel), bias);
  auto r = evaluate({ops::dense(x, kernel, bias), unfused, ops::dense(x, kernel, bias, "relu"), ops::relu(unfused)});
  check_close(r[0], r[1], 0, 0);
  check_close(r[2], r[3], 0, 0);
  CHECK(r[2].to_vector<float>() != r[0].to_vector<float>());  // some pre-activations were negative
  for (const char* activation : {"linear", "relu"}) {
    CAPTURE(activation);
    check_gradients({{5, 4}, {4, 3}, {3}},
                    [&](const Inputs& in) -> Inputs { return {ops::dense(in[0], in[1], in[2], activation)}; });
  }
  CHECK_THROWS_AS(ops::dense(x, kernel, bias, "tanh"), ValueError);
  CHECK_THROWS_AS(ops::dense(x, x, bias), ShapeError);
}

// The bound the GPU suites check GEMM-like ops with (tests/support/gpu_parity.h), tried on the CPU:
// OpenBLAS's float32 matmul and two hand-written summation orders all fall within it, a fixed rtol of
// 1e-5 does not hold between two orders, and a result off by more than the bound is caught.
TEST_CASE("math: the GEMM error bound holds for any summation order, where a fixed tolerance does not") {
  const std::int64_t m = 37, k = 129, n = 65;
  int pairs_past_fixed_tolerance = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    Tensor a = testing::random_tensor({m, k}, seed, 0.1, 1, false, DType::float32);
    Tensor b = testing::random_tensor({k, n}, seed + 100, 0.1, 1, false, DType::float32);
    Graph g;
    auto a32 = g.constant(a), b32 = g.constant(b);
    auto a64 = ops::cast(a32, DType::float64), b64 = ops::cast(b32, DType::float64);
    auto r = evaluate({ops::matmul(a32, b32), ops::matmul(a64, b64), ops::matmul(ops::abs(a64), ops::abs(b64))});
    const auto blas = testing::check_gemm_bound(r[0], r[1], r[2], k, DType::float32);
    CHECK_MESSAGE(blas.ok, blas.describe());
    // Forward and backward summation in float32: two orders a GPU and a CPU could take.
    std::vector<float> forward(static_cast<std::size_t>(m * n)), backward(forward.size());
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        float f = 0, s = 0;
        for (std::int64_t p = 0; p < k; ++p) f += pa[i * k + p] * pb[p * n + j];
        for (std::int64_t p = k - 1; p >= 0; --p) s += pa[i * k + p] * pb[p * n + j];
        forward[static_cast<std::size_t>(i * n + j)] = f;
        backward[static_cast<std::size_t>(i * n + j)] = s;
        pairs_past_fixed_tolerance += std::abs(f - s) > 1e-5 * std::abs(s) + 1e-6;
      }
    for (const auto* order : {&forward, &backward}) {
      const auto check = testing::check_gemm_bound(Tensor::from_vector<float>({m, n}, *order), r[1], r[2], k, DType::float32);
      CHECK_MESSAGE(check.ok, check.describe());
    }
    // One element moved by twice its bound fails.
    Tensor off = r[0].clone();
    off.data<float>()[7] += static_cast<float>(2 * testing::gemm_error_bound(k, DType::float32) * r[2].data<double>()[7]);
    CHECK_FALSE(testing::check_gemm_bound(off, r[1], r[2], k, DType::float32).ok);
  }
  CHECK(pairs_past_fixed_tolerance > 0);  // why the GPU suites no longer compare GEMMs with rtol 1e-5
  MESSAGE("outputs where two float32 summation orders differ by more than 1e-5 relative + 1e-6: "
          << pairs_past_fixed_tolerance << " of " << 20 * m * n);
}
