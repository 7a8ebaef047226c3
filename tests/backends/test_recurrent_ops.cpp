// Tests of the recurrent ops (simple_rnn, lstm, gru) on the CPU: every output against the same cell
// unrolled step by step with other ops (slice, matmul, the activations), with go_backwards, masks
// and other activations; gradients by finite differences; bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tower/core/autodiff.h"
#include "tower/core/error.h"
#include "tower/core/gate_activation.h"
#include "tower/core/graph.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::evaluate;
using tower::testing::random_tensor;

namespace {

using Fn = std::function<SymbolicTensor(const SymbolicTensor&)>;

// The activation a reference cell applies, composed from ops (layers/activations).
Fn reference(const std::string& name) {
  return [name](const SymbolicTensor& x) { return apply_activation(name, x); };
}

// Unrolls a cell: step(x_s (B, k), state) -> new state (its first entry is h). Returns every state
// entry of every step (T, B, U), in step order, then every entry's final value (B, U): the fused
// op's outputs without the gates.
struct Unrolled {
  std::vector<SymbolicTensor> outputs;
};

using Step = std::function<std::vector<SymbolicTensor>(const SymbolicTensor&, const std::vector<SymbolicTensor>&)>;

Unrolled unroll(const SymbolicTensor& x_proj, std::vector<SymbolicTensor> state, const SymbolicTensor& mask,
                bool backwards, const Step& step) {
  const std::int64_t T = x_proj.shape()[0], B = x_proj.shape()[1], K = x_proj.shape()[2];
  std::vector<std::vector<SymbolicTensor>> per_entry(state.size());
  for (std::int64_t s = 0; s < T; ++s) {
    const std::int64_t t = backwards ? T - 1 - s : s;
    auto x = ops::reshape(ops::slice(x_proj, {t, 0, 0}, {1, -1, -1}), {B, K});
    auto next = step(x, state);
    if (mask.defined()) {  // state = m next + (1 - m) state, m (B, 1) of 0 or 1
      auto m = ops::slice(mask, {0, t}, {-1, 1});
      auto not_m = ops::subtract(ops::ones_like(m), m);
      for (std::size_t i = 0; i < next.size(); ++i)
        next[i] = ops::add(ops::multiply(m, next[i]), ops::multiply(not_m, state[i]));
    }
    state = next;
    for (std::size_t i = 0; i < state.size(); ++i) {
      const std::int64_t U = state[i].shape()[1];
      per_entry[i].push_back(ops::reshape(state[i], {1, B, U}));
    }
  }
  Unrolled out;
  for (auto& entries : per_entry) out.outputs.push_back(ops::concat(entries, 0));
  for (auto& final_state : state) out.outputs.push_back(final_state);
  return out;
}

SymbolicTensor cols(const SymbolicTensor& x, std::int64_t first, std::int64_t n) { return ops::slice(x, {0, first}, {-1, n}); }

Unrolled simple_rnn_reference(const std::vector<SymbolicTensor>& v, const SymbolicTensor& mask, const ops::RecurrentArgs& a) {
  const Fn act = reference(a.activation);
  return unroll(v[0], {v[2]}, mask, a.go_backwards, [&](const SymbolicTensor& x, const std::vector<SymbolicTensor>& st) {
    return std::vector<SymbolicTensor>{act(ops::add(x, ops::matmul(st[0], v[1])))};
  });
}

Unrolled lstm_reference(const std::vector<SymbolicTensor>& v, const SymbolicTensor& mask, const ops::RecurrentArgs& a) {
  const Fn act = reference(a.activation), rec = reference(a.recurrent_activation);
  const std::int64_t U = v[1].shape()[0];
  return unroll(v[0], {v[2], v[3]}, mask, a.go_backwards, [&](const SymbolicTensor& x, const std::vector<SymbolicTensor>& st) {
    auto z = ops::add(x, ops::matmul(st[0], v[1]));
    auto i = rec(cols(z, 0, U)), f = rec(cols(z, U, U)), g = act(cols(z, 2 * U, U)), o = rec(cols(z, 3 * U, U));
    auto c = ops::add(ops::multiply(f, st[1]), ops::multiply(i, g));
    return std::vector<SymbolicTensor>{ops::multiply(o, act(c)), c};
  });
}

Unrolled gru_reference(const std::vector<SymbolicTensor>& v, const SymbolicTensor& mask, const ops::RecurrentArgs& a) {
  const Fn act = reference(a.activation), rec = reference(a.recurrent_activation);
  const std::int64_t U = v[1].shape()[0];
  const SymbolicTensor& kernel = v[1];
  auto bias = ops::reshape(v[2], {1, 3 * U});
  return unroll(v[0], {v[3]}, mask, a.go_backwards, [&](const SymbolicTensor& x, const std::vector<SymbolicTensor>& st) {
    const SymbolicTensor& hp = st[0];
    SymbolicTensor z, r, n;
    if (a.reset_after) {
      auto q = ops::add(ops::matmul(hp, kernel), bias);
      z = rec(ops::add(cols(x, 0, U), cols(q, 0, U)));
      r = rec(ops::add(cols(x, U, U), cols(q, U, U)));
      n = act(ops::add(cols(x, 2 * U, U), ops::multiply(r, cols(q, 2 * U, U))));
    } else {
      auto q = ops::add(ops::matmul(hp, cols(kernel, 0, 2 * U)), cols(bias, 0, 2 * U));
      z = rec(ops::add(cols(x, 0, U), cols(q, 0, U)));
      r = rec(ops::add(cols(x, U, U), cols(q, U, U)));
      auto qh = ops::add(ops::matmul(ops::multiply(r, hp), cols(kernel, 2 * U, U)), cols(bias, 2 * U, U));
      n = act(ops::add(cols(x, 2 * U, U), qh));
    }
    auto h = ops::add(ops::multiply(z, hp), ops::multiply(ops::subtract(ops::ones_like(z), z), n));
    return std::vector<SymbolicTensor>{h};
  });
}

enum class Cell { simple_rnn, lstm, gru };

// Input shapes of one cell: x_proj, recurrent_kernel, (recurrent_bias,) h0 (, c0).
std::vector<Shape> input_shapes(Cell cell, std::int64_t T, std::int64_t B, std::int64_t U) {
  switch (cell) {
    case Cell::simple_rnn: return {{T, B, U}, {U, U}, {B, U}};
    case Cell::lstm: return {{T, B, 4 * U}, {U, 4 * U}, {B, U}, {B, U}};
    case Cell::gru: return {{T, B, 3 * U}, {U, 3 * U}, {3 * U}, {B, U}};
  }
  return {};
}

// The fused op's differentiable outputs: the states (LSTM's c states too), then the final states.
std::vector<SymbolicTensor> fused(Cell cell, const std::vector<SymbolicTensor>& v, const SymbolicTensor& mask,
                                  const ops::RecurrentArgs& a) {
  switch (cell) {
    case Cell::simple_rnn: return ops::simple_rnn(v[0], v[1], v[2], mask, a);
    case Cell::lstm: {
      auto r = ops::lstm(v[0], v[1], v[2], v[3], mask, a);
      return {r[0], r[1], r[3], r[4]};
    }
    case Cell::gru: {
      auto r = ops::gru(v[0], v[1], v[2], v[3], mask, a);
      return {r[0], r[2]};
    }
  }
  return {};
}

std::vector<SymbolicTensor> unrolled(Cell cell, const std::vector<SymbolicTensor>& v, const SymbolicTensor& mask,
                                     const ops::RecurrentArgs& a) {
  switch (cell) {
    case Cell::simple_rnn: return simple_rnn_reference(v, mask, a).outputs;
    case Cell::lstm: return lstm_reference(v, mask, a).outputs;
    case Cell::gru: return gru_reference(v, mask, a).outputs;
  }
  return {};
}

// A (B, T) mask of 0 and 1 with masked steps at the start, the middle and the end of rows.
Tensor mask_value(std::int64_t B, std::int64_t T, DType dtype) {
  std::vector<double> m(static_cast<std::size_t>(B * T), 1.0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t)
      if ((b + 2 * t) % 3 == 0) m[static_cast<std::size_t>(b * T + t)] = 0.0;
  Tensor value = Tensor::from_vector<double>({B, T}, m);
  return dtype == DType::float64 ? value : Tensor::from_vector<float>({B, T}, std::vector<float>(m.begin(), m.end()));
}

void check_against_unrolled(Cell cell, const ops::RecurrentArgs& a, bool masked, std::int64_t B = 3,
                            DType dtype = DType::float64) {
  const std::int64_t T = 5, U = 3;
  Graph g;
  std::vector<SymbolicTensor> v;
  std::uint64_t seed = 10;
  for (const Shape& shape : input_shapes(cell, T, B, U)) {
    Tensor value = random_tensor(shape, seed++, 0.1, 1.0, false, dtype);
    v.push_back(g.constant(value));
  }
  const SymbolicTensor mask = masked ? g.constant(mask_value(B, T, dtype)) : SymbolicTensor{};
  auto got = fused(cell, v, mask, a);
  auto want = unrolled(cell, v, mask, a);
  auto values = evaluate(got), expected = evaluate(want);
  const double tol = dtype == DType::float64 ? 1e-12 : 1e-5;
  for (std::size_t i = 0; i < values.size(); ++i) check_close(values[i], expected[i], tol, tol);
}

const char* name_of(Cell cell) { return cell == Cell::simple_rnn ? "simple_rnn" : cell == Cell::lstm ? "lstm" : "gru"; }

// fn(cell, args, masked) for every cell, go_backwards, mask or not, and (GRU) reset_after.
template <typename F>
void for_each_variant(F&& fn) {
  for (Cell cell : {Cell::simple_rnn, Cell::lstm, Cell::gru})
    for (bool backwards : {false, true})
      for (bool masked : {false, true})
        for (bool reset_after : {true, false}) {
          if (cell != Cell::gru && !reset_after) continue;
          CAPTURE(name_of(cell));
          CAPTURE(backwards);
          CAPTURE(masked);
          CAPTURE(reset_after);
          fn(cell, ops::RecurrentArgs{.go_backwards = backwards, .reset_after = reset_after}, masked);
        }
}

}  // namespace

