// Tests of layers/losses against values from real Keras 3.15 (TensorFlow backend): each expected
// vector was printed by /work/venv-tf/bin/python with the keras call in its comment, on the float32
// inputs of tests/layers/loss_metric_data.h. Also: the fused softmax/sigmoid paths, sparse label
// layouts, gradients w.r.t. y_pred, and error messages.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/core/graph.h"
#include "tower/core/ops.h"
#include "tower/layers/losses/losses.h"
#include "tests/layers/loss_metric_data.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using namespace tower::testing::loss_metric_data;
using losses::Loss;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::contains;
using tower::testing::evaluate;
using tower::testing::message_of;

// ---- losses ------------------------------------------------------------------------------------------

TEST_CASE("losses: categorical_crossentropy matches Keras") {
  Case k;
  auto y_true = k.c({3, 4}, yt);
  // keras.losses.categorical_crossentropy(yt, p)
  expect_values(Loss("categorical_crossentropy")(y_true, k.c({3, 4}, p)), {1.20397282, 1.60943794, 0.606135905});
  // keras.losses.categorical_crossentropy(soft, p)
  expect_values(losses::CategoricalCrossentropy()(k.c({3, 4}, soft), k.c({3, 4}, p)),
                {1.43547356, 4.90616369, 1.14366376});
  // keras.losses.categorical_crossentropy(yt, logits, from_logits=True)
  expect_values(losses::CategoricalCrossentropy({.from_logits = true})(y_true, k.c({3, 4}, logits)),
                {0.495181888, 0.260110646, 0});
  // keras.losses.CategoricalCrossentropy(label_smoothing=0.1, reduction=None)(yt, p)
  expect_values(losses::CategoricalCrossentropy({.label_smoothing = 0.1})(y_true, k.c({3, 4}, p)),
                {1.23438263, 1.93911052, 0.713052511});
  // keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1, reduction=None)(yt, logits)
  expect_values(
      losses::CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1})(y_true, k.c({3, 4}, logits)),
      {0.632681847, 0.490110636, 2.9749999});
  // Integer one-hot labels are cast to y_pred's dtype.
  std::vector<std::int32_t> yt_int(yt.begin(), yt.end());
  expect_values(Loss("CategoricalCrossentropy")(k.ints({3, 4}, yt_int), k.c({3, 4}, p)),
                {1.20397282, 1.60943794, 0.606135905});
}

TEST_CASE("losses: a softmax output is fused with the crossentropy, as Keras's _keras_logits") {
  Case k;
  // keras.losses.categorical_crossentropy(yt, keras.activations.softmax(logits)): the logits are used.
  auto probs = ops::softmax(k.c({3, 4}, logits));
  expect_values(Loss("categorical_crossentropy")(k.c({3, 4}, yt), probs), {0.495181888, 0.260110646, 0});
  // A wrong class with extreme logits: the fused path gives the true 60, the clipped one -log(1e-7).
  // keras: categorical_crossentropy([[0,1,0,0]], softmax([[30,-30,0,1]])) = 60; on np.array(...) = 16.1180954
  auto extreme = k.c({1, 4}, {30, -30, 0, 1});
  auto one_hot = k.c({1, 4}, {0, 1, 0, 0});
  expect_values(Loss("categorical_crossentropy")(one_hot, ops::softmax(extreme)), {60}, 1e-6);
  auto softmax_values = evaluate({ops::softmax(extreme)})[0];
  expect_values(Loss("categorical_crossentropy")(one_hot, k.g.constant(softmax_values)), {16.1180954}, 1e-6);
  // Sparse: sparse_categorical_crossentropy([1], softmax(...)) = 60, on the values 16.1180954.
  auto label = k.ints({1}, {1});
  expect_values(Loss("sparse_categorical_crossentropy")(label, ops::softmax(extreme)), {60}, 1e-6);
  expect_values(Loss("sparse_categorical_crossentropy")(label, k.g.constant(softmax_values)), {16.1180954}, 1e-6);
  // The fused path ends in the fused op (one node, its gradient precomputed).
  auto fused = Loss("categorical_crossentropy")(one_hot, ops::softmax(extreme));
  CHECK(fused.node()->op() == "softmax_cross_entropy");
  // A softmax over another axis is not a distribution over the classes: no fusion.
  auto other_axis = ops::softmax(k.c({3, 4}, logits), 0);
  CHECK(Loss("categorical_crossentropy")(k.c({3, 4}, yt), other_axis).node()->op() != "softmax_cross_entropy");
}

