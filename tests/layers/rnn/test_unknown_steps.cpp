// Recurrent layers, Bidirectional and TimeDistributed on Input({-1, F}) (Keras's shape=(None, F)):
// one model runs batches of any number of steps and gives what a model built for that length gives
// with the same weights; it trains on them, takes masks, and its config round-trips.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/io/model_config.h"
#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::layers;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::float32_random;
using tower::testing::message_of;

namespace {

// A model of `build(input)` on (batch, time, features) inputs; time -1 for unknown.
using Build = std::function<Model(std::int64_t time)>;

// The model with unknown time predicts, on 5 and 9 steps, what models built for 5 and 9 steps give
// with its weights.
void check_as_known(const Build& build, std::int64_t features, std::uint64_t seed) {
  Model open = build(-1);
  for (std::int64_t time : {5, 9}) {
    CAPTURE(time);
    const Tensor x = float32_random({3, time, features}, seed + static_cast<std::uint64_t>(time));
    Model known = build(time);
    known.set_weights(open.get_weights());
    check_close(open.predict(x, {.verbose = 0}), known.predict(x, {.verbose = 0}), 1e-5, 1e-6);
  }
}

// One SimpleRNN (kind 0), LSTM (1), GRU (2) or GRU with reset_after false (3) on (batch, time, 3).
Model single(std::int64_t time, int kind, RecurrentOptions options) {
  KerasTensor in = Input({time, 3});
  if (kind == 3) options.reset_after = false;
  KerasTensor y = kind == 0 ? SimpleRNN(4, options)(in) : kind == 1 ? LSTM(4, options)(in) : GRU(4, options)(in);
  return Model(in, y, "m");
}

// x (batch, time, f) with the last padded[b] steps of sample b zeroed.
Tensor padded_at_end(const Tensor& x, const std::vector<int>& padded) {
  auto v = x.to_vector<float>();
  const std::int64_t time = x.shape()[1], f = x.shape()[2];
  for (std::size_t b = 0; b < padded.size(); ++b)
    for (std::int64_t t = time - padded[b]; t < time; ++t)
      for (std::int64_t k = 0; k < f; ++k) v[static_cast<std::size_t>((static_cast<std::int64_t>(b) * time + t) * f + k)] = 0.0f;
  return Tensor::from_vector<float>(x.shape(), v);
}

}  // namespace

TEST_CASE("unknown steps: SimpleRNN, LSTM and GRU (return_sequences, go_backwards) as with a known length") {
  CHECK(LSTM(4)(Input({-1, 3})).shape() == Shape{-1, 4});
  CHECK(GRU(4, {.return_sequences = true})(Input({-1, 3})).shape() == Shape{-1, -1, 4});
  for (bool sequences : {false, true})
    for (bool backwards : {false, true}) {
      CAPTURE(sequences);
      CAPTURE(backwards);
      const RecurrentOptions o{.return_sequences = sequences, .go_backwards = backwards};
      for (int kind = 0; kind < 4; ++kind) {
        CAPTURE(kind);
        check_as_known([&](std::int64_t t) { return single(t, kind, o); }, 3, 10 * static_cast<std::uint64_t>(kind));
      }
    }
  // return_state: the final states too.
  KerasTensor in = Input({-1, 3});
  auto outs = LSTM(2, {.return_state = true}).call_multi({in});
  Model states({in}, outs, "states");
  const auto r = states.predict(std::vector<Tensor>{float32_random({2, 7, 3}, 50)}, {.verbose = 0});
  REQUIRE(r.size() == 3);
  CHECK(r[2].shape() == Shape{2, 2});
}

TEST_CASE("unknown steps: masks (Masking, Embedding mask_zero) with zero_output_for_mask and go_backwards") {
  for (bool backwards : {false, true}) {
    CAPTURE(backwards);
    check_as_known([&](std::int64_t t) {
      KerasTensor in = Input({t, 3});
      const KerasTensor h = LSTM(3, {.return_sequences = true, .go_backwards = backwards, .zero_output_for_mask = true})(
          Masking(0.0)(in));
      return Model(in, GRU(2, {.go_backwards = backwards})(h), "masked");
    }, 3, 60);
  }
  // Masked trailing steps: the final state is the one after each sequence's last real step.
  Model masked = [] {
    KerasTensor in = Input({-1, 3});
    return Model(in, LSTM(3)(Masking(0.0)(in)), "masked");
  }();
  const Tensor x = padded_at_end(float32_random({2, 9, 3}, 61), {0, 4});
  const auto got = masked.predict(x, {.verbose = 0}).to_vector<float>();
  KerasTensor cut_in = Input({-1, 3});
  Model cut(cut_in, LSTM(3)(cut_in), "cut");
  cut.set_weights(masked.get_weights());
  auto xv = x.to_vector<float>();
  std::vector<float> second(xv.begin() + 27, xv.begin() + 27 + 15);  // sample 1, its 5 real steps
  const auto want = cut.predict(Tensor::from_vector<float>({1, 5, 3}, second), {.verbose = 0}).to_vector<float>();
  for (int j = 0; j < 3; ++j) CHECK(got[static_cast<std::size_t>(3 + j)] == doctest::Approx(want[static_cast<std::size_t>(j)]).epsilon(1e-5));

  // Embedding(mask_zero) on token ids of any length.
  KerasTensor ids = Input({-1}, {.dtype = DType::int32});
  Model text(ids, Dense(1)(GRU(4)(Embedding(10, 3, {.mask_zero = true})(ids))), "text");
  const Tensor tokens = Tensor::from_vector<std::int32_t>({2, 6}, {1, 2, 3, 0, 0, 0, 4, 5, 6, 7, 8, 9});
  const Tensor short_tokens = Tensor::from_vector<std::int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto long_y = text.predict(tokens, {.verbose = 0}).to_vector<float>();
  const auto short_y = text.predict(short_tokens, {.verbose = 0}).to_vector<float>();
  CHECK(long_y[0] == doctest::Approx(short_y[0]).epsilon(1e-5));  // the padding is skipped
}

