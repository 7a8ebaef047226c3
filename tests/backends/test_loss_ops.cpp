// Tests of the loss ops on the CPU: (sparse) softmax cross-entropy and its fused gradient, mean
// squared / absolute error; forward values, gradients by finite differences, bad labels and shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tower/core/autodiff.h"
#include "tower/core/error.h"
#include "tower/core/graph.h"
#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::evaluate;
using tower::testing::random_tensor;

namespace {

using Ts = std::vector<SymbolicTensor>;

// Runs `build` expecting an Error subclass E whose message contains every one of `parts`.
template <typename E>
void check_error(const std::function<void()>& build, const std::vector<std::string>& parts) {
  bool thrown = false;
  try {
    build();
  } catch (const E& e) {
    thrown = true;
    std::string msg = e.what();
    CAPTURE(msg);
    for (const auto& part : parts) CHECK(msg.find(part) != std::string::npos);
  }
  CHECK(thrown);
}

// Reference cross-entropy of one row: -sum_j t_j log softmax(x)_j, and softmax(x) - t.
void cross_entropy_ref(const std::vector<double>& x, const std::vector<double>& t, std::int64_t classes,
                       std::vector<double>& loss, std::vector<double>& backprop) {
  std::size_t rows = x.size() / static_cast<std::size_t>(classes);
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < classes; ++j) sum += std::exp(x[r * classes + j]);
    double l = 0;
    for (std::int64_t j = 0; j < classes; ++j) {
      std::size_t k = r * classes + j;
      double p = std::exp(x[k]) / sum;
      l -= t[k] * std::log(p);
      backprop.push_back(p - t[k]);
    }
    loss.push_back(l);
  }
}

// Soft labels: rows of positive values summing to 1.
Tensor soft_labels(Shape shape, std::uint64_t seed) {
  Tensor r = random_tensor(shape, seed, 0.1, 1.0, /*positive=*/true);
  std::vector<double> v = r.to_vector<double>();
  std::int64_t classes = shape[1];
  for (std::size_t row = 0; row < v.size() / static_cast<std::size_t>(classes); ++row) {
    double s = 0;
    for (std::int64_t j = 0; j < classes; ++j) s += v[row * classes + j];
    for (std::int64_t j = 0; j < classes; ++j) v[row * classes + j] /= s;
  }
  return Tensor::from_vector<double>(shape, v);
}

}  // namespace

TEST_CASE("loss: softmax_cross_entropy forward values") {
  SUBCASE("hand-computed") {
    Graph g;
    auto logits = g.constant(Tensor::from_vector<double>(Shape{2, 3}, {1.0, 2.0, 3.0, 0.0, 0.0, 0.0}));
    auto labels = g.constant(Tensor::from_vector<double>(Shape{2, 3}, {0.0, 0.0, 1.0, 0.5, 0.5, 0.0}));
    auto loss = ops::softmax_cross_entropy(logits, labels);
    CHECK(loss.shape() == Shape{2});
    CHECK(loss.node()->num_outputs() == 2);
    auto r = evaluate({loss, loss.node()->output(1)});
    check_close(r[0], {0.4076059644443806, std::log(3.0)});
    check_close(r[1], {0.09003057317038046, 0.24472847105479764, 0.6652409557748219 - 1.0, 1.0 / 3 - 0.5,
                       1.0 / 3 - 0.5, 1.0 / 3});
  }

  SUBCASE("random soft labels, float32 and float64, against the reference") {
    Shape shape{37, 11};
    Tensor x = random_tensor(shape, 3, 0.1, 5.0);
    Tensor t = soft_labels(shape, 4);
    std::vector<double> loss_ref, bp_ref;
    cross_entropy_ref(x.to_vector<double>(), t.to_vector<double>(), 11, loss_ref, bp_ref);
    for (DType dtype : {DType::float64, DType::float32}) {
      Graph g;
      auto as = [&](const Tensor& v) {
        return dtype == DType::float64 ? v : Tensor::from_vector<float>(v.shape(), v.to_vector<float>());
      };
      auto loss = ops::softmax_cross_entropy(g.constant(as(x)), g.constant(as(t)));
      CHECK(loss.dtype() == dtype);
      auto r = evaluate({loss, loss.node()->output(1)});
      double tol = dtype == DType::float32 ? 1e-5 : 1e-12;
      check_close(r[0], loss_ref, tol, tol);
      check_close(r[1], bp_ref, tol, tol);
    }
  }

  SUBCASE("huge logits stay finite") {
    Graph g;
    auto logits = g.constant(Tensor::from_vector<float>(Shape{1, 3}, {1000.0f, 1001.0f, 1002.0f}));
    auto labels = g.constant(Tensor::from_vector<float>(Shape{1, 3}, {1.0f, 0.0f, 0.0f}));
    check_close(evaluate({ops::softmax_cross_entropy(logits, labels)})[0], {2.4076059644443806}, 1e-5, 1e-5);
  }
}