TEST_CASE("losses: sparse_categorical_crossentropy with labels (batch,) and (batch, 1)") {
  Case k;
  auto probs = k.c({3, 4}, p);
  // keras.losses.sparse_categorical_crossentropy([1, 3, 0], p)
  const std::vector<double> expected = {1.20397282, 1.60943794, 0.606135786};
  expect_values(Loss("sparse_categorical_crossentropy")(k.ints({3}, {1, 3, 0}), probs), expected);
  expect_values(Loss("sparse_categorical_crossentropy")(k.ints({3, 1}, {1, 3, 0}), probs), expected);
  expect_values(Loss("sparse_categorical_crossentropy")(k.c({3}, ids), probs), expected);  // float ids
  // keras: sparse_categorical_crossentropy(ids.reshape(3, 1).astype("float32"), p)
  expect_values(losses::SparseCategoricalCrossentropy()(k.c({3, 1}, ids), probs), expected);
  auto int64_ids = k.g.constant(Tensor::from_vector<std::int64_t>({3}, {1, 3, 0}));
  expect_values(Loss("SparseCategoricalCrossentropy")(int64_ids, probs), expected);
  // keras.losses.sparse_categorical_crossentropy([1, 3, 0], logits, from_logits=True)
  expect_values(
      losses::SparseCategoricalCrossentropy({.from_logits = true})(k.ints({3}, {1, 3, 0}), k.c({3, 4}, logits)),
      {0.495181888, 0.260110646, 0});
}

TEST_CASE("losses: sequences (batch, time, classes) give the per-sample mean over time") {
  Case k;
  // keras.losses.sparse_categorical_crossentropy(i3, p3) = [[0.693147182, 0.510825574], [0.223143548, 1.20397282]],
  // and SparseCategoricalCrossentropy()(i3, p3) = 0.657772303 (the mean of the per-sample values).
  auto p3 = k.c({2, 2, 3}, {0.2f, 0.5f, 0.3f, 0.6f, 0.3f, 0.1f, 0.1f, 0.1f, 0.8f, 0.3f, 0.3f, 0.4f});
  auto loss = Loss("sparse_categorical_crossentropy")(k.ints({2, 2}, {1, 0, 2, 1}), p3);
  expect_values(loss, {(0.693147182 + 0.510825574) / 2, (0.223143548 + 1.20397282) / 2});
  CHECK(evaluate({ops::reduce_mean(loss)})[0].item() == doctest::Approx(0.657772303).epsilon(1e-6));
  // The same data one-hot through the categorical loss.
  auto one_hot = k.c({2, 2, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0});
  expect_values(Loss("categorical_crossentropy")(one_hot, p3),
                {(0.693147182 + 0.510825574) / 2, (0.223143548 + 1.20397282) / 2});
}

