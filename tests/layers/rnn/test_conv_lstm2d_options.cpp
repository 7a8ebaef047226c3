// ConvLSTM2D's stateful, dropout and recurrent_dropout: states carried between calls and reset, the
// masks' shapes and scale, training against inference, gradients through the masked path, configs.
// Keras draws its masks from its own random numbers, which tower cannot reproduce: the tests check
// what the masks do, not their values (tests/golden has ConvLSTM2D's numbers against Keras).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tower/layers/layer_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::layers;
using tower::testing::check_close;
using tower::testing::check_layer_gradients;
using tower::testing::contains;
using tower::testing::float32_random;
using tower::testing::message_of;
using tower::testing::run_layer;

namespace {

// Steps [first, first + count) of x (batch, time, rows, cols, channels).
Tensor steps(const Tensor& x, std::int64_t first, std::int64_t count) {
  const auto& d = x.shape().dims();
  const std::int64_t step = d[2] * d[3] * d[4];
  const auto v = x.to_vector<float>();
  std::vector<float> out;
  for (std::int64_t b = 0; b < d[0]; ++b) {
    const auto from = v.begin() + (b * d[1] + first) * step;
    out.insert(out.end(), from, from + count * step);
  }
  return Tensor::from_vector<float>({d[0], count, d[2], d[3], d[4]}, out);
}

bool all_equal(const Tensor& a, const Tensor& b) { return a.to_vector<float>() == b.to_vector<float>(); }

}  // namespace

TEST_CASE("ConvLSTM2D: a stateful layer carries h and c from call to call; reset_states forgets them") {
  // Two halves of a sequence through the stateful layer give what the whole sequence gives (valid
  // padding and strides: the states are (batch, 2, 2, filters), smaller than the input).
  const Tensor x = float32_random({2, 6, 5, 5, 2}, 51);
  const ConvLSTM2DOptions options{.strides = {2, 2}, .return_state = true, .go_backwards = false};
  ConvLSTM2DOptions stateful = options;
  stateful.stateful = true;
  stateful.name = "halves";
  auto in_whole = Input({6, 5, 5, 2}), in_halves = Input({3, 5, 5, 2}, {.batch_size = 2});
  Model whole({in_whole}, ConvLSTM2D(3, {2, 2}, options).call_multi({in_whole}));
  Model halves({in_halves}, ConvLSTM2D(3, {2, 2}, stateful).call_multi({in_halves}));
  halves.set_weights(whole.get_weights());
  const Tensor a = steps(x, 0, 3), b = steps(x, 3, 3);
  const std::vector<Tensor> start = halves.predict(std::vector<Tensor>{a}, {.batch_size = 2});
  const std::vector<Tensor> expected = whole.predict(std::vector<Tensor>{x});
  const std::vector<Tensor> second = halves.predict(std::vector<Tensor>{b}, {.batch_size = 2});
  REQUIRE(second.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) check_close(second[i], expected[i], 1e-5, 1e-6);

  auto& layer = dynamic_cast<ConvLSTM2D&>(*halves.get_layer("halves"));
  REQUIRE(layer.states().size() == 2);
  CHECK(layer.states()[0]->shape() == Shape{2, 2, 2, 3});
  CHECK(!layer.states()[0]->trainable());
  check_close(layer.states()[0]->value(), expected[1], 1e-5, 1e-6);  // the final h and c
  check_close(layer.states()[1]->value(), expected[2], 1e-5, 1e-6);
  CHECK(layer.weights().size() == 3);  // the states are not weights
  halves.reset_states();               // the model reaches its layers
  CHECK(layer.states()[0]->value().to_vector<float>() == std::vector<float>(24, 0.0f));
  const std::vector<Tensor> again = halves.predict(std::vector<Tensor>{a}, {.batch_size = 2});
  for (std::size_t i = 0; i < 3; ++i) check_close(again[i], start[i], 0, 0);
}

