// Tests of Keras's stateful metrics (layers/metrics/stateful_metrics.cpp) by hand-computed values: state
// across batches and reset_state; Keras's names, defaults and configs; in the training loop (running
// values after each batch, reset at every epoch and evaluate, train_on_batch's one batch); towers on two
// CPU devices giving one device's numbers; per-output metrics; the training_config round trip; errors.
// Keras's own numbers for every option are in tests/golden/test_golden_metrics.cpp.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tests/support/errors.h"

using namespace tower;
using metrics::Metric;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

Tensor floats(Shape shape, const std::vector<float>& v) { return Tensor::from_vector<float>(std::move(shape), v); }

// (n, 4) -> (n, 1) sigmoid: a binary classifier, and its data.
Model binary_model(std::uint64_t seed) {
  set_random_seed(seed);
  auto in = layers::Input({4}, {.name = "in"});
  auto out = layers::Dense(1, {.activation = "sigmoid", .name = "out"})(layers::Dense(6, {.activation = "tanh"})(in));
  return Model(in, out, "binary");
}
std::pair<Tensor, Tensor> binary_data(std::int64_t n) {
  Tensor x = random_normal({n, 4}, 0.0, 1.0, 7);
  std::vector<float> y;
  for (std::int64_t i = 0; i < n; ++i) y.push_back(static_cast<float>((i * 7 + i / 3) % 2));
  return {x, floats({n, 1}, y)};
}

// The first n rows of a float32 (rows, cols) tensor.
Tensor first_rows(const Tensor& t, std::int64_t n) {
  auto v = t.to_vector<float>();
  const std::int64_t cols = t.shape()[1];
  return floats({n, cols}, std::vector<float>(v.begin(), v.begin() + n * cols));
}

// Standalone values of `metric` over the whole of (y, p).
double standalone(Metric metric, const Tensor& y, const Tensor& p) {
  metric.update_state(y, p);
  return metric.result();
}

}  // namespace