TEST_CASE("losses: binary_crossentropy matches Keras") {
  Case k;
  auto y_true = k.c({3, 2}, bt);
  // keras.losses.binary_crossentropy(bt, bp)
  expect_values(Loss("binary_crossentropy")(y_true, k.c({3, 2}, bp)), {0.164252043, 0.45814541, 0.458145469});
  // keras.losses.binary_crossentropy(bt_soft, bp)
  expect_values(Loss("bce")(k.c({3, 2}, bt_soft), k.c({3, 2}, bp)), {0.453289241, 0.356779128, 0.397325695});
  // keras.losses.binary_crossentropy(bt, bl, from_logits=True)
  expect_values(losses::BinaryCrossentropy({.from_logits = true})(y_true, k.c({3, 2}, bl)),
                {0.164170653, 0.427177638, 0.346573591});
  // keras.losses.BinaryCrossentropy(label_smoothing=0.2, reduction=None)(bt, bp)
  expect_values(losses::BinaryCrossentropy({.label_smoothing = 0.2})(y_true, k.c({3, 2}, bp)),
                {0.343427956, 1.23499107, 1.24377704});
  // keras.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2, reduction=None)(bt, bl)
  expect_values(losses::BinaryCrossentropy({.from_logits = true, .label_smoothing = 0.2})(y_true, k.c({3, 2}, bl)),
                {0.339170635, 1.41217756, 1.34657359});
  // keras.losses.binary_crossentropy(bt, keras.activations.sigmoid(bl)): the sigmoid's input is used.
  expect_values(Loss("binary_crossentropy")(y_true, ops::sigmoid(k.c({3, 2}, bl))),
                {0.164170653, 0.427177638, 0.346573591});
  // Saturated sigmoid: binary_crossentropy([[0,1]], sigmoid([[20,-20]])) = 20; on np.array(...) = 16.0302391
  auto extreme = k.c({1, 2}, {20, -20});
  auto labels = k.c({1, 2}, {0, 1});
  expect_values(Loss("binary_crossentropy")(labels, ops::sigmoid(extreme)), {20}, 1e-6);
  expect_values(Loss("binary_crossentropy")(labels, k.g.constant(evaluate({ops::sigmoid(extreme)})[0])), {16.0302391},
                1e-6);
}

TEST_CASE("losses: (batch,) targets and predictions, and ranks differing by a trailing 1") {
  Case k;
  const Floats t = {0, 1, 1, 0}, q = {0.3f, 0.6f, 0.9f, 0.2f};
  // keras.losses.BinaryCrossentropy(reduction=None)(t.reshape(4, 1), q) and (t, q.reshape(4, 1)); with
  // both (4,) Keras returns their mean 0.299001157 (a per-sample value here, same mean).
  const std::vector<double> expected = {0.356674969, 0.510825574, 0.105360545, 0.223143533};
  expect_values(Loss("binary_crossentropy")(k.c({4, 1}, t), k.c({4}, q)), expected);
  expect_values(Loss("binary_crossentropy")(k.c({4}, t), k.c({4, 1}, q)), expected);
  auto flat = Loss("binary_crossentropy")(k.c({4}, t), k.c({4}, q));
  expect_values(flat, expected);
  CHECK(evaluate({ops::reduce_mean(flat)})[0].item() == doctest::Approx(0.299001157).epsilon(1e-6));
  // keras.losses.MeanSquaredError(reduction=None)(t, q.reshape(4, 1))
  expect_values(Loss("mse")(k.c({4}, t), k.c({4, 1}, q)), {0.0900000036, 0.159999982, 0.0100000044, 0.0400000028});
  // The sigmoid fusion survives the reshape of a (batch,) prediction.
  expect_values(Loss("binary_crossentropy")(k.c({1}, {0}), ops::sigmoid(k.c({1}, {20}))), {20}, 1e-6);
}

TEST_CASE("losses: mean_squared_error, mean_absolute_error, huber match Keras") {
  Case k;
  auto t = k.c({2, 3}, rt), q = k.c({2, 3}, rp);
  // keras.losses.mean_squared_error(rt, rp), mean_absolute_error, huber, huber(delta=0.5)
  expect_values(Loss("mean_squared_error")(t, q), {1.42000008, 1.37666667});
  expect_values(losses::MeanSquaredError()(t, q), {1.42000008, 1.37666667});
  expect_values(Loss("mae")(t, q), {0.866666615, 0.833333313});
  expect_values(losses::MeanAbsoluteError()(t, q), {0.866666615, 0.833333313});
  expect_values(losses::Huber()(t, q), {0.543333352, 0.521666646});
  expect_values(Loss("huber_loss")(t, q), {0.543333352, 0.521666646});
  expect_values(losses::Huber(0.5)(t, q), {0.335000008, 0.313333303});
  CHECK(losses::Huber(0.5).options().delta == 0.5);
}