TEST_CASE("ConvLSTM2D: stateful with return_sequences and same padding, initial states, and its error") {
  const Tensor x = float32_random({3, 4, 4, 3, 1}, 52);
  Sequential whole({Input({4, 4, 3, 1}), ConvLSTM2D(2, {3, 3}, {.padding = "same", .return_sequences = true})});
  Sequential halves({Input({2, 4, 3, 1}, {.batch_size = 3}),
                     ConvLSTM2D(2, {3, 3}, {.padding = "same", .return_sequences = true, .stateful = true})});
  halves.set_weights(whole.get_weights());
  const Tensor expected = whole.predict(x);
  halves.predict(steps(x, 0, 2), {.batch_size = 3});
  check_close(halves.predict(steps(x, 2, 2), {.batch_size = 3}), steps(expected, 2, 2), 1e-5, 1e-6);
  // Training carries them too.
  auto& layer = dynamic_cast<ConvLSTM2D&>(*halves.layers().back());
  halves.compile("sgd", "mse");
  halves.reset_states();
  halves.train_on_batch({steps(x, 0, 2)}, {Tensor::zeros({3, 2, 4, 3, 2})});
  CHECK(layer.states()[1]->value().to_vector<float>() != std::vector<float>(3 * 4 * 3 * 2, 0.0f));

  // Initial states given as inputs take the place of the carried ones.
  auto in = Input({2, 4, 3, 1}, {.batch_size = 3});
  auto h0 = Input({4, 3, 2}, {.batch_size = 3}), c0 = Input({4, 3, 2}, {.batch_size = 3});
  ConvLSTM2D given(2, {3, 3}, {.padding = "same", .stateful = true, .name = "given"});
  Model with_initial({in, h0, c0}, given.call_multi({in, h0, c0}));
  with_initial.set_weights(whole.get_weights());
  const Tensor zeros = Tensor::zeros({3, 4, 3, 2});
  const Tensor first = with_initial.predict(std::vector<Tensor>{steps(x, 0, 2), zeros, zeros}, {.batch_size = 3})[0];
  check_close(with_initial.predict(std::vector<Tensor>{steps(x, 0, 2), zeros, zeros}, {.batch_size = 3})[0], first, 0,
              0);

  CHECK(contains(message_of<ValueError>([] {
          Sequential model({Input({2, 4, 4, 1}), ConvLSTM2D(2, {3, 3}, {.stateful = true, .name = "nobatch"})});
          model.predict(Tensor::zeros({2, 2, 4, 4, 1}));
        }),
        "fixed batch size, for its states (batch, 2, 2, 2)"));
}

TEST_CASE("ConvLSTM2D: dropout and recurrent_dropout act in training only, reproducibly per seed") {
  const Tensor x = float32_random({2, 3, 5, 5, 2}, 53);
  const ConvLSTM2DOptions plain{.padding = "same", .return_sequences = true, .return_state = true};
  ConvLSTM2DOptions dropped = plain;
  dropped.dropout = 0.4;
  dropped.recurrent_dropout = 0.3;
  dropped.seed = 7;
  ConvLSTM2D reference(3, {3, 3}, plain), a(3, {3, 3}, dropped), b(3, {3, 3}, dropped);
  reference.ensure_built({{-1, 3, 5, 5, 2}});
  a.ensure_built({{-1, 3, 5, 5, 2}});
  b.ensure_built({{-1, 3, 5, 5, 2}});
  a.set_weights(reference.get_weights());
  b.set_weights(reference.get_weights());
  const auto inferred = run_layer(reference, {x});
  const auto a_inferred = run_layer(a, {x});
  for (std::size_t i = 0; i < 3; ++i) check_close(a_inferred[i], inferred[i], 0, 0);  // inference: no masks
  const auto a_trained = run_layer(a, {x}, /*training=*/true);
  CHECK(!all_equal(a_trained[0], inferred[0]));
  const auto b_trained = run_layer(b, {x}, /*training=*/true);  // same seed, same masks
  for (std::size_t i = 0; i < 3; ++i) check_close(b_trained[i], a_trained[i], 0, 0);
  for (const auto& t : a_trained)
    for (float v : t.to_vector<float>()) REQUIRE(std::isfinite(v));

  // Each rate on its own changes the training output; another seed, other masks.
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    ConvLSTM2DOptions one = plain;
    if (which == 0) one.dropout = 0.4, one.seed = 7;
    if (which == 1) one.recurrent_dropout = 0.4, one.seed = 7;
    if (which == 2) one.dropout = 0.4, one.recurrent_dropout = 0.3, one.seed = 8;
    ConvLSTM2D c(3, {3, 3}, one);
    c.ensure_built({{-1, 3, 5, 5, 2}});
    c.set_weights(reference.get_weights());
    const auto trained = run_layer(c, {x}, /*training=*/true);
    CHECK(!all_equal(trained[0], inferred[0]));
    CHECK(!all_equal(trained[0], a_trained[0]));
  }

  // Rate 0: training is inference.
  ConvLSTM2D zero(3, {3, 3}, plain);
  zero.ensure_built({{-1, 3, 5, 5, 2}});
  zero.set_weights(reference.get_weights());
  const auto zero_trained = run_layer(zero, {x}, /*training=*/true);
  for (std::size_t i = 0; i < 3; ++i) check_close(zero_trained[i], inferred[i], 0, 0);
}

