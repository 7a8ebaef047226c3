// Keras's masks: Masking and Embedding(mask_zero) make them, the recurrent layers skip masked steps,
// Dense, TimeDistributed and merge layers pass them on, GlobalAveragePooling1D, the losses and the
// metrics leave them out. Their numbers against real Keras are in tests/golden (the masking and mask_zero cases).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"

using namespace tower;
using namespace tower::layers;
using tower::testing::check_close;
using tower::testing::float32_random;
using tower::testing::random_tensor;

namespace {


// x (batch, time, f) with the steps of `padded` (per sample: a count of trailing steps) zeroed.
Tensor padded_at_end(const Tensor& x, const std::vector<int>& padded) {
  auto v = x.to_vector<float>();
  const std::int64_t time = x.shape()[1], f = x.shape()[2];
  for (std::size_t b = 0; b < padded.size(); ++b)
    for (std::int64_t t = time - padded[b]; t < time; ++t)
      for (std::int64_t k = 0; k < f; ++k) v[(b * time + t) * f + k] = 0.0f;
  return Tensor::from_vector<float>(x.shape(), v);
}

}  // namespace

TEST_CASE("masks: an LSTM after Masking ends where each sequence ends") {
  // Trailing padding is skipped: the final state of a padded sequence is the state after its last
  // real step, which the same LSTM gives on the sequence cut there.
  const Tensor x = padded_at_end(float32_random({3, 6, 2}, 1), {0, 2, 4});
  Sequential masked({Input({6, 2}), Masking(0.0), LSTM(3, {.name = "l1"})});
  const Tensor y = masked.predict(x);
  for (int b = 0; b < 3; ++b) {
    const std::int64_t length = 6 - std::vector<int>{0, 2, 4}[static_cast<std::size_t>(b)];
    Sequential cut({Input({length, 2}), LSTM(3)});
    cut.set_weights(masked.get_weights());
    auto xv = x.to_vector<float>();
    std::vector<float> part(xv.begin() + b * 12, xv.begin() + b * 12 + length * 2);
    const auto expected = cut.predict(Tensor::from_vector<float>({1, length, 2}, part)).to_vector<float>();
    const auto got = y.to_vector<float>();
    for (int j = 0; j < 3; ++j) CHECK(got[b * 3 + j] == doctest::Approx(expected[j]).epsilon(1e-5));
  }
}

TEST_CASE("masks: Embedding(mask_zero) and GlobalAveragePooling1D's mean over the unmasked steps") {
  // Embedding rows chosen so the pooled mean is easy: row k is (k, -k).
  Sequential model({Input({4}, {.dtype = DType::int32}), Embedding(5, 2, {.mask_zero = true}),
                    GlobalAveragePooling1D()});
  std::vector<float> table;
  for (int k = 0; k < 5; ++k) table.insert(table.end(), {float(k), float(-k)});
  model.set_weights({Tensor::from_vector<float>({5, 2}, table)});
  const Tensor ids = Tensor::from_vector<std::int32_t>({2, 4}, {1, 2, 0, 0, 3, 0, 4, 2});
  // Sample 0: mean of rows 1, 2 = 1.5; sample 1: mean of rows 3, 4, 2 = 3.
  check_close(model.predict(ids), Tensor::from_vector<float>({2, 2}, {1.5f, -1.5f, 3.0f, -3.0f}), 1e-6, 1e-6);
}

TEST_CASE("masks: what passes a mask on, what combines and what drops it") {
  Graph g;
  auto x = g.placeholder({-1, 5, 3});
  auto m = g.placeholder({-1, 5});
  auto m2 = g.placeholder({-1, 5});
  const std::vector<SymbolicTensor> masks{m};
  CHECK(Dense(2).compute_mask({x}, masks)[0] == m);
  CHECK(Dropout(0.5).compute_mask({x}, masks)[0] == m);
  CHECK(TimeDistributed(Dense(2)).compute_mask({x}, masks)[0] == m);
  CHECK(LSTM(2, {.return_sequences = true}).compute_mask({x}, masks)[0] == m);
  CHECK(!LSTM(2).compute_mask({x}, masks)[0].defined());  // the last step only: no mask
  CHECK(Flatten().compute_mask({x}, masks).empty());       // Keras 3 drops it
  CHECK(Add().compute_mask({x, x}, {m, SymbolicTensor()})[0] == m);
  CHECK(Add().compute_mask({x, x}, {m, m2})[0].defined());  // both: a step counts where both keep it
  CHECK(Add().compute_mask({x, x}, {SymbolicTensor(), SymbolicTensor()}).at(0).defined() == false);
}

TEST_CASE("masks: the loss and the metrics of a sequence output leave the masked steps out") {
  // A linear SimpleRNN with zero recurrent kernel returns x · kernel per step; the mse over the
  // unmasked steps alone is the loss.
  const Tensor x = padded_at_end(float32_random({2, 4, 1}, 3), {1, 3});
  Sequential model({Input({4, 1}), Masking(0.0), SimpleRNN(1, {.activation = "linear", .use_bias = false,
                                                               .return_sequences = true})});
  model.set_weights({Tensor::from_vector<float>({1, 1}, {2.0f}), Tensor::zeros({1, 1})});
  model.compile("sgd", "mse", {"mae"});
  const Tensor y = float32_random({2, 4, 1}, 4);
  const auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
  double squares = 0, absolutes = 0;
  int kept = 0;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 4 - std::vector<int>{1, 3}[static_cast<std::size_t>(b)]; ++t) {
      const double d = 2.0 * xv[b * 4 + t] - yv[b * 4 + t];
      squares += d * d;
      absolutes += std::abs(d);
      ++kept;
    }
  const auto logs = model.evaluate(x, y, {.verbose = 0});
  CHECK(logs.at("loss") == doctest::Approx(squares / kept).epsilon(1e-5));
  CHECK(logs.at("mae") == doctest::Approx(absolutes / kept).epsilon(1e-5));  // Keras 3's metrics, too
}