TEST_CASE("losses: names") {
  CHECK(Loss("mse").name() == "mean_squared_error");
  CHECK(Loss("MSE").name() == "mean_squared_error");
  CHECK(Loss("MeanAbsoluteError").name() == "mean_absolute_error");
  CHECK(Loss("huber_loss").name() == "huber");
  CHECK(Loss("Huber").name() == "huber");
  CHECK(Loss("BinaryCrossentropy").name() == "binary_crossentropy");
  CHECK(Loss("SparseCategoricalCrossentropy").name() == "sparse_categorical_crossentropy");
  Loss custom([](const SymbolicTensor& t, const SymbolicTensor& q) { return ops::mean_absolute_error(t, q); },
              "my_mae");
  CHECK(custom.name() == "my_mae");
  Case k;
  expect_values(custom(k.c({2, 3}, rt), k.c({2, 3}, rp)), {0.866666615, 0.833333313});
}

TEST_CASE("losses: gradients w.r.t. y_pred") {
  using tower::testing::GradCheckOptions;
  auto labels = [](const SymbolicTensor& x, const Shape& shape, const std::vector<double>& v) {
    return x.graph().constant(Tensor::from_vector<double>(shape, v));
  };
  const std::vector<double> one_hot = {0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0};
  SUBCASE("categorical, probabilities (normalised and clipped)") {
    check_gradients(
        {{3, 4}},
        [&](const auto& in) {
          return std::vector{
              Loss("categorical_crossentropy", {.label_smoothing = 0.1})(labels(in[0], {3, 4}, one_hot), in[0])};
        },
        GradCheckOptions{.positive = true});
  }
  SUBCASE("categorical through a softmax (fused)") {
    check_gradients({{3, 4}}, [&](const auto& in) {
      return std::vector{Loss("categorical_crossentropy")(labels(in[0], {3, 4}, one_hot), ops::softmax(in[0]))};
    });
  }
  SUBCASE("sparse, probabilities and logits") {
    check_gradients(
        {{3, 4}},
        [&](const auto& in) {
          auto y = in[0].graph().constant(Tensor::from_vector<std::int32_t>({3, 1}, {1, 2, 0}));
          return std::vector{Loss("sparse_categorical_crossentropy")(y, in[0]),
                             Loss("sparse_categorical_crossentropy", {.from_logits = true})(y, in[0])};
        },
        GradCheckOptions{.positive = true});
  }
  SUBCASE("binary, probabilities and logits") {
    check_gradients(
        {{3, 2}},
        [&](const auto& in) {
          auto y = labels(in[0], {3, 2}, {0, 1, 1, 0.3, 0, 1});
          return std::vector{Loss("binary_crossentropy")(y, in[0]),
                             Loss("binary_crossentropy", {.from_logits = true, .label_smoothing = 0.2})(y, in[0])};
        },
        GradCheckOptions{.max_abs = 0.9, .positive = true});
  }
  SUBCASE("binary through a sigmoid, huber") {
    check_gradients({{3, 2}}, [&](const auto& in) {
      auto y = labels(in[0], {3, 2}, {0, 1, 1, 0, 0, 1});
      auto target = labels(in[0], {3, 2}, {0.5, -1.2, 0.05, 2.0, -0.3, 0.0});
      return std::vector{Loss("binary_crossentropy")(y, ops::sigmoid(in[0])), losses::Huber(0.5)(target, in[0])};
    });
  }
}