TEST_CASE("unknown steps: Bidirectional(LSTM, return_sequences) and TimeDistributed(Dense)") {
  check_as_known([](std::int64_t t) {
    KerasTensor in = Input({t, 3});
    KerasTensor h = Bidirectional(LSTM(3, {.return_sequences = true}))(in);  // (batch, time, 6)
    CHECK(h.shape() == Shape{-1, t, 6});
    return Model(in, TimeDistributed(Dense(2))(h), "tagger");
  }, 3, 70);
  check_as_known([](std::int64_t t) {
    KerasTensor in = Input({t, 3});
    KerasTensor h = Bidirectional(GRU(2, {.return_sequences = true}), {.merge_mode = "sum"})(Masking(0.0)(in));
    return Model(in, Bidirectional(SimpleRNN(2))(h), "stacked");
  }, 3, 80);
  KerasTensor in = Input({-1, 2, 3});
  CHECK(TimeDistributed(Dense(4))(in).shape() == Shape{-1, -1, 2, 4});
  CHECK(TimeDistributed(Flatten())(in).shape() == Shape{-1, -1, 6});
}

TEST_CASE("unknown steps: fit trains on batches of different lengths, as a model of known length does") {
  auto build = [](std::int64_t t) {
    KerasTensor in = Input({t, 3});
    // Dense on (batch, time, 4) directly, as Keras users write it, and inside TimeDistributed.
    KerasTensor h = Dense(4, {.activation = "tanh"})(LSTM(4, {.return_sequences = true})(in));
    Model m(in, TimeDistributed(Dense(1))(h), "fit");
    m.compile("sgd", "mse");
    return m;
  };
  Model open = build(-1);
  for (std::int64_t time : {5, 9}) {
    CAPTURE(time);
    const Tensor x = float32_random({4, time, 3}, 90 + static_cast<std::uint64_t>(time));
    const Tensor y = float32_random({4, time, 1}, 95 + static_cast<std::uint64_t>(time));
    Model known = build(time);
    known.set_weights(open.get_weights());
    open.fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false});
    known.fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false});
    const auto a = open.get_weights(), b = known.get_weights();
    for (std::size_t i = 0; i < a.size(); ++i) check_close(a[i], b[i], 1e-5, 1e-6);
  }
  // Dropout on the inputs needs no step count; recurrent_dropout unrolls the steps in training.
  KerasTensor in = Input({-1, 3});
  Model dropped(in, GRU(2, {.dropout = 0.3})(in), "dropped");
  dropped.compile("sgd", "mse");
  dropped.fit(float32_random({4, 6, 3}, 99), float32_random({4, 2}, 98), {.batch_size = 4, .verbose = 0});
  KerasTensor in2 = Input({-1, 3});
  Model unrolled(in2, LSTM(2, {.recurrent_dropout = 0.2, .name = "rd"})(in2), "unrolled");
  CHECK(unrolled.predict(float32_random({2, 6, 3}, 97), {.verbose = 0}).shape() == Shape{2, 2});  // inference: fused
  unrolled.compile("sgd", "mse");
  const auto msg = message_of<ShapeError>(
      [&] { unrolled.fit(float32_random({2, 6, 3}, 96), float32_random({2, 2}, 95), {.batch_size = 2, .verbose = 0}); });
  CHECK(contains(msg, "LSTM \"rd\""));
  CHECK(contains(msg, "recurrent_dropout needs a known number of time steps"));
}

TEST_CASE("unknown steps: the config writes batch_input_shape [null, null, F] and reads it back") {
  KerasTensor in = Input({-1, 3});
  Model model(in, Dense(2)(Bidirectional(LSTM(3))(in)), "config");
  const auto config = nlohmann::json::parse(io::model_to_json(model));
  CHECK(config.dump().find("[null,null,3]") != std::string::npos);
  Model loaded = io::model_from_json(io::model_to_json(model));
  loaded.set_weights(model.get_weights());
  for (std::int64_t time : {4, 8}) {
    const Tensor x = float32_random({2, time, 3}, 100 + static_cast<std::uint64_t>(time));
    check_close(loaded.predict(x, {.verbose = 0}), model.predict(x, {.verbose = 0}), 0, 0);
  }
}