TEST_CASE("loss: sparse_softmax_cross_entropy matches the one-hot loss for every label dtype") {
  Shape shape{6, 5};
  Tensor x = random_tensor(shape, 9, 0.1, 3.0);
  std::vector<std::int64_t> labels = {0, 4, 2, 2, 1, 3};
  std::vector<double> onehot(30, 0.0);
  for (std::size_t r = 0; r < labels.size(); ++r) onehot[r * 5 + static_cast<std::size_t>(labels[r])] = 1.0;
  std::vector<double> loss_ref, bp_ref;
  cross_entropy_ref(x.to_vector<double>(), onehot, 5, loss_ref, bp_ref);

  std::vector<Tensor> label_tensors = {
      Tensor::from_vector<std::int32_t>(Shape{6}, std::vector<std::int32_t>(labels.begin(), labels.end())),
      Tensor::from_vector<std::int64_t>(Shape{6}, labels),
      Tensor::from_vector<std::uint8_t>(Shape{6}, std::vector<std::uint8_t>(labels.begin(), labels.end())),
  };
  for (const Tensor& lt : label_tensors) {
    for (DType dtype : {DType::float64, DType::float32}) {
      CAPTURE(dtype_name(lt.dtype()));
      CAPTURE(dtype_name(dtype));
      Graph g;
      Tensor xv = dtype == DType::float64 ? x : Tensor::from_vector<float>(shape, x.to_vector<float>());
      auto loss = ops::sparse_softmax_cross_entropy(g.constant(xv), g.constant(lt));
      CHECK(loss.shape() == Shape{6});
      auto r = evaluate({loss, loss.node()->output(1)});
      double tol = dtype == DType::float32 ? 1e-5 : 1e-12;
      check_close(r[0], loss_ref, tol, tol);
      check_close(r[1], bp_ref, tol, tol);
    }
  }
}

TEST_CASE("loss: large batches split over the thread pool") {
  // 3000 rows: enough work for the kernels to split the rows between threads.
  Shape shape{3000, 20};
  Tensor x = random_tensor(shape, 13, 0.1, 4.0);
  Tensor t = random_tensor(shape, 14);
  std::vector<std::int32_t> labels;
  std::vector<double> onehot(static_cast<std::size_t>(shape.num_elements()), 0.0);
  for (std::int32_t r = 0; r < 3000; ++r) {
    labels.push_back((r * 7) % 20);
    onehot[static_cast<std::size_t>(r * 20 + labels.back())] = 1.0;
  }
  std::vector<double> loss_ref, bp_ref;
  cross_entropy_ref(x.to_vector<double>(), onehot, 20, loss_ref, bp_ref);
  std::vector<double> xs = x.to_vector<double>(), ts = t.to_vector<double>(), mse_ref, mse_grad_ref;
  for (std::size_t r = 0; r < 3000; ++r) {
    double sq = 0;
    for (std::size_t j = 0; j < 20; ++j) {
      double d = xs[r * 20 + j] - ts[r * 20 + j];
      sq += d * d;
      mse_grad_ref.push_back(2 * d / 20);
    }
    mse_ref.push_back(sq / 20);
  }

  Graph g;
  auto f32 = [](const Tensor& v) { return Tensor::from_vector<float>(v.shape(), v.to_vector<float>()); };
  auto logits = g.placeholder(Shape{-1, 20}, DType::float32);
  auto y_true = g.constant(f32(t));
  auto sparse = ops::sparse_softmax_cross_entropy(logits, g.constant(Tensor::from_vector<std::int32_t>(Shape{3000}, labels)));
  auto dense = ops::softmax_cross_entropy(logits, g.constant(f32(Tensor::from_vector<double>(shape, onehot))));
  auto mse = ops::mean_squared_error(y_true, logits);
  auto dlogits = gradients(ops::add(ops::reduce_sum(sparse), ops::reduce_sum(dense)), {logits})[0];
  auto dmse = gradients(ops::reduce_sum(mse), {logits})[0];
  auto r = evaluate({sparse, sparse.node()->output(1), dense, dense.node()->output(1), mse, dlogits, dmse},
                    {{logits, f32(x)}});
  check_close(r[0], loss_ref, 1e-5, 1e-5);
  check_close(r[1], bp_ref, 1e-5, 1e-6);
  check_close(r[2], loss_ref, 1e-5, 1e-5);
  check_close(r[3], bp_ref, 1e-5, 1e-6);
  check_close(r[4], mse_ref, 1e-5, 1e-6);
  std::vector<double> twice;
  for (double v : bp_ref) twice.push_back(2 * v);
  check_close(r[5], twice, 1e-5, 1e-6);
  check_close(r[6], mse_grad_ref, 1e-5, 1e-6);
}