TEST_CASE("losses: errors name the loss, the shapes and the fix") {
  Case k;
  auto msg = message_of<ShapeError>([&] { Loss("categorical_crossentropy")(k.ints({3}, {1, 3, 0}), k.c({3, 4}, p)); });
  CHECK(contains(msg, "categorical_crossentropy"));
  CHECK(contains(msg, "(3,)"));
  CHECK(contains(msg, "(3, 4)"));
  CHECK(contains(msg, "sparse_categorical_crossentropy"));
  msg = message_of<ShapeError>([&] { Loss("mse")(k.c({2, 3}, rt), k.c({3, 2}, rp)); });
  CHECK(contains(msg, "mean_squared_error"));
  CHECK(contains(msg, "(2, 3)"));
  CHECK(contains(msg, "(3, 2)"));
  msg = message_of<ShapeError>([&] { Loss("sparse_categorical_crossentropy")(k.c({3, 4}, yt), k.c({3, 4}, p)); });
  CHECK(contains(msg, "sparse_categorical_crossentropy"));
  CHECK(contains(msg, "categorical_crossentropy"));
  msg = message_of<ValueError>([] { Loss("cross_entropy"); });
  CHECK(contains(msg, "\"cross_entropy\""));
  CHECK(contains(msg, "categorical_crossentropy"));
  CHECK(contains(msg, "mean_squared_error"));
  msg = message_of<ValueError>([] { losses::SparseCategoricalCrossentropy({.label_smoothing = 0.1}); });
  CHECK(contains(msg, "label_smoothing"));
  msg = message_of<DTypeError>([&] { Loss("mse")(k.c({3}, ids), k.ints({3}, {1, 3, 0})); });
  CHECK(contains(msg, "float"));
}

// ---- issue 18's losses (their values on random data are in tests/golden's losses.h5) ------------------

TEST_CASE("losses: the names and aliases of Keras's other losses") {
  CHECK(Loss("logcosh").name() == "log_cosh");
  CHECK(Loss("LogCosh").name() == "log_cosh");
  CHECK(Loss("kld").name() == "kl_divergence");
  CHECK(Loss("KLD").name() == "kl_divergence");
  CHECK(Loss("kullback_leibler_divergence").name() == "kl_divergence");
  CHECK(Loss("KLDivergence").name() == "kl_divergence");
  CHECK(Loss("mape").name() == "mean_absolute_percentage_error");
  CHECK(Loss("MAPE").name() == "mean_absolute_percentage_error");
  CHECK(Loss("msle").name() == "mean_squared_logarithmic_error");
  CHECK(Loss("MSLE").name() == "mean_squared_logarithmic_error");
  CHECK(Loss("CosineSimilarity").name() == "cosine_similarity");
  CHECK(Loss("SquaredHinge").name() == "squared_hinge");
  CHECK(Loss("BinaryFocalCrossentropy").name() == "binary_focal_crossentropy");
  CHECK(Loss("CategoricalFocalCrossentropy").name() == "categorical_focal_crossentropy");
  CHECK(losses::Poisson().name() == "poisson");
  CHECK(losses::CategoricalHinge().name() == "categorical_hinge");
  // Keras's defaults.
  const auto focal = losses::BinaryFocalCrossentropy().options();
  CHECK(focal.alpha == 0.25);
  CHECK(focal.gamma == 2.0);
  CHECK_FALSE(focal.apply_class_balancing);
  CHECK_FALSE(focal.from_logits);
  CHECK(losses::CosineSimilarity().options().axis == -1);
}