TEST_CASE("ConvLSTM2D: the masked path (per-gate convolutions) computes the cell's numbers") {
  // Rates so small that every mask is 1 / (1 - rate) ~ 1: training (four input convolutions and
  // four recurrent ones per step) must give inference's outputs (one of each), with strides and
  // go_backwards.
  const Tensor x = float32_random({3, 4, 6, 5, 2}, 54);
  const ConvLSTM2DOptions plain{.strides = {2, 1}, .padding = "same", .return_sequences = true, .return_state = true,
                                .go_backwards = true};
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    ConvLSTM2DOptions tiny = plain;
    tiny.dropout = which != 1 ? 1e-7 : 0.0;
    tiny.recurrent_dropout = which != 0 ? 1e-7 : 0.0;
    ConvLSTM2D reference(2, {3, 2}, plain), masked(2, {3, 2}, tiny);
    reference.ensure_built({{-1, 4, 6, 5, 2}});
    masked.ensure_built({{-1, 4, 6, 5, 2}});
    masked.set_weights(reference.get_weights());
    const auto trained = run_layer(masked, {x}, /*training=*/true);
    const auto inferred = run_layer(reference, {x});
    REQUIRE(trained.size() == 3);
    CHECK(trained[0].shape() == Shape{3, 4, 3, 5, 2});
    for (std::size_t i = 0; i < 3; ++i) check_close(trained[i], inferred[i], 1e-5, 1e-6);
  }
}

TEST_CASE("ConvLSTM2D: input dropout drops whole pixels' channels of a sequence, scaled by 1 / (1 - rate)") {
  // Linear activation, gates i, f, o held at 1 by their bias (hard_sigmoid saturates), kernel 1 for
  // the c gate and recurrent kernel 0: h_t = the running sum of the c gate's dropped input, so
  // h_t / sum_{s <= t} x_s is 0 or 2 (rate 0.5) per pixel, the same at every step.
  const Tensor x = float32_random({6, 4, 5, 5, 1}, 55);
  ConvLSTM2D layer(1, {1, 1},
                   {.activation = "linear", .return_sequences = true, .dropout = 0.5, .seed = 3});
  layer.ensure_built({{-1, 4, 5, 5, 1}});
  layer.set_weights({Tensor::from_vector<float>({1, 1, 1, 4}, {0, 0, 1, 0}), Tensor::zeros({1, 1, 1, 4}),
                     Tensor::from_vector<float>({4}, {10, 10, 0, 10})});
  const auto xv = x.to_vector<float>();
  auto check_ratios = [&](const Tensor& y, bool training) {
    const auto yv = y.to_vector<float>();
    int dropped = 0;
    for (int b = 0; b < 6; ++b)
      for (int p = 0; p < 25; ++p) {
        float sum = 0.0f, ratio = -1.0f;
        for (int t = 0; t < 4; ++t) {
          const int e = (b * 4 + t) * 25 + p;
          sum += xv[static_cast<std::size_t>(e)];
          if (std::abs(sum) < 1e-3f) continue;
          const float r = yv[static_cast<std::size_t>(e)] / sum;
          if (ratio < 0.0f) ratio = r;
          CHECK(r == doctest::Approx(ratio).epsilon(1e-4));
        }
        if (ratio < 0.0f) continue;
        CHECK((ratio == doctest::Approx(training ? 2.0f : 1.0f) || (training && std::abs(ratio) < 1e-6f)));
        dropped += std::abs(ratio) < 1e-6f;
      }
    return dropped;
  };
  CHECK(check_ratios(run_layer(layer, {x})[0], false) == 0);
  const int dropped = check_ratios(run_layer(layer, {x}, /*training=*/true)[0], true);
  CHECK(dropped > 45);  // about 75 of 150
  CHECK(dropped < 105);
}