TEST_CASE("recurrent ops: every step equals the cell unrolled with other ops") {
  for_each_variant([](Cell cell, const ops::RecurrentArgs& a, bool masked) { check_against_unrolled(cell, a, masked); });
}

TEST_CASE("recurrent ops: other activations, float32, and batches split over the pool's threads") {
  for (Cell cell : {Cell::simple_rnn, Cell::lstm, Cell::gru}) {
    CAPTURE(name_of(cell));
    for (const auto& [act, rec] : std::vector<std::pair<std::string, std::string>>{
             {"relu", "hard_sigmoid"}, {"softsign", "hard_sigmoid_keras3"}, {"linear", "tanh"}}) {
      CAPTURE(act);
      check_against_unrolled(cell, {.activation = act, .recurrent_activation = rec}, true);
    }
    check_against_unrolled(cell, {}, true, 3, DType::float32);
    check_against_unrolled(cell, {.go_backwards = true}, true, 37);  // several row blocks
  }
}

TEST_CASE("recurrent ops: gradients by finite differences") {
  for_each_variant([](Cell cell, const ops::RecurrentArgs& a, bool masked) {  // tanh and sigmoid: smooth
    const std::int64_t T = 4, B = 3, U = 2;
    check_gradients(input_shapes(cell, T, B, U), [&](const std::vector<SymbolicTensor>& v) {
      const SymbolicTensor mask = masked ? v[0].graph().constant(mask_value(B, T, DType::float64)) : SymbolicTensor{};
      return fused(cell, v, mask, a);
    });
  });
}