TEST_CASE("losses: Keras's other losses match Keras") {
  Case k;
  auto t = k.c({2, 3}, rt), q = k.c({2, 3}, rp);
  // keras.losses.log_cosh(rt, rp), mean_absolute_percentage_error (a 0 in y_true: divided by epsilon),
  // mean_squared_logarithmic_error (negatives taken as epsilon)
  expect_values(losses::LogCosh()(t, q), {0.48336962, 0.4630705});
  expect_values(Loss("mape")(t, q), {56.666668, 66666692}, 1e-5);
  expect_values(Loss("msle")(t, q), {0.018184358, 0.160151});
  // keras.losses.poisson(abs(rt), abs(rp) + 0.1)
  expect_values(losses::Poisson()(k.c({2, 3}, {1, 2, 0.5f, 0, 3, 1}), k.c({2, 3}, {1.6f, 0.1f, 0.5f, 0.3f, 1.1f, 1.4f})),
                {2.227246, 0.7258656});
  // keras.losses.kl_divergence(bt, bp): both clipped to [epsilon, 1]
  expect_values(losses::KLDivergence()(k.c({3, 2}, bt), k.c({3, 2}, bp)), {0.22314216, 0.91629076, -1.560727e-06});
  // keras.losses.hinge(bt, bl), squared_hinge: 0/1 labels taken as -1/1
  expect_values(losses::Hinge()(k.c({3, 2}, bt), k.c({3, 2}, bl)), {0, 0.65, 0.5});
  expect_values(losses::SquaredHinge()(k.c({3, 2}, bt), k.c({3, 2}, bl)), {0, 0.8449999, 0.5});
  // keras.losses.categorical_hinge(yt, p)
  expect_values(losses::CategoricalHinge()(k.c({3, 4}, yt), k.c({3, 4}, p)), {1.1, 1.3, 0.7});
  // keras.losses.CosineSimilarity(axis=1, reduction=None)(yt3, yp3): (2, 2), whose mean per sample is
  // tower's (batch,)
  auto yt3 = k.c({2, 3, 2}, {1, 2, -2, -1, 0.5f, 1.5f, 0, 1, 3, 4, -1, 0});
  auto yp3 = k.c({2, 3, 2}, {1.5f, 1.5f, 0, 0, 0.4f, 0.4f, -0.2f, -0.2f, 1, 1, -1.3f, -1.3f});
  expect_values(losses::CosineSimilarity(1)(yt3, yp3), {(-0.47792608 - 0.8612415) / 2, (-0.8229759 - 0.5577991) / 2});
  // keras.losses.binary_focal_crossentropy(bt, keras.ops.sigmoid(bl)): Keras's sigmoid carries its
  // logits, so the cross-entropy is taken on them; tower finds them in the graph.
  expect_values(losses::BinaryFocalCrossentropy()(k.c({3, 2}, bt), ops::sigmoid(k.c({3, 2}, bl))),
                {0.004253204, 0.14096187, 0.0866434});
  expect_values(losses::BinaryFocalCrossentropy({.from_logits = true})(k.c({3, 2}, bt), k.c({3, 2}, bl)),
                {0.004253204, 0.14096187, 0.0866434});
  // keras.losses.CategoricalFocalCrossentropy(reduction=None)(yt, keras.ops.softmax(logits))
  expect_values(losses::CategoricalFocalCrossentropy()(k.c({3, 4}, yt), ops::softmax(k.c({3, 4}, logits))),
                {1.8881463e-02, 3.4111191e-03, 4.2351647e-22});
}

