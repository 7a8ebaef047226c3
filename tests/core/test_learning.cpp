// Small networks written directly against the graph API learn XOR (100 %) and two spirals (>= 95 %).
#include <doctest/doctest.h>

#include "apps/graph_mlp.h"

using namespace tower;

TEST_CASE("learning: XOR reaches 100 %") {
  Tensor inputs = Tensor::from_vector<float>({4, 2}, {0, 0, 0, 1, 1, 0, 1, 1});
  Tensor labels = Tensor::from_vector<std::int32_t>({4}, {0, 1, 1, 0});
  demo::GraphMlp mlp({2, 8, 2}, 0.05, 42);
  CHECK(mlp.train(inputs, labels, 300) < 0.05);
  CHECK(mlp.accuracy(inputs, labels) == 1.0);
}

TEST_CASE("learning: two spirals reach >= 95 %") {
  auto [points, labels] = demo::make_spirals(200, 7);
  demo::GraphMlp mlp({2, 64, 64, 2}, 0.01, 3);
  mlp.train(points, labels, 1500);
  double accuracy = mlp.accuracy(points, labels);
  MESSAGE("two-spiral accuracy: " << accuracy);
  CHECK(accuracy >= 0.95);
}
