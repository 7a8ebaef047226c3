// The CPU's float16/bfloat16 ops (backends/cpu/half_kernels.cpp): each op on half tensors equals the
// float32 op on the same (widened) values with its outputs rounded once to the half type, bit for bit;
// gradients through autodiff too. Covers what a Keras mixed-precision model runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "tower/core/autodiff.h"
#include "tower/core/graph.h"
#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::evaluate;
using tower::testing::random_tensor;

namespace {

using OpFn = std::function<std::vector<SymbolicTensor>(const std::vector<SymbolicTensor>&)>;

// f on half inputs vs round(f on float32 copies of the half inputs). The first `exact` outputs must be
// equal bit for bit: one op rounds its output once, as the float32 op's output rounded. The others (a
// gradient made of several ops, each rounding its output to the half type; softmax's, sigmoid's and
// tanh's gradients, which read the rounded output) within `tolerance_u` units of the half type's
// roundoff u, relative to the float32 result's largest magnitude; the measured worst is printed.
void check_half_op(const char* what, const std::vector<Shape>& shapes, const OpFn& f, std::size_t exact = 99,
                   double tolerance_u = 0) {
  for (DType half : {DType::float16, DType::bfloat16}) {
    INFO(std::string(what) << " in " << dtype_name(half));
    const double u = half == DType::float16 ? 0x1p-11 : 0x1p-8;
    Graph g;
    std::vector<SymbolicTensor> h, wide;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      auto x = ops::cast(g.constant(random_tensor(shapes[i], 100 + i).to(cpu_device())), DType::float32);
      auto xh = ops::cast(x, half);
      h.push_back(xh);
      wide.push_back(ops::cast(xh, DType::float32));
    }
    const auto got = f(h);
    auto expected = f(wide);
    std::vector<SymbolicTensor> fetches = got;
    for (auto& e : expected) fetches.push_back(is_floating(e.dtype()) ? ops::cast(e, half) : e);
    fetches.insert(fetches.end(), expected.begin(), expected.end());
    const auto r = evaluate(fetches);
    const std::size_t n = got.size();
    for (std::size_t k = 0; k < n; ++k) {
      INFO("output " << k);
      CHECK(r[k].dtype() == (is_floating(got[k].dtype()) ? half : got[k].dtype()));
      CHECK(r[k].shape() == r[k + n].shape());
      if (k < exact) {
        CHECK(r[k].to_vector<double>() == r[k + n].to_vector<double>());
        continue;
      }
      const auto a = r[k].to_vector<double>(), b = r[k + 2 * n].to_vector<double>();
      double diff = 0, scale = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        REQUIRE(std::isfinite(a[i]));
        diff = std::max(diff, std::fabs(a[i] - b[i]));
        scale = std::max(scale, std::fabs(b[i]));
      }
      MESSAGE(std::string(what) << " in " << dtype_name(half) << ", output " << k << ": " << diff / scale / u << " u of float32's");
      CHECK(diff <= tolerance_u * u * scale);
      CHECK(diff > 0);  // computed in the half type, not in float32 (then a tolerance would not be needed)
    }
  }
}

// f's outputs and the gradients of sum(f(x)[0]·w) for every input, w a fixed random weighting.
OpFn with_grads(std::function<SymbolicTensor(const std::vector<SymbolicTensor>&)> f) {
  return [f](const std::vector<SymbolicTensor>& xs) {
    auto y = f(xs);
    // Weights exact in every float dtype (multiples of 1/4), so both sides weigh the same numbers.
    std::vector<double> values(static_cast<std::size_t>(y.shape().num_elements()));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = (static_cast<double>(i % 7) - 3.0) * 0.25;
    auto w = ops::cast(y.graph().constant(Tensor::from_vector<double>(y.shape(), values)), y.dtype());
    auto loss = ops::reduce_sum(ops::multiply(y, w));
    auto grads = gradients(loss, xs);
    std::vector<SymbolicTensor> out{y};
    for (auto& d : grads) out.push_back(d);
    return out;
  };
}

}  // namespace

