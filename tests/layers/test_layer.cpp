// The Layer base (layers/layer.h): Keras's class names and default names, and layers of every family
// called together: shapes through a small CNN and gradients through several layers.
#include <doctest/doctest.h>

#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_gradients;
using Inputs = std::vector<SymbolicTensor>;

// ---- names ---------------------------------------------------------------------------------------

TEST_CASE("to_snake_case and default names follow Keras") {
  CHECK(to_snake_case("Conv2D") == "conv2d");
  CHECK(to_snake_case("MaxPooling2D") == "max_pooling2d");
  CHECK(to_snake_case("GlobalAveragePooling2D") == "global_average_pooling2d");
  CHECK(to_snake_case("ReLU") == "re_lu");
  CHECK(to_snake_case("LeakyReLU") == "leaky_re_lu");
  CHECK(to_snake_case("ZeroPadding2D") == "zero_padding2d");
  CHECK(to_snake_case("BatchNormalization") == "batch_normalization");
  CHECK(to_snake_case("ELU") == "elu");
  CHECK(to_snake_case("GlorotUniform") == "glorot_uniform");

  clear_session();
  // Each layer's class_name() and default name, as Keras 3.15 prints them.
  std::vector<std::pair<LayerPtr, std::string>> expected{
      {layers::Conv2D(2, 3).share(), "conv2d"},
      {layers::MaxPooling2D().share(), "max_pooling2d"},
      {layers::AveragePooling2D().share(), "average_pooling2d"},
      {layers::GlobalAveragePooling2D().share(), "global_average_pooling2d"},
      {layers::GlobalMaxPooling2D().share(), "global_max_pooling2d"},
      {layers::Flatten().share(), "flatten"},
      {layers::Reshape({2, 2}).share(), "reshape"},
      {layers::Dropout(0.1).share(), "dropout"},
      {layers::BatchNormalization().share(), "batch_normalization"},
      {layers::Activation("relu").share(), "activation"},
      {layers::ReLU().share(), "re_lu"},
      {layers::LeakyReLU().share(), "leaky_re_lu"},
      {layers::ELU().share(), "elu"},
      {layers::Softmax().share(), "softmax"},
      {layers::ZeroPadding2D().share(), "zero_padding2d"},
      {layers::Lambda([](const SymbolicTensor& x) { return x; }).share(), "lambda"},
      {layers::Concatenate().share(), "concatenate"},
      {layers::Add().share(), "add"},
      {layers::Subtract().share(), "subtract"},
      {layers::Multiply().share(), "multiply"},
      {layers::Average().share(), "average"},
      {layers::Maximum().share(), "maximum"},
      {layers::Embedding(3, 2).share(), "embedding"},
  };
  for (const auto& [layer, name] : expected) {
    CHECK(layer->name() == name);
    CHECK(to_snake_case(layer->class_name()) == name);
  }
  CHECK(layers::Conv2D(2, 3).name() == "conv2d_1");
  CHECK(layers::ReLU().name() == "re_lu_1");
  CHECK(layers::Add({.name = "sum"}).name() == "sum");
}

// ---- layers together -------------------------------------------------------------------------------

TEST_CASE("a small CNN: shapes through the stack and gradients through several layers") {
  clear_session();
  auto x = layers::Input({8, 8, 1});
  auto h = layers::ZeroPadding2D(1)(x);
  h = layers::Conv2D(4, 3, {.activation = "relu"})(h);
  h = layers::BatchNormalization()(h);
  h = layers::MaxPooling2D()(h);
  auto skip = layers::Conv2D(4, 1, {.strides = {2}})(x);
  h = layers::Add()({h, skip});
  h = layers::Dropout(0.5)(h);
  h = layers::Flatten()(h);
  auto y = layers::Dense(3, {.activation = "softmax"})(h);
  CHECK(y.shape() == Shape{-1, 3});
  CHECK(y.layer().name() == "dense");

  // Gradients through padding, pooling, a merge and a reshape in float64.
  layers::ZeroPadding2D pad(1);
  layers::MaxPooling2D pool({2, 2}, {.strides = {1, 1}});
  layers::Average mean;
  layers::Flatten flatten;
  check_gradients({{2, 3, 3, 2}, {2, 4, 4, 2}}, [&](const Inputs& xs) {
    CallContext ctx{.graph = xs[0].graph()};
    auto padded = pad.call(ctx, {xs[0]})[0];           // (2, 5, 5, 2)
    auto pooled = pool.call(ctx, {padded})[0];         // (2, 4, 4, 2)
    auto merged = mean.call(ctx, {pooled, xs[1]})[0];  // (2, 4, 4, 2)
    return flatten.call(ctx, {merged});
  });
}
