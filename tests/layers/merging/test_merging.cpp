// The merging family: Add, Subtract, Multiply, Average, Maximum, Minimum and Concatenate: values, broadcasting,
// ranks, gradients, and errors that name the shapes that differ.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::message_of;
using tower::testing::run_layer;

// ---- merge layers ---------------------------------------------------------------------------------

TEST_CASE("Add, Subtract, Multiply, Average, Maximum: values, broadcasting, ranks") {
  Tensor a = floats({2, 3}, {1, -2, 3, 4, 5, -6});
  Tensor b = floats({2, 3}, {0.5, 2, -1, 4, -5, 1});
  Tensor c = floats({2, 3}, {2, 2, 2, -1, -1, -1});
  auto keras = [&](const Layer& layer) {
    return layer({layers::Input({3}), layers::Input({3}), layers::Input({3})}).shape();
  };
  CHECK(keras(layers::Add()) == Shape{-1, 3});
  CHECK(keras(layers::Maximum()) == Shape{-1, 3});

  layers::Add add;
  check_close(run_layer(add, {a, b, c})[0], {3.5, 2, 4, 7, -1, -6});
  layers::Subtract subtract;
  check_close(run_layer(subtract, {a, b})[0], {0.5, -4, 4, 0, 10, -7});
  layers::Multiply multiply;
  check_close(run_layer(multiply, {a, b, c})[0], {1, -8, -6, -16, 25, 6});
  layers::Average average;
  check_close(run_layer(average, {a, b, c})[0], {3.5 / 3, 2.0 / 3, 4.0 / 3, 7.0 / 3, -1.0 / 3, -2}, 1e-6, 1e-6);
  layers::Maximum maximum;
  check_close(run_layer(maximum, {a, b, c})[0], {2, 2, 3, 4, 5, 1});

  // As Keras: a size of 1 broadcasts, and a lower-rank input lines up after the batch axis.
  CHECK(layers::Add()({layers::Input({3}), layers::Input({1})}).shape() == Shape{-1, 3});
  CHECK(layers::Add()({layers::Input({2, 3}), layers::Input({3})}).shape() == Shape{-1, 2, 3});
  layers::Multiply scale_rows;
  Tensor rows = floats({2, 2, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});
  Tensor per_sample = floats({2, 3}, {1, 2, 3, -1, 0, 1});
  check_close(run_layer(scale_rows, {rows, per_sample})[0], {1, 2, 3, 2, 4, 6, -3, 0, 3, -4, 0, 4});

  check_weightless_gradients(average, {{2, 3}, {2, 3}, {2, 3}});
  check_weightless_gradients(maximum, {{2, 3}, {2, 3}});
  check_weightless_gradients(scale_rows, {{2, 2, 3}, {2, 3}});
  check_weightless_gradients(subtract, {{2, 3}, {2, 1}});
}

TEST_CASE("Minimum: values, broadcasting, gradients, config") {
  Tensor a = floats({2, 3}, {1, -2, 3, 4, 5, -6});
  Tensor b = floats({2, 3}, {0.5, 2, -1, 4, -5, 1});
  Tensor c = floats({2, 3}, {2, 2, 2, -1, -1, -1});
  layers::Minimum minimum;
  CHECK(minimum.name().rfind("minimum", 0) == 0);
  CHECK(minimum({layers::Input({3}), layers::Input({3})}).shape() == Shape{-1, 3});
  check_close(run_layer(minimum, {a, b, c})[0], {0.5, -2, -1, -1, -5, -6});
  layers::Minimum broadcast;
  check_close(run_layer(broadcast, {a, floats({2, 1}, {0, 4})})[0], {0, -2, 0, 4, 4, -6});
  check_weightless_gradients(minimum, {{2, 3}, {2, 3}});
  auto config = layers::Minimum({.name = "mn"}).get_config();
  auto back = layers::layer_from_config({{"class_name", "Minimum"}, {"config", config}});
  CHECK(back->class_name() == "Minimum");
  CHECK(back->get_config() == config);
  CHECK(contains(message_of<ShapeError>([] { layers::Minimum()({layers::Input({3}), layers::Input({4})}); }), "3"));
}

TEST_CASE("merge layers: bad inputs name the shapes that differ") {
  auto msg = message_of<ShapeError>([] {
    layers::Add({.name = "sum"})({layers::Input({3}), layers::Input({3}), layers::Input({4})});
  });
  CHECK(contains(msg, "Add \"sum\""));
  CHECK(contains(msg, "input 0 has shape (None, 3) but input 2 has shape (None, 4)"));
  msg = message_of<ShapeError>([] {
    layers::Multiply()({layers::Input({1}), layers::Input({3}), layers::Input({4})});
  });
  CHECK(contains(msg, "input 1 has shape (None, 3) but input 2 has shape (None, 4)"));
  msg = message_of<ShapeError>([] {
    layers::Maximum()({layers::Input({3}, {.batch_size = 4}), layers::Input({3}, {.batch_size = 5})});
  });
  CHECK(contains(msg, "(4, 3)"));
  msg = message_of<ValueError>([] {
    layers::Subtract()({layers::Input({3}), layers::Input({3}), layers::Input({3})});
  });
  CHECK(contains(msg, "exactly 2 inputs"));
  CHECK(contains(msg, "got 3"));
  CHECK(contains(message_of<ValueError>([] { layers::Add()(std::vector<KerasTensor>{}); }), "at least one input"));
}

TEST_CASE("Concatenate") {
  CHECK(layers::Concatenate()({layers::Input({3}), layers::Input({4})}).shape() == Shape{-1, 7});
  CHECK(layers::Concatenate({.axis = 1})({layers::Input({2, 5}), layers::Input({3, 5})}).shape() == Shape{-1, 5, 5});
  CHECK(layers::Concatenate({.axis = 0})({layers::Input({2}), layers::Input({2})}).shape() == Shape{-1, 2});

  layers::Concatenate last;
  check_close(run_layer(last, {floats({2, 1}, {1, 2}), floats({2, 2}, {3, 4, 5, 6})})[0], {1, 3, 4, 2, 5, 6});
  layers::Concatenate batch({.axis = 0});  // joins towers' outputs
  Tensor joined = run_layer(batch, {floats({1, 2}, {1, 2}), floats({2, 2}, {3, 4, 5, 6})})[0];
  CHECK(joined.shape() == Shape{3, 2});
  check_close(joined, {1, 2, 3, 4, 5, 6});
  layers::Concatenate middle({.axis = 1});
  check_weightless_gradients(middle, {{2, 1, 3}, {2, 2, 3}});

  auto msg = message_of<ShapeError>([] {
    layers::Concatenate({.name = "cat"})({layers::Input({3, 2}), layers::Input({4, 3})});
  });
  CHECK(contains(msg, "Concatenate \"cat\""));
  CHECK(contains(msg, "input 0 has shape (None, 3, 2) and input 1 has shape (None, 4, 3)"));
  CHECK(contains(message_of<ShapeError>([] {
                   layers::Concatenate()({layers::Input({3}), layers::Input({3, 1})});
                 }),
                 "except along axis -1"));
  CHECK(contains(message_of<ValueError>([] {
                   layers::Concatenate({.axis = 2})({layers::Input({3}), layers::Input({3})});
                 }),
                 "axis 2 is out of range"));
}