TEST_CASE("stateful metrics: state accumulates across batches; result and reset_state as Keras") {
  auto precision = metrics::Precision(), recall = metrics::Recall();
  // Batch 1 at 0.5: predicted positive 0.9 (1), 0.8 (0), 0.6 (1); positives 3 -> precision 2/3, recall 2/3.
  const Tensor y1 = floats({4, 1}, {1, 0, 1, 1}), p1 = floats({4, 1}, {0.9f, 0.8f, 0.3f, 0.6f});
  // Batch 2: 0.7 (0), 0.9 (1) -> totals tp 3, fp 2, fn 1: precision 3/5, recall 3/4.
  const Tensor y2 = floats({2, 1}, {0, 1}), p2 = floats({2, 1}, {0.7f, 0.9f});
  for (auto* m : {&precision, &recall}) m->update_state(y1, p1);
  CHECK(precision.result() == doctest::Approx(2.0 / 3));
  CHECK(recall.result() == doctest::Approx(2.0 / 3));
  for (auto* m : {&precision, &recall}) m->update_state(y2, p2);
  CHECK(precision.result() == doctest::Approx(0.6));
  CHECK(recall.result() == doctest::Approx(0.75));
  precision.reset_state();
  CHECK(precision.state().empty());
  CHECK(precision.result() == 0.0);  // Keras: divide_no_nan of zeros
  precision.update_state(y2, p2);
  CHECK(precision.result() == doctest::Approx(0.5));

  // The counts, with sample weights, at several thresholds: one value per threshold.
  auto tp = metrics::TruePositives({0.5, 0.85});
  tp.update_state(y1, p1, floats({4}, {1, 1, 1, 2}));
  CHECK(tp.result_values() == std::vector<double>{3.0, 1.0});
  CHECK(contains(message_of<ValueError>([&] { tp.result(); }), "result_values()"));
  auto tn = metrics::TrueNegatives(), fn = metrics::FalseNegatives(), fp = metrics::FalsePositives();
  for (auto* m : {&tn, &fn, &fp}) m->update_state(y1, p1);
  CHECK(tn.result() == 0.0);
  CHECK(fn.result() == 1.0);
  CHECK(fp.result() == 1.0);

  // AUC: separable scores give 1, reversed ones 0, all tied 0.5.
  const Tensor labels = floats({4, 1}, {0, 0, 1, 1});
  CHECK(standalone(metrics::AUC(), labels, floats({4, 1}, {0.1f, 0.2f, 0.7f, 0.9f})) == doctest::Approx(1.0));
  CHECK(standalone(metrics::AUC(), labels, floats({4, 1}, {0.9f, 0.7f, 0.2f, 0.1f})) == doctest::Approx(0.0));
  CHECK(standalone(metrics::AUC(), labels, floats({4, 1}, {0.4f, 0.4f, 0.4f, 0.4f})) == doctest::Approx(0.5));
  // multi_label: each column its own curve, the mean of the AUCs: 1 (separable) and 0 (reversed).
  const Tensor two = floats({4, 2}, {0, 1, 0, 1, 1, 0, 1, 0});
  const Tensor scores = floats({4, 2}, {0.1f, 0.1f, 0.2f, 0.2f, 0.7f, 0.7f, 0.9f, 0.9f});
  CHECK(standalone(metrics::AUC({.multi_label = true}), two, scores) == doctest::Approx(0.5));
  CHECK(standalone(metrics::AUC(), two, scores) == doctest::Approx(0.5));

  // Mean and Sum take values (and weights): (1 + 2 + 2 * 3) / 4 and 9.
  auto mean = metrics::Mean(), sum = metrics::Sum();
  for (auto* m : {&mean, &sum}) m->update_state(floats({3}, {1, 2, 3}), floats({3}, {1, 1, 2}));
  CHECK(mean.result() == doctest::Approx(2.25));
  CHECK(sum.result() == doctest::Approx(9.0));
  mean.update_state(floats({1}, {5}));
  CHECK(mean.result() == doctest::Approx(14.0 / 5));

  // A per-sample metric used standalone is Keras's weighted mean: hits 1, 0, 1 weighted 1, 3, 1.
  auto accuracy = metrics::CategoricalAccuracy();
  accuracy.update_state(floats({3, 2}, {1, 0, 0, 1, 1, 0}), floats({3, 2}, {0.8f, 0.2f, 0.6f, 0.4f, 0.7f, 0.3f}),
                        floats({3}, {1, 3, 1}));
  CHECK(accuracy.result() == doctest::Approx(0.4));

  // MeanIoU: [[1, 1], [0, 2]] -> IoU 1/2 and 2/3.
  auto iou = metrics::MeanIoU(2);
  iou.update_state(Tensor::from_vector<std::int32_t>({4}, {0, 0, 1, 1}), Tensor::from_vector<std::int32_t>({4}, {0, 1, 1, 1}));
  CHECK(iou.result() == doctest::Approx((0.5 + 2.0 / 3) / 2));

  // F1 per class, and macro: class 0 precision 1 recall 1/2, class 1 precision 1/2 recall 1.
  auto f1 = metrics::F1Score(), macro = metrics::F1Score({.average = "macro"});
  const Tensor fy = floats({3, 2}, {1, 0, 1, 0, 0, 1}), fp_ = floats({3, 2}, {0.9f, 0.1f, 0.2f, 0.8f, 0.3f, 0.7f});
  for (auto* m : {&f1, &macro}) m->update_state(fy, fp_);
  REQUIRE(f1.result_values().size() == 2);
  CHECK(f1.result_values()[0] == doctest::Approx(2.0 / 3).epsilon(1e-5));
  CHECK(f1.result_values()[1] == doctest::Approx(2.0 / 3).epsilon(1e-5));
  CHECK(macro.result() == doctest::Approx(2.0 / 3).epsilon(1e-5));
}

