// The regularization family: Dropout at inference and in training, seeds, and bad rates.
#include <doctest/doctest.h>

#include <cmath>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::run1;

TEST_CASE("Dropout: identity at inference, inverted dropout while training, seeds") {
  CHECK(keras_shape(layers::Dropout(0.5), {7, 3}) == Shape{-1, 7, 3});
  Tensor x = Tensor::full({50, 40}, 2.0);
  layers::Dropout dropout(0.25);
  check_close(run1(dropout, x, /*training=*/false), x);

  auto y = run1(dropout, x, /*training=*/true).to_vector<float>();
  std::size_t zeros = 0;
  for (float v : y) {
    CHECK((v == 0.0f || std::abs(v - 2.0f / 0.75f) < 1e-5f));
    zeros += v == 0.0f;
  }
  CHECK(static_cast<double>(zeros) / static_cast<double>(y.size()) == doctest::Approx(0.25).epsilon(0.2));

  // One seed, one mask: two layers with the same seed drop the same elements.
  layers::Dropout a(0.5, {.seed = 42}), b(0.5, {.seed = 42});
  CHECK(a.seed() == 42);
  CHECK(run1(a, x, true).to_vector<float>() == run1(b, x, true).to_vector<float>());
  // Unseeded layers draw different seeds from the global one.
  CHECK(layers::Dropout(0.5).seed() != layers::Dropout(0.5).seed());
  // rate 0 trains as the identity.
  layers::Dropout none(0.0);
  check_close(run1(none, x, true), x);

  auto msg = message_of<ValueError>([] { layers::Dropout(-0.1, {.name = "drop"}); });
  CHECK(contains(msg, "Dropout \"drop\""));
  CHECK(contains(msg, "rate must be in [0, 1)"));
  CHECK(contains(message_of<ValueError>([] { layers::Dropout(1.0); }), "got 1"));
}