TEST_CASE("ConvLSTM2D: gradients through the masked path") {
  // Finite differences need the same masks at every run, which a drawn mask is not (a fresh counter
  // per run): tiny rates keep every mask at ~1 while the gradients take the masked path.
  ConvLSTM2D layer(2, {2, 2},
                   {.padding = "same", .return_sequences = true, .go_backwards = true, .dropout = 1e-7,
                    .recurrent_dropout = 1e-7, .seed = 4});
  check_layer_gradients(layer, {{2, 3, 3, 3, 2}}, /*training=*/true);
  ConvLSTM2D initial(2, {2, 2}, {.strides = {2, 2}, .return_state = true, .dropout = 1e-7, .recurrent_dropout = 1e-7});
  check_layer_gradients(initial, {{2, 2, 4, 4, 1}, {2, 2, 2, 2}, {2, 2, 2, 2}}, /*training=*/true);
}

TEST_CASE("ConvLSTM2D: a model with dropout trains") {
  const Tensor x = float32_random({8, 3, 4, 4, 1}, 56);
  Sequential model({Input({3, 4, 4, 1}),
                    ConvLSTM2D(2, {3, 3}, {.padding = "same", .dropout = 0.3, .recurrent_dropout = 0.3, .seed = 1}),
                    Flatten(), Dense(1)});
  model.compile("adam", "mse");
  const Tensor y = Tensor::from_vector<float>({8, 1}, std::vector<float>(8, 1.0f));
  auto history = model.fit(x, y, {.batch_size = 4, .epochs = 20, .verbose = 0});
  const auto& loss = history.history.at("loss");
  CHECK(std::isfinite(loss.back()));
  CHECK(loss.back() < loss.front());
}

TEST_CASE("ConvLSTM2D: stateful, dropout, recurrent_dropout and seed in configs") {
  ConvLSTM2D layer(2, {3, 3},
                   {.padding = "same", .dropout = 0.25, .recurrent_dropout = 0.5, .seed = 9, .stateful = true,
                    .name = "clstm_opts"});
  const auto config = layer.get_config();
  CHECK(config["stateful"] == true);
  CHECK(config["dropout"] == 0.25);
  CHECK(config["recurrent_dropout"] == 0.5);
  CHECK(config["seed"] == 9);
  auto back = layer_from_config({{"class_name", "ConvLSTM2D"}, {"config", config}});
  CHECK(back->get_config() == config);
  auto& options = dynamic_cast<ConvLSTM2D&>(*back).options();
  CHECK(options.stateful);
  CHECK(options.dropout == 0.25);
  CHECK(options.recurrent_dropout == 0.5);
  CHECK(options.seed == std::optional<std::uint64_t>(9));

  // Without a seed none is written; Keras 3's "seed": null reads as none.
  const auto plain = ConvLSTM2D(2, {3, 3}, {.name = "clstm_plain"}).get_config();
  CHECK(!plain.contains("seed"));
  CHECK(plain["stateful"] == false);
  CHECK(plain["dropout"] == 0.0);
  auto keras3 = plain;
  keras3["seed"] = nullptr;
  keras3["dropout"] = 0.1;
  auto read = layer_from_config({{"class_name", "ConvLSTM2D"}, {"config", keras3}});
  CHECK(dynamic_cast<ConvLSTM2D&>(*read).options().dropout == 0.1);
  CHECK(!dynamic_cast<ConvLSTM2D&>(*read).options().seed);

  CHECK(contains(message_of<ValueError>([] { ConvLSTM2D(2, {3, 3}, {.dropout = 1.0, .name = "c"}); }),
                 "dropout must be in [0, 1)"));
  CHECK(contains(message_of<ValueError>([] { ConvLSTM2D(2, {3, 3}, {.recurrent_dropout = -0.1}); }),
                 "recurrent_dropout"));
}
