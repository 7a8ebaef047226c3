// Tests of layers/metrics against values from real Keras 3.15 (TensorFlow backend), on the float32
// inputs of tests/layers/loss_metric_data.h and the 6-class data below: accuracies, top-k, "accuracy"
// resolution as Keras's get_metric, losses as metrics, and error messages.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/core/graph.h"
#include "tower/core/ops.h"
#include "tower/layers/metrics/metrics.h"
#include "tests/layers/loss_metric_data.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using namespace tower::testing::loss_metric_data;
using metrics::Metric;
using tower::testing::contains;
using tower::testing::message_of;

namespace {
// 6 classes: cp's argmax is right for rows 0 and 2; the true class ranks 4th, 2nd... (see top-k).
const Floats ct = {0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
const Floats cp = {0.1f, 0.3f, 0.2f, 0.05f, 0.25f, 0.1f, 0.3f, 0.1f, 0.2f,  0.15f, 0.05f, 0.12f,
                   0.5f, 0.1f, 0.1f, 0.1f,  0.1f,  0.1f, 0.3f, 0.2f, 0.15f, 0.14f, 0.11f, 0.25f};
const std::vector<std::int32_t> cid = {1, 3, 0, 5};
}  // namespace

TEST_CASE("metrics: accuracies match Keras") {
  Case k;
  auto y_true = k.c({4, 6}, ct), y_pred = k.c({4, 6}, cp);
  // keras.metrics.binary_accuracy(bt, bp) = [[1, 1], [1, 0], [1, 0]] -> per-sample means
  expect_values(Metric("binary_accuracy")(k.c({3, 2}, bt), k.c({3, 2}, bp)), {1, 0.5, 0.5});
  // keras.metrics.binary_accuracy(bt, bp, threshold=0.7) = [[1, 1], [1, 0], [1, 1]]
  expect_values(Metric::BinaryAccuracy(0.7)(k.c({3, 2}, bt), k.c({3, 2}, bp)), {1, 0.5, 1});
  // keras.metrics.categorical_accuracy(ct, cp), sparse_categorical_accuracy(cid, cp) (and cid as (4, 1) floats)
  expect_values(Metric("categorical_accuracy")(y_true, y_pred), {1, 0, 1, 0});
  expect_values(Metric("CategoricalAccuracy")(y_true, y_pred), {1, 0, 1, 0});
  expect_values(Metric("sparse_categorical_accuracy")(k.ints({4}, cid), y_pred), {1, 0, 1, 0});
  expect_values(Metric("sparse_categorical_accuracy")(k.c({4, 1}, {1, 3, 0, 5}), y_pred), {1, 0, 1, 0});
}

TEST_CASE("metrics: top-k accuracies match Keras (in_top_k)") {
  Case k;
  auto y_true = k.c({4, 6}, ct), y_pred = k.c({4, 6}, cp);
  // keras.metrics.top_k_categorical_accuracy(ct, cp, k=K) and sparse_top_k_categorical_accuracy(cid, cp, k=K)
  const std::vector<std::pair<int, std::vector<double>>> expected = {
      {1, {1, 0, 1, 0}}, {2, {1, 0, 1, 1}}, {3, {1, 1, 1, 1}}, {5, {1, 1, 1, 1}}};
  for (const auto& [top, values] : expected) {
    CAPTURE(top);
    expect_values(Metric::TopKCategoricalAccuracy(top)(y_true, y_pred), values);
    expect_values(Metric::SparseTopKCategoricalAccuracy(top)(k.ints({4}, cid), y_pred), values);
    expect_values(Metric::SparseTopKCategoricalAccuracy(top)(k.c({4, 1}, {1, 3, 0, 5}), y_pred), values);
  }
  // Default k = 5: keras sparse_top_k_categorical_accuracy([0, 1], [[.1, .2, .3, .4, .5, .6]] * 2) = [0, 1]
  auto ramp = k.c({2, 6}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f});
  expect_values(Metric("sparse_top_k_categorical_accuracy")(k.ints({2}, {0, 1}), ramp), {0, 1});
  expect_values(Metric("top_k_categorical_accuracy")(k.c({2, 6}, {1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}), ramp), {0, 1});
  // Ties (TF's in_top_k: ties at the boundary are in): [[.3, .3, .3, .1]] class 2, k=1 -> 1; class 3, k=3 -> 0
  auto tie = k.c({1, 4}, {0.3f, 0.3f, 0.3f, 0.1f});
  expect_values(Metric::SparseTopKCategoricalAccuracy(1)(k.ints({1}, {2}), tie), {1});
  expect_values(Metric::SparseTopKCategoricalAccuracy(3)(k.ints({1}, {3}), tie), {0});
}

