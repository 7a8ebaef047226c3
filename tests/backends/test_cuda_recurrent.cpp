// GPU parity of the recurrent ops (simple_rnn, lstm, gru and their gradients) against the CPU kernels,
// with go_backwards, masks and GRU's reset_after; part of the test_cuda suite (label gpu).
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tests/support/gpu_parity.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_parity;

namespace {

enum class Cell { simple_rnn, lstm, gru };

const char* cell_name(Cell cell) { return cell == Cell::simple_rnn ? "simple_rnn" : cell == Cell::lstm ? "lstm" : "gru"; }

// A cell's inputs before the mask: x_proj (T, B, k·U), recurrent_kernel (U, k·U), GRU's recurrent_bias
// (3U,), h0 (B, U) and LSTM's c0 (B, U). The recurrent weights are small, so that the gates stay off
// their saturated ends through the steps.
std::vector<Tensor> cell_inputs(Cell cell, std::int64_t T, std::int64_t B, std::int64_t U, DType dtype) {
  const std::int64_t k = cell == Cell::simple_rnn ? 1 : cell == Cell::lstm ? 4 : 3;
  std::vector<Tensor> v{testing::random_tensor({T, B, k * U}, 601, 0.1, 1, false, dtype),
                        testing::random_tensor({U, k * U}, 602, 0.01, 0.3, false, dtype)};
  if (cell == Cell::gru) v.push_back(testing::random_tensor({3 * U}, 603, 0.01, 0.3, false, dtype));
  v.push_back(testing::random_tensor({B, U}, 604, 0.1, 1, false, dtype));
  if (cell == Cell::lstm) v.push_back(testing::random_tensor({B, U}, 605, 0.1, 1, false, dtype));
  return v;
}

// A (B, T) mask of 0 and 1 with masked steps at the start, the middle and the end of rows (and rows
// masked at several steps in a row).
Tensor sequence_mask(std::int64_t B, std::int64_t T, DType dtype) {
  std::vector<double> m(static_cast<std::size_t>(B * T), 1.0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t)
      if ((b + 2 * t) % 3 == 0 || (b == 1 && t >= 2 && t <= 4)) m[static_cast<std::size_t>(b * T + t)] = 0.0;
  if (dtype == DType::float64) return Tensor::from_vector<double>({B, T}, m);
  return Tensor::from_vector<float>({B, T}, std::vector<float>(m.begin(), m.end()));
}

// All of the cell's outputs (SimpleRNN: states, final h; LSTM: h, c, gates, final h, final c; GRU:
// states, gates, final h) over v = its inputs [, mask].
std::vector<SymbolicTensor> run_cell(Cell cell, const std::vector<SymbolicTensor>& v, const SymbolicTensor& mask,
                                     const ops::RecurrentArgs& a) {
  switch (cell) {
    case Cell::simple_rnn: return ops::simple_rnn(v[0], v[1], v[2], mask, a);
    case Cell::lstm: return ops::lstm(v[0], v[1], v[2], v[3], mask, a);
    case Cell::gru: return ops::gru(v[0], v[1], v[2], v[3], mask, a);
  }
  return {};
}

// The outputs that take a gradient (all but the gates).
std::vector<std::size_t> differentiable_outputs(Cell cell) {
  switch (cell) {
    case Cell::simple_rnn: return {0, 1};
    case Cell::lstm: return {0, 1, 3, 4};
    case Cell::gru: return {0, 2};
  }
  return {};
}

// Every output of the fused op, and the gradient with respect to every input but the mask of the sum
// of the differentiable outputs' squares (every incoming gradient of the _grad op, the final states'
// too, different at every element).
void check_cell_parity(Cell cell, const ops::RecurrentArgs& a, bool masked, DType dtype) {
  const std::int64_t T = 7, B = 9, U = 13;
  std::vector<Tensor> inputs = cell_inputs(cell, T, B, U, dtype);
  const std::size_t n = inputs.size();
  if (masked) inputs.push_back(sequence_mask(B, T, dtype));
  const auto outputs = [&](const std::vector<SymbolicTensor>& v) {
    return run_cell(cell, v, masked ? v[n] : SymbolicTensor{}, a);
  };
  const std::size_t count = cell == Cell::simple_rnn ? 2 : cell == Cell::lstm ? 5 : 3;
  for (std::size_t out = 0; out < count; ++out) {
    CAPTURE(out);
    check_parity(inputs, [&](std::vector<SymbolicTensor> v) { return outputs(v)[out]; });
  }
  for (std::size_t which = 0; which < n; ++which) {
    CAPTURE(which);
    check_parity(inputs, [&](std::vector<SymbolicTensor> v) {
      const auto y = outputs(v);
      SymbolicTensor loss;
      for (std::size_t out : differentiable_outputs(cell)) {
        SymbolicTensor term = ops::reduce_sum(ops::square(y[out]));
        loss = loss.defined() ? ops::add(loss, term) : term;
      }
      return gradients(loss, {v[which]})[0];
    }, 1e-5, 1e-5);
  }
}

}  // namespace

TEST_CASE("cuda: simple_rnn, lstm, gru and their gradients match the CPU (go_backwards, masks, reset_after)") {
  for (DType dtype : {DType::float32, DType::float64})
    for (Cell cell : {Cell::simple_rnn, Cell::lstm, Cell::gru})
      for (bool backwards : {false, true})
        for (bool masked : {false, true})
          for (bool reset_after : {true, false}) {
            if (cell != Cell::gru && !reset_after) continue;
            CAPTURE(dtype_name(dtype));
            CAPTURE(cell_name(cell));
            CAPTURE(backwards);
            CAPTURE(masked);
            CAPTURE(reset_after);
            check_cell_parity(cell, {.go_backwards = backwards, .reset_after = reset_after}, masked, dtype);
          }
  // The other activations the cells take.
  for (Cell cell : {Cell::simple_rnn, Cell::lstm, Cell::gru})
    for (const auto& [act, rec] : std::vector<std::pair<std::string, std::string>>{
             {"relu", "hard_sigmoid"}, {"softsign", "hard_sigmoid_keras3"}, {"linear", "tanh"}}) {
      CAPTURE(cell_name(cell));
      CAPTURE(act);
      CAPTURE(rec);
      check_cell_parity(cell, {.activation = act, .recurrent_activation = rec, .go_backwards = true}, true,
                        DType::float32);
    }
}