TEST_CASE("stateful metrics: Keras's names, defaults and configs") {
  const std::vector<std::pair<Metric, std::string>> named = {
      {metrics::AUC(), "auc"}, {metrics::Precision(), "precision"}, {metrics::Recall(), "recall"},
      {metrics::TruePositives(), "true_positives"}, {metrics::FalseNegatives(), "false_negatives"},
      {metrics::F1Score(), "f1_score"}, {metrics::FBetaScore(), "fbeta_score"}, {metrics::MeanIoU(3), "mean_io_u"},
      {metrics::Mean(), "mean"}, {metrics::Sum(), "sum"}, {metrics::Accuracy(), "accuracy"},
      {metrics::BinaryAccuracy(), "binary_accuracy"}, {metrics::CategoricalAccuracy(), "categorical_accuracy"},
      {metrics::SparseCategoricalAccuracy(), "sparse_categorical_accuracy"},
      {metrics::TopKCategoricalAccuracy(), "top_k_categorical_accuracy"},
      {metrics::SparseTopKCategoricalAccuracy(3), "sparse_top_k_categorical_accuracy"}};
  for (const auto& [m, name] : named) {
    CAPTURE(name);
    CHECK(m.name() == name);
    auto again = Metric::from_config({{"class_name", m.class_name()}, {"config", m.get_config()}});
    CHECK(again.name() == name);
    CHECK(again.get_config() == m.get_config());
  }
  // keras.metrics.AUC().get_config() (Keras 3.15, without dtype's policy object)
  const auto auc = metrics::AUC().get_config();
  CHECK(auc == nlohmann::json{{"name", "auc"}, {"dtype", "float32"}, {"num_thresholds", 200}, {"curve", "ROC"},
                              {"summation_method", "interpolation"}, {"multi_label", false}, {"num_labels", nullptr},
                              {"label_weights", nullptr}, {"from_logits", false}});
  CHECK(metrics::Precision({.top_k = 2, .class_id = 1}).get_config() ==
        nlohmann::json{{"name", "precision"}, {"dtype", "float32"}, {"thresholds", nullptr}, {"top_k", 2}, {"class_id", 1}});
  CHECK(metrics::Recall({.thresholds = {0.3, 0.6}, .name = "r"}).get_config()["thresholds"] == nlohmann::json{0.3, 0.6});
  CHECK(metrics::MeanIoU(3).get_config()["dtype"] == "int64");
  CHECK(metrics::TopKCategoricalAccuracy(3).get_config()["k"] == 3);
  CHECK(metrics::AUC({.name = "roc"}).name() == "roc");
  CHECK(metrics::CategoricalAccuracy("acc_1").name() == "acc_1");
  CHECK(metrics::AUC().stateful());
  CHECK_FALSE(metrics::CategoricalAccuracy().stateful());
}

TEST_CASE("stateful metrics in fit: the running value after each batch, reset at every epoch") {
  auto [x, y] = binary_data(20);
  Model model = binary_model(3);
  model.compile(optimizers::SGD(0.0), "binary_crossentropy", {metrics::TruePositives(), metrics::AUC(), "accuracy"});
  const Tensor p = model.predict(x, {.verbose = 0});  // lr 0: the predictions never change
  std::vector<double> batch_tp, epoch_tp, epoch_auc;
  auto record = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaHooks{
      .on_epoch_end = [&](int, Logs& logs) { epoch_tp.push_back(logs.at("true_positives")); epoch_auc.push_back(logs.at("auc")); },
      .on_train_batch_end = [&](std::int64_t, const Logs& logs) { batch_tp.push_back(logs.at("true_positives")); }});
  model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {record}, .shuffle = false});
  const double tp = standalone(metrics::TruePositives(), y, p), auc = standalone(metrics::AUC(), y, p);
  REQUIRE(epoch_tp.size() == 2);
  CHECK(tp > 0);
  CHECK(epoch_tp[0] == tp);
  CHECK(epoch_tp[1] == tp);  // not 2 tp: the state starts again at each epoch
  CHECK(epoch_auc[0] == doctest::Approx(auc).epsilon(1e-9));
  CHECK(epoch_auc[1] == doctest::Approx(auc).epsilon(1e-9));
  // Batches of 8, 8, 4 per epoch: the counts so far within the epoch.
  REQUIRE(batch_tp.size() == 6);
  const double first8 = standalone(metrics::TruePositives(), first_rows(y, 8), first_rows(p, 8));
  const double first16 = standalone(metrics::TruePositives(), first_rows(y, 16), first_rows(p, 16));
  CHECK(batch_tp == std::vector<double>{first8, first16, tp, first8, first16, tp});
  CHECK(first8 < tp);

  // evaluate: the whole data, whatever the batch size, and the same again (reset).
  for (std::int64_t batch : {3, 20}) {
    auto logs = model.evaluate(x, y, {.batch_size = batch, .verbose = 0});
    CHECK(logs.at("true_positives") == tp);
    CHECK(logs.at("auc") == doctest::Approx(auc).epsilon(1e-9));
  }
  // Sample weights weigh the weighted_metrics' statistics, not the metrics' (Keras's CompileMetrics).
  std::vector<float> w;
  for (int i = 0; i < 20; ++i) w.push_back(static_cast<float>(1 + i % 3));
  const Tensor weights = floats({20}, w);
  auto weighted = metrics::TruePositives();
  weighted.update_state(y, p, weights);
  CHECK(weighted.result() != tp);
  CHECK(model.evaluate(x, y, {.batch_size = 6, .verbose = 0, .sample_weight = weights}).at("true_positives") == tp);
  model.compile(optimizers::SGD(0.0), "binary_crossentropy", {metrics::TruePositives(), metrics::AUC(), "accuracy"},
                {.weighted_metrics = {metrics::TruePositives()}});
  const Logs both = model.evaluate(x, y, {.batch_size = 6, .verbose = 0, .sample_weight = weights});
  CHECK(both.at("true_positives") == tp);
  CHECK(both.at("weighted_true_positives") == weighted.result());
  // Validation metrics: the validation data's own, from a fresh state.
  auto h = model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .validation_data = {{{x}, {y}}}, .shuffle = false});
  CHECK(h.history.at("val_true_positives") == std::vector<double>{tp, tp});
  CHECK(h.history.at("val_auc")[1] == doctest::Approx(auc).epsilon(1e-9));

  // train_on_batch / test_on_batch: that batch only (Keras resets the metrics first).
  auto logs = model.test_on_batch({x}, {y});
  CHECK(logs.at("true_positives") == tp);
  logs = model.train_on_batch({x}, {y});
  CHECK(logs.at("true_positives") == tp);
}

