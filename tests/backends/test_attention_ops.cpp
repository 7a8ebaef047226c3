// dot_product_attention and its gradient: against the same attention from batch_matmul, softmax and
// transposes (with and without broadcast masks, a fully masked row, float32 and float64),
// finite-difference gradients, and bad input at build time.
#include <doctest/doctest.h>

#include <cmath>

#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::evaluate;
using tower::testing::random_tensor;
using Inputs = std::vector<SymbolicTensor>;

namespace {

// The attention as MultiHeadAttention composed it before the fused op: (B, T, N, h) to (B, N, T, h),
// logits, Keras's masked logits, softmax, the product with v, and back to (B, T, N, hv).
Inputs composed(const SymbolicTensor& q, const SymbolicTensor& k, const SymbolicTensor& v,
                const SymbolicTensor& mask, double scale) {
  const auto heads_first = [](const SymbolicTensor& x) { return ops::transpose(x, {0, 2, 1, 3}); };
  SymbolicTensor logits = ops::batch_matmul(ops::scale(heads_first(q), scale), heads_first(k), false, true);
  if (mask.defined()) {
    const SymbolicTensor one = q.graph().constant(Tensor::scalar(1.0, q.dtype()));
    logits = ops::add(ops::multiply(logits, mask), ops::scale(ops::subtract(mask, one), 1e9));
  }
  const SymbolicTensor p = ops::softmax(logits, -1);
  return {ops::transpose(ops::batch_matmul(p, heads_first(v)), {0, 2, 1, 3}), p};
}

// A constant 0/1 mask of `shape` with about a third zeros and, when `masked_row`, the first query row
// all zeros.
SymbolicTensor random_mask(Graph& g, const Shape& shape, DType dtype, bool masked_row) {
  std::vector<double> m(static_cast<std::size_t>(shape.num_elements()));
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = (i * 7919 % 3 == 0) ? 0.0 : 1.0;
  if (masked_row)
    for (std::int64_t j = 0; j < shape[3]; ++j) m[static_cast<std::size_t>(j)] = 0.0;
  return ops::cast(g.constant(Tensor::from_vector<double>(shape, m)), dtype);
}

}  // namespace

TEST_CASE("attention: dot_product_attention gives the composed attention's output, probabilities and gradients") {
  const std::int64_t B = 2, T = 5, S = 7, N = 3, H = 4, Hv = 6;
  const double scale = 1 / std::sqrt(4.0);
  for (DType dtype : {DType::float64, DType::float32})
    for (const Shape& mask_shape : {Shape{}, Shape{B, 1, T, S}, Shape{1, N, T, S}, Shape{B, N, T, S}}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(mask_shape.to_string());
      const double tol = dtype == DType::float64 ? 1e-10 : 2e-5;
      Graph g;
      auto q = g.placeholder({-1, T, N, H}, dtype), k = g.placeholder({-1, S, N, H}, dtype);
      auto v = g.placeholder({-1, S, N, Hv}, dtype), d_out = g.placeholder({-1, T, N, Hv}, dtype);
      SymbolicTensor mask;
      if (mask_shape.rank() == 4) mask = random_mask(g, mask_shape, dtype, mask_shape[0] == 1);
      const Inputs fused = ops::dot_product_attention(q, k, v, mask, scale);
      const Inputs reference = composed(q, k, v, mask, scale);
      const auto loss = [&](const SymbolicTensor& o) { return ops::reduce_sum(ops::multiply(o, d_out)); };
      Inputs fetches{fused[0], fused[1], reference[0], reference[1]};
      for (const auto& grads : {gradients(loss(fused[0]), {q, k, v}), gradients(loss(reference[0]), {q, k, v})})
        fetches.insert(fetches.end(), grads.begin(), grads.end());
      const auto r = evaluate(fetches, {{q, random_tensor({B, T, N, H}, 1, 0.1, 2.0, false, dtype)},
                                        {k, random_tensor({B, S, N, H}, 2, 0.1, 2.0, false, dtype)},
                                        {v, random_tensor({B, S, N, Hv}, 3, 0.1, 1.0, false, dtype)},
                                        {d_out, random_tensor({B, T, N, Hv}, 4, 0.1, 1.0, false, dtype)}});
      check_close(r[0], r[2], tol, tol);  // o
      check_close(r[1], r[3], tol, tol);  // p
      for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);  // dq, dk, dv
        check_close(r[4 + i], r[7 + i], tol, tol);
      }
    }
}

TEST_CASE("attention: dot_product_attention gradients by finite differences") {
  check_gradients({{2, 3, 2, 4}, {2, 5, 2, 4}, {2, 5, 2, 3}},
                  [](const Inputs& in) { return Inputs{ops::dot_product_attention(in[0], in[1], in[2], {}, 0.5)[0]}; });
  check_gradients({{1, 4, 1, 2}, {1, 6, 1, 2}, {1, 6, 1, 5}}, [](const Inputs& in) {
    auto mask = random_mask(in[0].graph(), {1, 1, 4, 6}, DType::float64, false);
    return Inputs{ops::dot_product_attention(in[0], in[1], in[2], mask, 0.7)[0]};
  });
}

TEST_CASE("attention: dot_product_attention rejects bad input at build time") {
  Graph g;
  auto q = g.placeholder({-1, 5, 2, 4}), k = g.placeholder({-1, 7, 2, 4}), v = g.placeholder({-1, 7, 2, 3});
  CHECK_THROWS_WITH_AS(ops::dot_product_attention(q, g.placeholder({-1, 7, 2, 5}), v, {}, 1.0),
                       doctest::Contains("key_dim"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::dot_product_attention(q, k, g.placeholder({-1, 6, 2, 3}), {}, 1.0),
                       doctest::Contains("key/value steps"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::dot_product_attention(q, k, v, g.placeholder({-1, 3, 5, 7}), 1.0),
                       doctest::Contains("(None, 3, 5, 7)"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::dot_product_attention(q, k, v, {}, 0.0), doctest::Contains("scale"), ValueError);
  // Its probabilities output is for the gradient only.
  auto out = ops::dot_product_attention(q, k, v, {}, 1.0);
  CHECK_THROWS_WITH_AS(gradients(ops::reduce_sum(out[1]), {q}), doctest::Contains("not differentiable"), ValueError);
}