TEST_CASE("losses: gradients through Keras's other losses") {
  using tower::testing::GradCheckOptions;
  auto constant = [](const SymbolicTensor& x, const Shape& shape, const std::vector<double>& v) {
    return x.graph().constant(Tensor::from_vector<double>(shape, v));
  };
  const std::vector<double> one_hot = {0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0};
  const std::vector<double> binary = {0, 1, 1, 0, 0, 1};
  SUBCASE("log_cosh, mean_absolute_percentage_error, cosine_similarity") {
    check_gradients({{3, 2}, {2, 3, 2}}, [&](const auto& in) {
      auto target = constant(in[0], {3, 2}, {0.5, -1.2, 2.5, 2.0, -3.0, 1.5});
      auto target3 = constant(in[1], {2, 3, 2}, {1, 2, -2, -1, 0.5, 1.5, 0, 1, 3, 4, -1, 0});
      return std::vector{losses::LogCosh()(target, in[0]), losses::MeanAbsolutePercentageError()(target, in[0]),
                         losses::CosineSimilarity()(target, in[0]), losses::CosineSimilarity(1)(target3, in[1])};
    });
  }
  SUBCASE("mean_squared_logarithmic_error, poisson, kl_divergence") {
    check_gradients(
        {{3, 2}},
        [&](const auto& in) {
          auto target = constant(in[0], {3, 2}, {0.5, 0.2, 2.5, 0.0, 0.3, 1.5});
          auto dist = constant(in[0], {3, 2}, {0.3, 0.7, 0.9, 0.1, 0.0, 1.0});
          return std::vector{losses::MeanSquaredLogarithmicError()(target, in[0]), losses::Poisson()(target, in[0]),
                             losses::KLDivergence()(dist, in[0])};
        },
        GradCheckOptions{.max_abs = 0.95, .positive = true});
  }
  SUBCASE("hinge, squared_hinge, categorical_hinge") {
    check_gradients(
        {{3, 2}, {3, 4}},
        [&](const auto& in) {
          auto y = constant(in[0], {3, 2}, binary);
          auto signs = constant(in[0], {3, 2}, {-1, 1, 1, -1, -1, 1});
          return std::vector{losses::Hinge()(y, in[0]), losses::SquaredHinge()(signs, in[0]),
                             losses::CategoricalHinge()(constant(in[1], {3, 4}, one_hot), in[1])};
        },
        GradCheckOptions{.max_abs = 0.9});
  }
  SUBCASE("binary_focal_crossentropy: probabilities, logits, through a sigmoid, gamma 0.5") {
    check_gradients(
        {{3, 2}, {3, 2}},
        [&](const auto& in) {
          auto y = constant(in[0], {3, 2}, binary);
          return std::vector{
              losses::BinaryFocalCrossentropy({.label_smoothing = 0.1})(y, in[0]),
              losses::BinaryFocalCrossentropy({.from_logits = true, .apply_class_balancing = true, .gamma = 3})(y, in[1]),
              losses::BinaryFocalCrossentropy({.gamma = 0.5})(y, ops::sigmoid(in[1]))};
        },
        GradCheckOptions{.max_abs = 0.9, .positive = true});
  }
  SUBCASE("categorical_focal_crossentropy: probabilities and logits") {
    check_gradients(
        {{3, 4}, {3, 4}},
        [&](const auto& in) {
          auto y = constant(in[0], {3, 4}, one_hot);
          return std::vector{
              losses::CategoricalFocalCrossentropy({.label_smoothing = 0.1})(y, in[0]),
              losses::CategoricalFocalCrossentropy({.from_logits = true, .alpha = 0.5, .gamma = 1.5})(y, in[1])};
        },
        GradCheckOptions{.positive = true});
  }
}

TEST_CASE("losses: Keras's other losses name themselves and the shapes in errors") {
  Case k;
  for (const char* name :
       {"log_cosh", "kl_divergence", "poisson", "hinge", "squared_hinge", "categorical_hinge", "cosine_similarity",
        "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "binary_focal_crossentropy",
        "categorical_focal_crossentropy"}) {
    CAPTURE(name);
    const Loss loss(name);
    auto msg = message_of<ShapeError>([&] { loss(k.c({2, 3}, rt), k.c({3, 2}, rp)); });
    CHECK(contains(msg, name));
    CHECK(contains(msg, "(2, 3)"));
    CHECK(contains(msg, "(3, 2)"));
  }
  auto msg = message_of<ShapeError>(
      [&] { losses::CategoricalFocalCrossentropy()(k.ints({3}, {1, 3, 0}), k.c({3}, {0.1f, 0.2f, 0.7f})); });
  CHECK(contains(msg, "categorical_focal_crossentropy"));
  CHECK(contains(msg, "(batch, ..., classes)"));
  msg = message_of<ValueError>([] { Loss("hinge", {.label_smoothing = 0.1}); });
  CHECK(contains(msg, "hinge"));
  CHECK(contains(msg, "label_smoothing"));
  msg = message_of<ValueError>([] { Loss("mse", {.axis = 1}); });
  CHECK(contains(msg, "mean_squared_error"));
  CHECK(contains(msg, "axis"));
  msg = message_of<ValueError>([&] { losses::CosineSimilarity(0)(k.c({2, 3}, rt), k.c({2, 3}, rp)); });
  CHECK(contains(msg, "cosine_similarity"));
  CHECK(contains(msg, "batch axis"));
  // Keras 3's SparseCategoricalCrossentropy takes no label_smoothing either.
  msg = message_of<ValueError>([] { Loss("sparse_categorical_crossentropy", {.label_smoothing = 0.1}); });
  CHECK(contains(msg, "label_smoothing"));
}