TEST_CASE("stateful metrics on towers (2 CPU devices) give one device's numbers") {
  auto [x, y] = binary_data(22);
  const std::vector<Metric> list = {metrics::AUC(), metrics::Precision(), metrics::Recall({.thresholds = {0.4}}),
                                    metrics::F1Score({.average = "micro", .threshold = 0.5}), "accuracy"};
  Model single = binary_model(5);
  single.compile(optimizers::SGD(0.1), "binary_crossentropy", list);
  Model inner = binary_model(5);
  Model towers = parallel::multi_gpu_model(inner, std::vector<std::string>{"cpu:0", "cpu:1"});
  towers.compile(optimizers::SGD(0.1), "binary_crossentropy", list);
  // Batches of 5 split 3 + 2 (the last, of 2, 1 + 1): the statistics add up to the whole batch's.
  auto one = single.evaluate(x, y, {.batch_size = 5, .verbose = 0});
  auto two = towers.evaluate(x, y, {.batch_size = 5, .verbose = 0});
  for (const char* name : {"loss", "auc", "precision", "recall", "f1_score", "accuracy"}) {
    CAPTURE(name);
    CHECK(two.at(name) == doctest::Approx(one.at(name)).epsilon(1e-6));
  }
  // And in fit, epoch after epoch (the weights stay equal too).
  auto h1 = single.fit(x, y, {.batch_size = 6, .epochs = 2, .verbose = 0, .shuffle = false});
  auto h2 = towers.fit(x, y, {.batch_size = 6, .epochs = 2, .verbose = 0, .shuffle = false});
  for (const char* name : {"auc", "precision", "recall"}) {
    CAPTURE(name);
    for (int e = 0; e < 2; ++e) CHECK(h2.history.at(name)[e] == doctest::Approx(h1.history.at(name)[e]).epsilon(1e-6));
  }
}

