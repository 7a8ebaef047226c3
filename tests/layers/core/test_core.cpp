// The core family: Lambda (one or several tensors, output_shape checks) and Embedding (weights,
// lookups, float indices). Dense and Input are exercised throughout, in tests/layers/engine too.
#include <doctest/doctest.h>

#include <numeric>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::run1;
using tower::testing::run_layer;
using Inputs = std::vector<SymbolicTensor>;

// ---- Lambda --------------------------------------------------------------------------------------

TEST_CASE("Lambda: one or several tensors, output_shape checks") {
  layers::Lambda twice([](const SymbolicTensor& x) { return ops::scale(x, 2.0); });
  CHECK(keras_shape(twice, {3}) == Shape{-1, 3});
  check_close(run1(twice, floats({1, 3}, {1, 2, 3})), {2, 4, 6});

  // Several inputs and outputs: the sum and the difference.
  layers::Lambda both([](const Inputs& xs) { return Inputs{ops::add(xs[0], xs[1]), ops::subtract(xs[0], xs[1])}; });
  auto a = layers::Input({2}), b = layers::Input({2});
  auto outs = both.call_multi({a, b});
  REQUIRE(outs.size() == 2);
  CHECK(outs[1].shape() == Shape{-1, 2});
  auto values = run_layer(both, {floats({1, 2}, {5, 1}), floats({1, 2}, {2, 3})});
  check_close(values[0], {7, 4});
  check_close(values[1], {3, -2});

  // Slicing the batch, as multi_gpu_model's towers do; output_shape agrees.
  layers::Lambda first_two(
      [](const SymbolicTensor& x) {
        return ops::slice(x, {0, 0}, {2, -1});
      },
      {.output_shape = [](const std::vector<Shape>& s) {
        return Shape{2, s[0][1]};
      }});
  check_close(run1(first_two, floats({3, 2}, {1, 2, 3, 4, 5, 6})), {1, 2, 3, 4});

  layers::Lambda wrong([](const SymbolicTensor& x) { return ops::reduce_sum(x, {1}); },
                       {.output_shape = [](const std::vector<Shape>& s) { return s[0]; }, .name = "summed"});
  auto msg = message_of<ShapeError>([&] { wrong(layers::Input({4})); });
  CHECK(contains(msg, "Lambda \"summed\""));
  CHECK(contains(msg, "returned shape (None,)"));
  CHECK(contains(msg, "output_shape says (None, 4)"));

  CHECK(contains(message_of<ValueError>([] { layers::Lambda(layers::Lambda::UnaryFunction{}); }), "empty"));
  CHECK(contains(message_of<ValueError>([&] { twice({layers::Input({2}), layers::Input({2})}); }), "one input"));
}

// ---- Embedding -----------------------------------------------------------------------------------

TEST_CASE("Embedding: weights, lookups, float indices") {
  clear_session();
  layers::Embedding embedding(10, 3);
  CHECK(keras_shape(embedding, {4}) == Shape{-1, 4, 3});
  REQUIRE(embedding.weights().size() == 1);
  CHECK(embedding.weights()[0]->name() == "embedding/embeddings:0");
  CHECK(embedding.weights()[0]->shape() == Shape{10, 3});
  for (float v : embedding.get_weights()[0].to_vector<float>()) CHECK((v >= -0.05f && v < 0.05f));

  std::vector<float> table(30);
  std::iota(table.begin(), table.end(), 0.0f);  // row i = (3i, 3i + 1, 3i + 2)
  embedding.set_weights({floats({10, 3}, table)});
  Tensor ids = Tensor::from_vector<std::int32_t>({2, 2}, {1, 9, 0, 1});
  Tensor y = run1(embedding, ids);
  CHECK(y.shape() == Shape{2, 2, 3});
  check_close(y, {3, 4, 5, 27, 28, 29, 0, 1, 2, 3, 4, 5});
  // Float indices (an Input's default dtype) are cast to int32, as Keras does.
  check_close(run1(embedding, floats({1, 2}, {2, 3})), {6, 7, 8, 9, 10, 11});

  CHECK(contains(message_of<ValueError>([] { layers::Embedding(0, 3, {.name = "emb"}); }), "Embedding \"emb\""));
  CHECK(contains(message_of<ValueError>([&] {
                   run1(embedding, Tensor::from_vector<std::int32_t>({1, 1}, {10}));
                 }),
                 "10"));
}