TEST_CASE("half ops: matmul, dense, bias_add and their gradients") {
  check_half_op("matmul", {{4, 6}, {6, 5}}, with_grads([](auto& x) { return ops::matmul(x[0], x[1]); }));
  check_half_op("dense relu", {{4, 6}, {6, 5}, {5}},
                with_grads([](auto& x) { return ops::dense(x[0], x[1], x[2], "relu"); }));
  check_half_op("bias_add", {{3, 4, 5}, {5}}, with_grads([](auto& x) { return ops::bias_add(x[0], x[1]); }));
}

TEST_CASE("half ops: conv2d (and both backward ops), pooling") {
  check_half_op("conv2d", {{2, 7, 7, 3}, {3, 3, 3, 4}},
                with_grads([](auto& x) { return ops::conv2d(x[0], x[1], {.padding = "same"}); }));
  check_half_op("max_pool2d", {{2, 6, 6, 3}}, with_grads([](auto& x) { return ops::max_pool2d(x[0], {}); }));
  check_half_op("avg_pool2d", {{2, 6, 6, 3}}, with_grads([](auto& x) { return ops::avg_pool2d(x[0], {}); }));
}

TEST_CASE("half ops: activations, softmax, elementwise, reductions, reshape, batch norm") {
  check_half_op("relu", {{5, 7}}, with_grads([](auto& x) { return ops::relu(x[0]); }));
  // Their gradients read the rounded output (and the broadcast operand's gradient is a product, then a
  // sum, each rounded): measured within 1.1 u, bounded by 2 u; the gradient ops themselves are exact
  // (below).
  check_half_op("sigmoid", {{5, 7}}, with_grads([](auto& x) { return ops::sigmoid(x[0]); }), 1, 2);
  check_half_op("tanh", {{5, 7}}, with_grads([](auto& x) { return ops::tanh(x[0]); }), 1, 2);
  check_half_op("softmax", {{5, 7}}, with_grads([](auto& x) { return ops::softmax(x[0]); }), 1, 2);
  check_half_op("sigmoid_grad tanh_grad softmax_grad", {{5, 7}, {5, 7}}, [](auto& x) {
    return std::vector<SymbolicTensor>{ops::sigmoid_grad(x[0], x[1]), ops::tanh_grad(x[0], x[1]),
                                       ops::softmax_grad(x[0], x[1], -1)};
  });
  check_half_op("add", {{5, 7}, {7}}, with_grads([](auto& x) { return ops::add(x[0], x[1]); }));
  check_half_op("multiply", {{5, 7}, {7}}, with_grads([](auto& x) { return ops::multiply(x[0], x[1]); }), 2, 2);
  check_half_op("divide", {{5, 7}, {7}}, with_grads([](auto& x) { return ops::divide(x[0], ops::abs(x[1])); }), 1, 2);
  check_half_op("reduce", {{4, 5, 6}}, [](auto& x) {
    return std::vector<SymbolicTensor>{ops::reduce_sum(x[0], {1}), ops::reduce_mean(x[0]), ops::reduce_max(x[0], {2})};
  });
  check_half_op("reshape", {{4, 6}}, with_grads([](auto& x) { return ops::reshape(x[0], {4, 3, 2}); }));
  check_half_op("batch norm", {{6, 4}, {4}, {4}}, [](auto& x) { return ops::batch_norm_training(x[0], x[1], x[2]); });
}

TEST_CASE("half ops: cast rounds float32 and float64 once, and widens exactly") {
  Graph g;
  auto x64 = g.constant(Tensor::from_vector<double>({3}, {1.0 + 0x1p-11 + 0x1p-40, 0.1, -65520.0}));
  auto r = evaluate({ops::cast(x64, DType::float16), ops::cast(ops::cast(x64, DType::bfloat16), DType::float64),
                     ops::cast(ops::cast(x64, DType::float16), DType::bfloat16)});
  CHECK(r[0].to_vector<float>()[0] == 1.0f + 0x1p-10f);  // rounded once, from the double
  CHECK(std::isinf(r[0].to_vector<float>()[2]));
  CHECK(r[1].to_vector<double>()[1] == static_cast<double>(static_cast<float>(bfloat16_t(0.1))));
  CHECK(r[2].dtype() == DType::bfloat16);
}