TEST_CASE("loss: sparse labels out of range throw ValueError at run time") {
  Graph g;
  auto logits = g.placeholder(Shape{-1, 3}, DType::float32);
  auto labels = g.placeholder(Shape{-1}, DType::int64);
  auto loss = ops::sparse_softmax_cross_entropy(logits, labels);
  Tensor x = Tensor::full(Shape{4, 3}, 0.5);
  for (std::int64_t bad : {3, -1, 10}) {
    CAPTURE(bad);
    FeedMap feeds{{logits, x}, {labels, Tensor::from_vector<std::int64_t>(Shape{4}, {0, 2, bad, 1})}};
    check_error<ValueError>([&] { evaluate({loss}, feeds); },
                            {"sparse_softmax_cross_entropy", "label " + std::to_string(bad), "row 2", "3 classes"});
  }
  // In-range labels still run on the same graph.
  FeedMap ok{{logits, x}, {labels, Tensor::from_vector<std::int64_t>(Shape{4}, {0, 2, 1, 1})}};
  check_close(evaluate({loss}, ok)[0], std::vector<double>(4, std::log(3.0)), 1e-6, 1e-6);
}

TEST_CASE("loss: cross-entropy gradients (first and second order)") {
  for (Shape shape : {Shape{1, 2}, Shape{4, 3}, Shape{3, 7}}) {
    CAPTURE(shape.to_string());
    Tensor t = soft_labels(shape, 21);
    // Labels are constants: they get no gradient.
    check_gradients({shape}, [&](const Ts& in) { return Ts{ops::softmax_cross_entropy(in[0], in[0].graph().constant(t))}; });

    std::vector<std::int32_t> sparse;
    for (std::int64_t r = 0; r < shape[0]; ++r) sparse.push_back(static_cast<std::int32_t>((r * 5 + 1) % shape[1]));
    Tensor st = Tensor::from_vector<std::int32_t>(Shape{shape[0]}, sparse);
    check_gradients({shape}, [&](const Ts& in) {
      return Ts{ops::sparse_softmax_cross_entropy(in[0], in[0].graph().constant(st))};
    });

    // The backprop output differentiated too (what a second-order gradient flows through).
    check_gradients({shape}, [&](const Ts& in) {
      auto loss = ops::softmax_cross_entropy(in[0], in[0].graph().constant(t));
      return Ts{loss, loss.node()->output(1)};
    });
    check_gradients({shape}, [&](const Ts& in) {
      auto loss = ops::sparse_softmax_cross_entropy(in[0], in[0].graph().constant(st));
      return Ts{loss, loss.node()->output(1)};
    });
  }

  // Labels get no gradient.
  Graph g;
  auto logits = g.placeholder(Shape{2, 3}, DType::float64);
  auto labels = g.placeholder(Shape{2, 3}, DType::float64);
  auto grads = gradients(ops::reduce_sum(ops::softmax_cross_entropy(logits, labels)), {logits, labels});
  CHECK(grads[0].defined());
  CHECK_FALSE(grads[1].defined());

  // The gradient of the gradient, end to end.
  Tensor t = soft_labels(Shape{3, 4}, 8);
  check_gradients({Shape{3, 4}}, [&](const Ts& in) {
    auto loss = ops::reduce_sum(ops::softmax_cross_entropy(ops::tanh(in[0]), in[0].graph().constant(t)));
    return gradients(loss, {in[0]});
  });
}