TEST_CASE("compile(metrics=) per output: a list for every output, a list per output, a map by output name") {
  set_random_seed(11);
  auto in = layers::Input({4}, {.name = "in"});
  auto h = layers::Dense(5, {.activation = "tanh", .name = "h"})(in);
  auto cls = layers::Dense(3, {.activation = "softmax", .name = "cls"})(h);
  auto bin = layers::Dense(1, {.activation = "sigmoid", .name = "bin"})(h);
  Model model({in}, {cls, bin}, "two");
  auto [x, yb] = binary_data(10);
  std::vector<float> hot(30, 0.0f);
  for (int i = 0; i < 10; ++i) hot[static_cast<std::size_t>(i * 3 + i % 3)] = 1.0f;
  const std::vector<Tensor> ys = {floats({10, 3}, hot), yb};
  const LossArg losses = {"categorical_crossentropy", "binary_crossentropy"};

  auto names = [&](const MetricsArg& m) {
    model.compile("sgd", losses, m);
    std::vector<std::string> out;
    const Logs logs = model.evaluate({x}, ys, {.verbose = 0});
    for (const auto& [k, v] : logs.entries()) out.push_back(k);
    return out;
  };
  CHECK(names({"accuracy", metrics::AUC()}) ==
        std::vector<std::string>{"loss", "cls_loss", "bin_loss", "cls_accuracy", "cls_auc", "bin_accuracy", "bin_auc"});
  CHECK(names(std::vector<std::vector<Metric>>{{metrics::CategoricalAccuracy()}, {metrics::Precision(), "mse"}}) ==
        std::vector<std::string>{"loss", "cls_loss", "bin_loss", "cls_categorical_accuracy", "bin_precision", "bin_mse"});
  CHECK(names(std::map<std::string, std::vector<Metric>>{{"bin", {metrics::AUC({.curve = "PR", .name = "pr"})}}}) ==
        std::vector<std::string>{"loss", "cls_loss", "bin_loss", "bin_pr"});
  // The per-output values are those of the output alone.
  model.compile("sgd", losses, std::map<std::string, std::vector<Metric>>{{"bin", {metrics::AUC()}}});
  const auto logs = model.evaluate({x}, ys, {.verbose = 0});
  const auto pred = model.predict(std::vector<Tensor>{x}, {.verbose = 0});
  CHECK(logs.at("bin_auc") == doctest::Approx(standalone(metrics::AUC(), yb, pred[1])).epsilon(1e-9));

  // Errors name the model, what was given and how to fix it.
  auto msg = message_of<ValueError>([&] {
    model.compile("sgd", losses, std::vector<std::vector<Metric>>{{"accuracy"}});
  });
  CHECK(contains(msg, "1 lists of metrics for 2 outputs"));
  msg = message_of<ValueError>([&] {
    model.compile("sgd", losses, std::map<std::string, std::vector<Metric>>{{"dense_9", {"accuracy"}}});
  });
  CHECK(contains(msg, "\"dense_9\", which is not an output"));
  CHECK(contains(msg, "cls, bin"));
}

TEST_CASE("stateful metrics in training_config: Keras's class names and configs, and back") {
  Model model = binary_model(9);
  model.compile("adam", "binary_crossentropy",
                {metrics::AUC({.num_thresholds = 50, .curve = "PR"}), metrics::Precision({.thresholds = {0.3}, .name = "p3"}),
                 "accuracy", metrics::F1Score({.average = "macro"})});
  const auto config = io::training_config(model);
  const auto& written = config.at("metrics");
  REQUIRE(written.size() == 4);
  CHECK(written[0]["class_name"] == "AUC");
  CHECK(written[0]["module"] == "keras.metrics");
  CHECK(written[0]["config"]["curve"] == "PR");
  CHECK(written[0]["config"]["num_thresholds"] == 50);
  CHECK(written[1]["config"]["name"] == "p3");
  CHECK(written[1]["config"]["thresholds"] == 0.3);
  CHECK(written[2] == "binary_accuracy");
  CHECK(written[3]["class_name"] == "F1Score");
  CHECK(config.at("tower_metric_names") == nlohmann::json{"auc", "p3", "accuracy", "f1_score"});

  Model again = binary_model(9);
  io::compile_from_config(again, config);
  const auto& metrics_back = again.compile_args().metrics;
  REQUIRE(metrics_back.size() == 4);
  CHECK(metrics_back[0].get_config() == model.compile_args().metrics[0].get_config());
  CHECK(metrics_back[1].name() == "p3");
  CHECK(metrics_back[3].class_name() == "F1Score");
  auto [x, y] = binary_data(12);
  auto a = model.evaluate(x, y, {.verbose = 0});
  auto b = again.evaluate(x, y, {.verbose = 0});
  CHECK(a.entries().size() == b.entries().size());
  for (const auto& [name, value] : a.entries()) CHECK(b.at(name) == doctest::Approx(value));

  // Keras 3's own form (no tower_metric_names): the objects by class.
  Model keras3 = binary_model(9);
  io::compile_from_config(keras3, {{"optimizer_config", config.at("optimizer_config")}, {"loss", "binary_crossentropy"},
                                   {"metrics", nlohmann::json::array({written[0], "accuracy"})}});
  REQUIRE(keras3.compile_args().metrics.size() == 2);
  CHECK(keras3.compile_args().metrics[0].class_name() == "AUC");

  // Per-output metrics go as Keras's {"output": [...]} (and back).
  set_random_seed(2);
  auto in = layers::Input({4});
  auto o1 = layers::Dense(1, {.activation = "sigmoid", .name = "o1"})(in);
  auto o2 = layers::Dense(1, {.activation = "sigmoid", .name = "o2"})(in);
  Model two({in}, {o1, o2});
  two.compile("sgd", "binary_crossentropy", std::map<std::string, std::vector<Metric>>{{"o2", {metrics::Recall()}}});
  const auto per_output = io::training_config(two);
  CHECK(per_output.at("metrics").at("o2")[0]["class_name"] == "Recall");
  CHECK_FALSE(per_output.at("metrics").contains("o1"));
  io::compile_from_config(two, per_output);
  CHECK(two.compile_args().metrics_arg.form() == MetricsArg::Form::by_output);
  CHECK(two.compile_args().metrics_arg.by_output().at("o2")[0].class_name() == "Recall");
}