TEST_CASE("metrics: \"accuracy\" resolves as Keras's get_metric for every shape case") {
  Case k;
  const Floats t4 = {0, 1, 1, 0}, q4 = {0.3f, 0.6f, 0.4f, 0.8f};
  // compile_utils.get_metric("accuracy", y_true, y_pred) with these shapes gives, in order:
  // BinaryAccuracy, SparseCategoricalAccuracy, SparseCategoricalAccuracy, CategoricalAccuracy,
  // BinaryAccuracy, CategoricalAccuracy.
  for (const char* name : {"accuracy", "acc", "Accuracy"}) {
    CAPTURE(name);
    Metric m(name);
    CHECK(m.name() == name);
    expect_values(m(k.c({4, 1}, t4), k.c({4, 1}, q4)), {1, 1, 0, 0});            // (4, 1), (4, 1): binary
    expect_values(m(k.ints({4}, cid), k.c({4, 6}, cp)), {1, 0, 1, 0});           // (4,), (4, 6): sparse
    expect_values(m(k.c({4, 1}, {1, 3, 0, 5}), k.c({4, 6}, cp)), {1, 0, 1, 0});  // (4, 1), (4, 6): sparse
    expect_values(m(k.c({4, 6}, ct), k.c({4, 6}, cp)), {1, 0, 1, 0});            // (4, 6), (4, 6): categorical
    expect_values(m(k.c({4}, t4), k.c({4, 1}, q4)), {1, 1, 0, 0});               // (4,), (4, 1): binary
    expect_values(m(k.c({3, 2}, bt), k.c({3, 2}, bp)), {1, 1, 0});               // (3, 2), (3, 2): categorical
    // As the trainer calls it: the label array's shape and the output's (batch unknown).
    auto resolved = m.resolve(Shape{3, 2}, Shape{-1, 2});
    CHECK(resolved.name() == name);
    expect_values(resolved(k.c({3, 2}, bt), k.c({3, 2}, bp)), {1, 1, 0});
    expect_values(m.resolve(Shape{4, 1}, Shape{-1, 1})(k.c({4, 1}, t4), k.c({4, 1}, q4)), {1, 1, 0, 0});
  }
  // Other metrics resolve to themselves.
  expect_values(Metric("binary_accuracy").resolve(Shape{3, 2}, Shape{-1, 2})(k.c({3, 2}, bt), k.c({3, 2}, bp)),
                {1, 0.5, 0.5});
}

TEST_CASE("metrics: errors and losses as metrics") {
  Case k;
  auto t = k.c({2, 3}, rt), q = k.c({2, 3}, rp);
  // Same values as the losses: keras.metrics.mean_squared_error / mean_absolute_error(rt, rp)
  Metric mse("mse");
  CHECK(mse.name() == "mse");
  expect_values(mse(t, q), {1.42000008, 1.37666667});
  expect_values(Metric("mean_absolute_error")(t, q), {0.866666615, 0.833333313});
  expect_values(Metric("MAE")(t, q), {0.866666615, 0.833333313});
  expect_values(Metric("categorical_crossentropy")(k.c({3, 4}, yt), k.c({3, 4}, p)),
                {1.20397282, 1.60943794, 0.606135905});
  expect_values(Metric("binary_crossentropy")(k.c({3, 2}, bt), k.c({3, 2}, bp)),
                {0.164252043, 0.45814541, 0.458145469});
  Metric custom([](const SymbolicTensor& a, const SymbolicTensor& b) { return ops::mean_absolute_error(a, b); },
                "my_mae");
  CHECK(custom.name() == "my_mae");
  expect_values(custom.resolve(Shape{2, 3}, Shape{-1, 3})(t, q), {0.866666615, 0.833333313});
  // float64 predictions give float64 values.
  auto d = k.g.constant(Tensor::from_vector<double>({2, 2}, {0.2, 0.8, 0.9, 0.1}));
  auto acc = Metric("accuracy")(k.ints({2}, {1, 1}), d);
  CHECK(acc.dtype() == DType::float64);
  expect_values(acc, {1, 0});
}

TEST_CASE("metrics: errors") {
  Case k;
  auto msg = message_of<ValueError>([] { Metric("precision_at_recall"); });
  CHECK(contains(msg, "\"precision_at_recall\""));
  CHECK(contains(msg, "sparse_top_k_categorical_accuracy"));
  CHECK(contains(msg, "mean_squared_error"));
  msg = message_of<ShapeError>([&] { Metric("categorical_accuracy")(k.ints({4}, cid), k.c({4, 6}, cp)); });
  CHECK(contains(msg, "categorical_accuracy"));
  CHECK(contains(msg, "(4,)"));
  CHECK(contains(msg, "(4, 6)"));
  msg = message_of<ShapeError>([&] { Metric("sparse_categorical_accuracy")(k.ints({3}, {1, 3, 0}), k.c({4, 6}, cp)); });
  CHECK(contains(msg, "(3,)"));
  msg = message_of<ValueError>([] { Metric::TopKCategoricalAccuracy(0); });
  CHECK(contains(msg, "k must be positive"));
}