TEST_CASE("loss: mean_squared_error and mean_absolute_error forward values") {
  SUBCASE("hand-computed, mean over the last axis") {
    Graph g;
    auto y_true = g.constant(Tensor::from_vector<double>(Shape{2, 3}, {0.0, 1.0, 2.0, 1.0, 1.0, 1.0}));
    auto y_pred = g.constant(Tensor::from_vector<double>(Shape{2, 3}, {1.0, 1.0, 0.0, 1.5, 0.5, 4.0}));
    auto mse = ops::mean_squared_error(y_true, y_pred);
    auto mae = ops::mean_absolute_error(y_true, y_pred);
    CHECK(mse.shape() == Shape{2});
    auto r = evaluate({mse, mae});
    check_close(r[0], {5.0 / 3, (0.25 + 0.25 + 9.0) / 3});
    check_close(r[1], {1.0, (0.5 + 0.5 + 3.0) / 3});
  }

  SUBCASE("rank 1 gives a scalar, rank 3 keeps the leading axes; float32") {
    Graph g;
    auto t1 = g.constant(Tensor::from_vector<float>(Shape{4}, {1, 2, 3, 4}));
    auto p1 = g.constant(Tensor::from_vector<float>(Shape{4}, {2, 2, 1, 4}));
    auto s = ops::mean_squared_error(t1, p1);
    CHECK(s.shape() == Shape{});
    check_close(evaluate({s})[0], {5.0 / 4}, 1e-6, 1e-6);

    Shape shape{2, 3, 4};
    Tensor a = random_tensor(shape, 1), b = random_tensor(shape, 2);
    std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), mse_ref, mae_ref;
    for (std::size_t r = 0; r < 6; ++r) {
      double sq = 0, ab = 0;
      for (std::size_t j = 0; j < 4; ++j) {
        double d = bv[r * 4 + j] - av[r * 4 + j];
        sq += d * d;
        ab += std::fabs(d);
      }
      mse_ref.push_back(sq / 4);
      mae_ref.push_back(ab / 4);
    }
    auto f32 = [](const Tensor& v) { return Tensor::from_vector<float>(v.shape(), v.to_vector<float>()); };
    auto mse = ops::mean_squared_error(g.constant(f32(a)), g.constant(f32(b)));
    auto mae = ops::mean_absolute_error(g.constant(f32(a)), g.constant(f32(b)));
    CHECK(mse.shape() == Shape{2, 3});
    auto r = evaluate({mse, mae});
    check_close(r[0], mse_ref, 1e-5, 1e-6);
    check_close(r[1], mae_ref, 1e-5, 1e-6);
  }
}