TEST_CASE("recurrent ops: bad input is named") {
  Graph g;
  auto x = g.placeholder({5, 2, 12});
  auto kernel = g.placeholder({3, 12});
  auto h0 = g.placeholder({2, 3});
  CHECK_THROWS_WITH_AS(ops::lstm(x, kernel, h0, h0, {}, {.activation = "gelu"}),
                       doctest::Contains("cannot run inside a recurrent cell"), ValueError);
  CHECK_THROWS_WITH_AS(ops::lstm(x, g.placeholder({3, 9}), h0, h0, {}, {}), doctest::Contains("recurrent_kernel"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::gru(x, g.placeholder({3, 9}), g.placeholder({9}), h0, {}, {}), doctest::Contains("x_proj"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(ops::simple_rnn(g.placeholder({5, 2, 3}), g.placeholder({3, 3}), h0, g.placeholder({2, 4}), {}),
                       doctest::Contains("mask"), ShapeError);
  CHECK_THROWS_WITH_AS(ops::simple_rnn(g.placeholder({5, 2, 3}), g.placeholder({3, 3}), g.placeholder({3, 3}), {}, {}),
                       doctest::Contains("h0"), ShapeError);
}

TEST_CASE("recurrent ops: an empty sequence returns the initial state, and no gradient but the final state's") {
  Graph g;
  auto h0 = g.constant(random_tensor({2, 3}, 5));
  auto c0 = g.constant(random_tensor({2, 3}, 6));
  auto r = ops::lstm(g.constant(Tensor::zeros({0, 2, 12}, DType::float64)), g.constant(random_tensor({3, 12}, 7)), h0,
                     c0, {}, {});
  auto values = evaluate({r[3], r[4], h0, c0});
  check_close(values[0], values[2], 0, 0);
  check_close(values[1], values[3], 0, 0);
  for (bool backwards : {false, true}) {
    Graph gg;
    auto x = gg.constant(Tensor::zeros({0, 2, 8}, DType::float64));
    auto kernel = gg.constant(random_tensor({2, 8}, 8));
    auto h = gg.constant(random_tensor({2, 2}, 9));
    auto out = ops::lstm(x, kernel, h, h, {}, {.go_backwards = backwards});
    auto grads = gradients(ops::reduce_sum(out[3]), {x, kernel, h});
    auto got = evaluate({grads[1], grads[2]});
    check_close(got[0], Tensor::zeros({2, 8}, DType::float64), 0, 0);
    check_close(got[1], Tensor::full({2, 2}, 1.0, DType::float64), 0, 0);
  }
}

TEST_CASE("recurrent ops: the CPU's branch-free float exp and tanh are within a few ulp of libm's") {
  double worst_exp = 0, worst_tanh = 0;
  for (int k = -200000; k <= 200000; ++k) {
    const float x = static_cast<float>(k) * 4.35e-4f;  // -87 .. 87 (below, exp clamps at 2^-126)
    const double e = std::exp(static_cast<double>(x));
    worst_exp = std::max(worst_exp, std::abs(gate_math::exp(x) - e) / e);
    const float t = x / 8.0f;  // -11 .. 11, both branches of tanh and the switch at 0.625
    const double th = std::tanh(static_cast<double>(t));
    if (th != 0.0) worst_tanh = std::max(worst_tanh, std::abs(gate_math::tanh(t) - th) / std::abs(th));
  }
  CHECK(worst_exp < 3e-7);
  CHECK(worst_tanh < 3e-7);
  CHECK(gate_math::exp(-1000.0f) >= 0.0f);
  CHECK(gate_math::tanh(-50.0f) == -1.0f);
  CHECK(gate_math::tanh(0.0f) == 0.0f);
}