TEST_CASE("stateful metrics: clear errors for bad arguments") {
  auto msg = message_of<ValueError>([] { metrics::AUC({.curve = "ROCK"}); });
  CHECK(contains(msg, "curve must be \"ROC\" or \"PR\", got \"ROCK\""));
  CHECK(contains(message_of<ValueError>([] { metrics::AUC({.summation_method = "trapezoid"}); }), "\"minoring\""));
  CHECK(contains(message_of<ValueError>([] { metrics::AUC({.num_thresholds = 1}); }), "num_thresholds must be an integer > 1"));
  CHECK(contains(message_of<ValueError>([] { metrics::AUC({.num_labels = 3}); }), "num_labels (3) needs multi_label = true"));
  auto labelled = metrics::AUC({.multi_label = true, .num_labels = 3});
  msg = message_of<ShapeError>([&] { labelled.update_state(floats({2, 2}, {1, 0, 0, 1}), floats({2, 2}, {0.4f, 0.6f, 0.1f, 0.2f})); });
  CHECK(contains(msg, "num_labels is 3 but y_pred has 2 labels"));
  msg = message_of<ValueError>([] { metrics::Precision({.thresholds = {0.5, 1.5}}); });
  CHECK(contains(msg, "Precision: threshold values must be in [0, 1], got 1.5"));
  CHECK(contains(message_of<ValueError>([] { metrics::Recall({.top_k = 0}); }), "top_k must be positive, got 0"));
  CHECK(contains(message_of<ValueError>([] { metrics::F1Score({.average = "mean"}); }), "\"micro\", \"macro\" or \"weighted\""));
  CHECK(contains(message_of<ValueError>([] { metrics::F1Score({.beta = 2.0}); }), "use FBetaScore"));
  CHECK(contains(message_of<ValueError>([] { metrics::FBetaScore({.beta = 0.0}); }), "beta must be > 0"));
  CHECK(contains(message_of<ValueError>([] { metrics::MeanIoU(0); }), "num_classes must be positive, got 0"));

  // Shapes, named by the metric.
  auto f1 = metrics::F1Score();
  msg = message_of<ShapeError>([&] { f1.update_state(floats({4}, {1, 0, 1, 0}), floats({4}, {0.1f, 0.2f, 0.3f, 0.4f})); });
  CHECK(contains(msg, "f1_score: y_true and y_pred must both be (batch, classes)"));
  auto precision = metrics::Precision({.class_id = 3});
  msg = message_of<ShapeError>([&] { precision.update_state(floats({1, 2}, {1, 0}), floats({1, 2}, {0.4f, 0.6f})); });
  CHECK(contains(msg, "class_id 3"));
  auto auc = metrics::AUC();
  msg = message_of<ShapeError>([&] { auc.update_state(floats({2, 2}, {1, 0, 1, 0}), floats({2, 1}, {0.4f, 0.6f})); });
  CHECK(contains(msg, "auc: y_true and y_pred must have the same shape"));
  CHECK(contains(message_of<ValueError>([] { metrics::AUC()(SymbolicTensor(), SymbolicTensor()); }), "stateful"));

  // A metric of several values cannot be a log: compile-time of the engine graph says so.
  Model model = binary_model(1);
  model.compile("sgd", "binary_crossentropy", {metrics::TruePositives({0.3, 0.6})});
  auto [x, y] = binary_data(4);
  msg = message_of<ValueError>([&] { model.evaluate(x, y, {.verbose = 0}); });
  CHECK(contains(msg, "\"true_positives\" (TruePositives) gives several values"));
  CHECK(contains(msg, "one threshold"));
}