TEST_CASE("loss: mean error gradients reach y_true and y_pred (first and second order)") {
  for (Shape shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 2}}) {
    CAPTURE(shape.to_string());
    check_gradients({shape, shape}, [](const Ts& in) { return Ts{ops::mean_squared_error(in[0], in[1])}; });
    // Inputs are drawn apart (|y_true| small, |y_pred| large) so no difference sits at MAE's kink.
    check_gradients({shape, shape}, [](const Ts& in) {
      return Ts{ops::mean_absolute_error(in[0], ops::add(in[1], ops::scale(ops::sign(in[1]), 2.0)))};
    });
  }
  // The gradient ops themselves, in every input.
  check_gradients({Shape{3}, Shape{3, 4}, Shape{3, 4}}, [](const Ts& in) {
    auto y_pred = in[2];
    auto d = gradients(ops::mean_squared_error(in[1], y_pred), {in[1], y_pred}, in[0]);
    return Ts{d[0], d[1]};
  });
  check_gradients({Shape{3}, Shape{3, 4}, Shape{3, 4}}, [](const Ts& in) {
    auto y_pred = ops::add(in[2], ops::scale(ops::sign(in[2]), 2.0));
    auto d = gradients(ops::mean_absolute_error(in[1], y_pred), {in[1], y_pred}, in[0]);
    // MAE's gradient is piecewise constant in y_true and y_pred: returning them as outputs too
    // checks that d[0] and d[1] add nothing to their gradients.
    return Ts{d[0], d[1], in[1], in[2]};
  });

  SUBCASE("hand-computed gradient values") {
    Graph g;
    auto y_true = g.placeholder(Shape{2, 2}, DType::float64);
    auto y_pred = g.placeholder(Shape{2, 2}, DType::float64);
    auto mse = gradients(ops::reduce_sum(ops::mean_squared_error(y_true, y_pred)), {y_true, y_pred});
    auto mae = gradients(ops::reduce_sum(ops::mean_absolute_error(y_true, y_pred)), {y_true, y_pred});
    FeedMap feeds{{y_true, Tensor::from_vector<double>(Shape{2, 2}, {0.0, 1.0, 2.0, 2.0})},
                  {y_pred, Tensor::from_vector<double>(Shape{2, 2}, {1.0, 1.0, 0.0, 3.0})}};
    auto r = evaluate({mse[0], mse[1], mae[0], mae[1]}, feeds);
    check_close(r[1], {1.0, 0.0, -2.0, 1.0});   // 2 (p - t) / d
    check_close(r[0], {-1.0, 0.0, 2.0, -1.0});
    check_close(r[3], {0.5, 0.0, -0.5, 0.5});   // sign(p - t) / d, sign(0) = 0
    check_close(r[2], {-0.5, 0.0, 0.5, -0.5});
  }
}

TEST_CASE("loss: bad shapes and dtypes are rejected at graph-build time") {
  Graph g;
  auto logits = g.placeholder(Shape{-1, 10}, DType::float32);
  auto labels5 = g.placeholder(Shape{-1, 5}, DType::float32);
  auto labels64 = g.placeholder(Shape{-1, 10}, DType::float64);
  auto sparse_f = g.placeholder(Shape{-1}, DType::float32);
  auto sparse_2d = g.placeholder(Shape{-1, 1}, DType::int32);
  auto sparse_4 = g.placeholder(Shape{4}, DType::int32);
  auto logits_8 = g.placeholder(Shape{8, 10}, DType::float32);
  auto flat = g.placeholder(Shape{10}, DType::float32);

  check_error<ShapeError>([&] { ops::softmax_cross_entropy(logits, labels5); },
                          {"softmax_cross_entropy", "(None, 10)", "(None, 5)"});
  check_error<DTypeError>([&] { ops::softmax_cross_entropy(logits, labels64); },
                          {"softmax_cross_entropy", "float32", "float64"});
  check_error<ShapeError>([&] { ops::softmax_cross_entropy(flat, flat); }, {"softmax_cross_entropy", "(10,)"});
  check_error<DTypeError>([&] { ops::sparse_softmax_cross_entropy(logits, sparse_f); },
                          {"sparse_softmax_cross_entropy", "labels", "integer"});
  check_error<ShapeError>([&] { ops::sparse_softmax_cross_entropy(logits, sparse_2d); },
                          {"sparse_softmax_cross_entropy", "(None, 10)", "(None, 1)"});
  check_error<ShapeError>([&] { ops::sparse_softmax_cross_entropy(logits_8, sparse_4); },
                          {"sparse_softmax_cross_entropy", "(8, 10)", "(4,)"});
  check_error<ShapeError>([&] { ops::mean_squared_error(labels5, logits); },
                          {"mean_squared_error", "(None, 5)", "(None, 10)"});
  check_error<DTypeError>([&] { ops::mean_absolute_error(logits, labels64); },
                          {"mean_absolute_error", "float32", "float64"});

  // Unknown batch dimensions pass through to the loss.
  auto labels10 = g.placeholder(Shape{-1, 10}, DType::float32);
  CHECK(ops::softmax_cross_entropy(logits, labels10).shape() == Shape{-1});
  CHECK(ops::softmax_cross_entropy(logits, logits_8).node()->output(1).shape() == Shape{8, 10});
  CHECK(ops::sparse_softmax_cross_entropy(logits, g.placeholder(Shape{-1}, DType::uint8)).shape() == Shape{-1});
  CHECK(ops::mean_absolute_error(logits, logits_8).shape() == Shape{8});
}
