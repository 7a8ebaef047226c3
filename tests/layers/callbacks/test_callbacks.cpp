// Tests of Logs, Callback/History and layers/callbacks, driven by calling the hooks directly with
// fabricated logs. Expected texts and traces come from the real implementations, run by
// /work/venv-tf/bin/python with a fake clock and a fake model: tf_keras 2.21's ProgbarLogger (the
// tf.keras 2 bar) and Keras 3.15's EarlyStopping, ReduceLROnPlateau, LearningRateScheduler,
// TerminateOnNaN and CSVLogger.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/layers/callbacks/callbacks.h"
#include "tower/layers/core/dense.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/model.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::callbacks;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

Logs make_logs(const std::vector<std::pair<std::string, double>>& entries) {
  Logs logs;
  for (const auto& [k, v] : entries) logs.set(k, v);
  return logs;
}

Logs loss_acc(double loss, double accuracy) { return make_logs({{"loss", loss}, {"accuracy", accuracy}}); }

// Captures what is printed to a stream (std::cout by default) while it lives.
class Capture {
 public:
  explicit Capture(std::ostream& stream = std::cout) : stream_(stream), old_(stream.rdbuf(buffer_.rdbuf())) {}
  ~Capture() { stream_.rdbuf(old_); }
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::ostream& stream_;
  std::streambuf* old_;
};

// A bar printing into a string with a clock the test sets.
struct Bar {
  std::ostringstream out;
  double now = 0;
  std::shared_ptr<ProgbarLogger> logger;
  Bar(bool dynamic, int verbose, int epochs, std::int64_t steps) {
    logger = std::make_shared<ProgbarLogger>(
        ProgbarOptions{.stream = &out, .dynamic_display = dynamic, .clock = [this] { return now; }});
    logger->set_params({.epochs = epochs, .steps = steps, .verbose = verbose});
  }
};

// The fit of the Python script: 2 epochs of 5 steps (a slow first step, a throttled second one,
// tiny and zero values, negative validation loss).
void run_fit_script(Bar& bar, int epochs = 2) {
  auto& cb = *bar.logger;
  auto at = [&](double t) { bar.now = t; };
  cb.on_train_begin({});
  at(100.0), cb.on_epoch_begin(0, {});
  at(100.5), cb.on_train_batch_end(0, loss_acc(0.9, 0.5));
  at(100.52), cb.on_train_batch_end(1, loss_acc(0.8, 0.55));
  at(100.6), cb.on_train_batch_end(2, loss_acc(0.7, 0.6));
  at(100.7), cb.on_train_batch_end(3, loss_acc(0.65, 0.625));
  at(100.8), cb.on_train_batch_end(4, loss_acc(0.6, 0.65));
  Logs end0 = make_logs({{"loss", 0.6}, {"accuracy", 0.65}, {"val_loss", 0.55}, {"val_accuracy", 0.7}});
  at(101.0), cb.on_test_begin({}), cb.on_test_batch_end(0, loss_acc(0.1, 0.1)), cb.on_test_end(loss_acc(0.1, 0.1));
  cb.on_epoch_end(0, end0);
  if (epochs == 1) return;
  at(101.0), cb.on_epoch_begin(1, {});
  at(101.1), cb.on_train_batch_end(0, loss_acc(0.5, 0.7));
  at(101.2), cb.on_train_batch_end(1, loss_acc(0.00015, 0.0));
  at(101.3), cb.on_train_batch_end(2, loss_acc(0.4, 0.8));
  at(101.4), cb.on_train_batch_end(3, loss_acc(0.35, 0.85));
  at(103.45), cb.on_train_batch_end(4, loss_acc(0.3, 0.9));
  Logs end1 = make_logs({{"loss", 0.3}, {"accuracy", 0.9}, {"val_loss", -0.25}, {"val_accuracy", 0.0}});
  at(103.5), cb.on_epoch_end(1, end1);
  cb.on_train_end(end1);
}

const std::string kEpoch1Final =
    "5/5 [==============================] - 1s 125ms/step - loss: 0.6000 - accuracy: 0.6500 - val_loss: 0.5500 - "
    "val_accuracy: 0.7000\n";
const std::string kEpoch2Final =
    "5/5 [==============================] - 2s 600ms/step - loss: 0.3000 - accuracy: 0.9000 - val_loss: -0.2500 - "
    "val_accuracy: 0.0000e+00\n";

// A compiled one-weight model for the callbacks that use model(): its weights, stop flag, optimizer.
struct SmallModel {
  KerasTensor x = layers::Input({2});
  Model model{x, layers::Dense(1)(x)};
  SmallModel() { model.compile("sgd", "mse"); }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// ---- Logs, Callback, History ---------------------------------------------------------------------------

TEST_CASE("Logs keep Keras's order and replace in place") {
  Logs logs;
  CHECK(logs.empty());
  logs.set("loss", 0.5);
  logs.set("accuracy", 0.75);
  logs.set("loss", 0.25);
  REQUIRE(logs.size() == 2);
  CHECK(logs.entries()[0].first == "loss");
  CHECK(logs[0] == 0.25);
  CHECK(logs[1] == 0.75);
  CHECK(logs.at("accuracy") == 0.75);
  CHECK(logs.contains("loss"));
  CHECK_FALSE(logs.get("val_loss").has_value());
  auto msg = message_of<NotFoundError>([&] { logs.at("val_loss"); });
  CHECK(contains(msg, "\"val_loss\""));
  CHECK(contains(msg, "loss, accuracy"));
}

TEST_CASE("Callback::model() throws when unattached; History records every epoch") {
  History history;
  auto msg = message_of<ValueError>([&] { history.model(); });
  CHECK(contains(msg, "attached"));
  history.on_train_begin({});
  Logs l0 = loss_acc(0.5, 0.6), l1 = loss_acc(0.4, 0.7);
  history.on_epoch_end(0, l0);
  history.on_epoch_end(1, l1);
  CHECK(history.epoch == std::vector<int>{0, 1});
  CHECK(history.history.at("loss") == std::vector<double>{0.5, 0.4});
  CHECK(history.history.at("accuracy") == std::vector<double>{0.6, 0.7});
}

// ---- ProgbarLogger -------------------------------------------------------------------------------------

TEST_CASE("ProgbarLogger: Keras's number and time texts") {
  // tf_keras Progbar._format_time(t, "step") for t = 0, 0.0005, 0.004, 0.9996, 2.4, 61
  CHECK(ProgbarLogger::format_time(0, "step") == " 0s/step");
  CHECK(ProgbarLogger::format_time(0.0005, "step") == " 500us/step");
  CHECK(ProgbarLogger::format_time(0.004, "step") == " 4ms/step");
  CHECK(ProgbarLogger::format_time(0.9996, "step") == " 1000ms/step");
  CHECK(ProgbarLogger::format_time(2.4, "epoch") == " 2s/epoch");
  CHECK(ProgbarLogger::format_time(61, "step") == " 61s/step");
  CHECK(ProgbarLogger::format_value(0.295) == "0.2950");
  CHECK(ProgbarLogger::format_value(-0.25) == "-0.2500");
  CHECK(ProgbarLogger::format_value(0.00015) == "1.5000e-04");
  CHECK(ProgbarLogger::format_value(0.0) == "0.0000e+00");
  CHECK(ProgbarLogger::format_value(12345.678) == "12345.6780");
  CHECK(ProgbarLogger::format_eta(59.9) == "59s");
  CHECK(ProgbarLogger::format_eta(1874) == "31:14");
  CHECK(ProgbarLogger::format_eta(3746) == "1:02:26");
}

TEST_CASE("ProgbarLogger: verbose 1 on a terminal redraws the bar as tf.keras 2") {
  Bar bar(/*dynamic=*/true, 1, 2, 5);
  run_fit_script(bar);
  // tf_keras's output for the same script, its "\b" runs removed (each redraw starts with "\r").
  const std::string expected =
      "Epoch 1/2\n"
      "\r1/5 [=====>........................] - ETA: 2s - loss: 0.9000 - accuracy: 0.5000"
      "\r3/5 [=================>............] - ETA: 0s - loss: 0.7000 - accuracy: 0.6000"
      "\r4/5 [=======================>......] - ETA: 0s - loss: 0.6500 - accuracy: 0.6250"
      "\r5/5 [==============================] - ETA: 0s - loss: 0.6000 - accuracy: 0.6500"
      "\r" +
      kEpoch1Final +
      "Epoch 2/2\n"
      "\r1/5 [=====>........................] - ETA: 0s - loss: 0.5000 - accuracy: 0.7000"
      "\r2/5 [===========>..................] - ETA: 0s - loss: 1.5000e-04 - accuracy: 0.0000e+00"
      "\r3/5 [=================>............] - ETA: 0s - loss: 0.4000 - accuracy: 0.8000        "
      "\r4/5 [=======================>......] - ETA: 0s - loss: 0.3500 - accuracy: 0.8500"
      "\r5/5 [==============================] - ETA: 0s - loss: 0.3000 - accuracy: 0.9000"
      "\r" +
      kEpoch2Final;
  CHECK(bar.out.str() == expected);
}

TEST_CASE("ProgbarLogger: verbose 1 into a file prints each epoch's final line") {
  Bar bar(/*dynamic=*/false, 1, 2, 5);
  run_fit_script(bar);
  CHECK(bar.out.str() == "Epoch 1/2\n" + kEpoch1Final + "Epoch 2/2\n" + kEpoch2Final);
  Bar single(false, 1, 1, 5);  // one epoch: no "Epoch 1/1" line
  run_fit_script(single, 1);
  CHECK(single.out.str() == kEpoch1Final);
}

TEST_CASE("ProgbarLogger: verbose 2 prints one line per epoch") {
  Bar bar(/*dynamic=*/false, 2, 2, 5);
  run_fit_script(bar);
  // tf_keras's verbose-2 branch formats negative values with %.4e (it tests v > 1e-3).
  CHECK(bar.out.str() ==
        "Epoch 1/2\n"
        "5/5 - 1s - loss: 0.6000 - accuracy: 0.6500 - val_loss: 0.5500 - val_accuracy: 0.7000 - 1s/epoch - 200ms/step\n"
        "Epoch 2/2\n"
        "5/5 - 2s - loss: 0.3000 - accuracy: 0.9000 - val_loss: -2.5000e-01 - val_accuracy: 0.0000e+00 - 2s/epoch - "
        "500ms/step\n");
}

TEST_CASE("ProgbarLogger: evaluate's bar, and ETA in minutes and hours") {
  auto run_evaluate = [](Bar& bar) {
    auto& cb = *bar.logger;
    bar.now = 10.0, cb.on_test_begin({});
    bar.now = 10.002, cb.on_test_batch_end(0, loss_acc(0.3, 0.9));
    bar.now = 10.004, cb.on_test_batch_end(1, loss_acc(0.25, 0.95));
    bar.now = 10.006, cb.on_test_batch_end(2, loss_acc(0.2, 1.0));
    bar.now = 10.007, cb.on_test_end(loss_acc(0.2, 1.0));
  };
  const std::string final_line =
      "3/3 [==============================] - 0s 2ms/step - loss: 0.2000 - accuracy: 1.0000\n";
  Bar live(true, 1, 1, 3);
  run_evaluate(live);
  CHECK(live.out.str() ==
        "\r1/3 [=========>....................] - ETA: 0s - loss: 0.3000 - accuracy: 0.9000\r" + final_line);
  Bar file(false, 1, 1, 3);
  run_evaluate(file);
  CHECK(file.out.str() == final_line);
  Bar line(false, 2, 1, 3);
  run_evaluate(line);
  CHECK(line.out.str() == "3/3 - 0s - loss: 0.2000 - accuracy: 1.0000 - 7ms/epoch - 2ms/step\n");

  Bar slow(true, 1, 3, 1875);
  auto& cb = *slow.logger;
  cb.on_train_begin({});
  slow.now = 0, cb.on_epoch_begin(0, {});
  slow.now = 1, cb.on_train_batch_end(0, loss_acc(2.5, 0.1));
  slow.now = 3, cb.on_train_batch_end(1, loss_acc(2.4, 0.1));
  Logs end = loss_acc(2.0, 0.2);
  slow.now = 4000, cb.on_epoch_end(0, end);
  CHECK(slow.out.str() ==
        "Epoch 1/3\n"
        "\r   1/1875 [..............................] - ETA: 31:14 - loss: 2.5000 - accuracy: 0.1000"
        "\r   2/1875 [..............................] - ETA: 1:02:26 - loss: 2.4000 - accuracy: 0.1000"
        "\r1875/1875 [==============================] - 4000s 2s/step - loss: 2.0000 - accuracy: 0.2000\n");
}

TEST_CASE("ProgbarLogger: silent validation inside fit, verbose 0, predict") {
  Bar quiet(false, 0, 2, 5);
  run_fit_script(quiet);
  CHECK(quiet.out.str().empty());
  Bar predict(false, 1, 1, 2);
  predict.now = 5, predict.logger->on_predict_begin({});
  predict.now = 5.5, predict.logger->on_predict_batch_end(0, {});
  predict.now = 6, predict.logger->on_predict_batch_end(1, {});
  predict.now = 6.2, predict.logger->on_predict_end({});
  CHECK(predict.out.str() == "2/2 [==============================] - 1s 700ms/step\n");
}

// ---- python_repr ------------------------------------------------------------------------------------------

TEST_CASE("python_repr prints floats as Python's repr") {
  CHECK(python_repr(0.1) == "0.1");
  CHECK(python_repr(100.0) == "100.0");
  CHECK(python_repr(1e-05) == "1e-05");
  CHECK(python_repr(1e-4) == "0.0001");
  CHECK(python_repr(1e16) == "1e+16");
  CHECK(python_repr(1e15) == "1000000000000000.0");
  CHECK(python_repr(123456789012345680.0) == "1.2345678901234568e+17");
  CHECK(python_repr(-2.5) == "-2.5");
  CHECK(python_repr(static_cast<double>(0.1f) * 0.1) == "0.010000000149011612");
  CHECK(python_repr(std::nan("")) == "nan");
  CHECK(python_repr(-std::numeric_limits<double>::infinity()) == "-inf");
}

// ---- CSVLogger ---------------------------------------------------------------------------------------------

TEST_CASE("CSVLogger writes Keras's file") {
  const auto path = (std::filesystem::temp_directory_path() / "tower_test_csv_logger.csv").string();
  std::filesystem::remove(path);
  {
    CSVLogger csv(path);
    csv.on_train_begin({});
    Logs e0 = make_logs({{"loss", static_cast<double>(0.295f)}, {"accuracy", 0.5}});
    Logs e1 = make_logs({{"loss", 1e-05}, {"accuracy", 100.0}, {"val_loss", 2.0}});
    csv.on_epoch_end(0, e0);
    csv.on_epoch_end(1, e1);
    csv.on_train_end({});
  }
  // keras.callbacks.CSVLogger(f) with the same logs
  const std::string first =
      "epoch,accuracy,loss,val_accuracy,val_loss\r\n0,0.5,0.29499998688697815,NA,NA\r\n1,100.0,1e-05,NA,2.0\r\n";
  CHECK(read_file(path) == first);
  {
    CSVLogger csv(path, {.separator = ";", .append = true});  // appends without a second header
    csv.on_train_begin({});
    Logs e0 = make_logs({{"val_loss", 0.25}, {"loss", std::nan("")}, {"accuracy", static_cast<double>(0.1f)}});
    csv.on_epoch_end(0, e0);
    csv.on_train_end({});
  }
  CHECK(read_file(path) == first + "0;0.10000000149011612;nan;0.25\r\n");
  {
    CSVLogger csv(path);  // not appending: a new file
    csv.on_train_begin({});
    Logs e0 = make_logs({{"loss", 0.5}});
    csv.on_epoch_end(0, e0);
    csv.on_train_end({});
  }
  CHECK(read_file(path) == "epoch,loss,val_loss\r\n0,0.5,NA\r\n");
  std::filesystem::remove(path);

  auto msg = message_of<Error>([] {
    CSVLogger bad("/nonexistent_dir_tower/log.csv");
    bad.on_train_begin({});
  });
  CHECK(contains(msg, "/nonexistent_dir_tower/log.csv"));
}

// ---- LambdaCallback, TerminateOnNaN --------------------------------------------------------------------------

TEST_CASE("LambdaCallback calls the functions it was given") {
  std::vector<std::string> calls;
  LambdaCallback cb({.on_train_begin = [&](const Logs&) { calls.push_back("train_begin"); },
                     .on_epoch_end =
                         [&](int epoch, Logs& logs) {
                           logs.set("extra", 1.0);
                           calls.push_back("epoch_end " + std::to_string(epoch));
                         },
                     .on_train_batch_end =
                         [&](std::int64_t batch, const Logs& logs) {
                           calls.push_back("batch_end " + std::to_string(batch) + " " +
                                           std::to_string(logs.at("loss")));
                         }});
  cb.on_train_begin({});
  cb.on_train_batch_end(3, loss_acc(0.5, 0.5));
  cb.on_epoch_begin(0, {});  // no function given: nothing happens
  Logs logs;
  cb.on_epoch_end(2, logs);
  CHECK(calls == std::vector<std::string>{"train_begin", "batch_end 3 0.500000", "epoch_end 2"});
  CHECK(logs.at("extra") == 1.0);
}

TEST_CASE("TerminateOnNaN stops on a NaN or infinite loss") {
  SmallModel small;
  TerminateOnNaN cb;
  cb.set_model(&small.model);
  {
    Capture capture;
    cb.on_train_batch_end(2, loss_acc(0.5, 0.5));
    CHECK_FALSE(small.model.stop_training());
    cb.on_train_batch_end(3, make_logs({{"loss", std::nan("")}}));
    CHECK(capture.text() == "Batch 3: Invalid loss, terminating training\n");
  }
  CHECK(small.model.stop_training());
  TerminateOnNaN strict(/*raise_error=*/true);
  strict.set_model(&small.model);
  auto msg = message_of<Error>([&] {
    strict.on_train_batch_end(4, make_logs({{"loss", std::numeric_limits<double>::infinity()}}));
  });
  CHECK(msg == "NaN or Inf loss encountered at batch 4. Loss value: inf. Terminating training immediately.");
}

// ---- EarlyStopping -------------------------------------------------------------------------------------------

namespace {

struct Trace {
  std::vector<std::pair<int, bool>> steps;  // (wait, stop_training) after each epoch
  std::string printed;
  double weight = 0;  // the kernel's first element after on_train_end
};

// Runs EarlyStopping over `values` of `key`; before each epoch the model's weights are set to the
// epoch number, so restored weights tell which epoch they came from.
Trace run_early_stopping(EarlyStopping& cb, const std::vector<double>& values, const std::string& key = "val_loss") {
  SmallModel small;
  auto& m = small.model;
  cb.set_model(&m);
  Trace trace;
  Capture capture;
  cb.on_train_begin({});
  Logs logs;
  for (std::size_t e = 0; e < values.size(); ++e) {
    auto weights = m.get_weights();
    for (auto& w : weights) w = Tensor::full(w.shape(), static_cast<double>(e), w.dtype());
    m.set_weights(weights);
    logs = make_logs({{"loss", 1.0}, {key, values[e]}});
    cb.on_epoch_end(static_cast<int>(e), logs);
    trace.steps.emplace_back(cb.wait(), m.stop_training());
    if (m.stop_training()) break;
  }
  cb.on_train_end(logs);
  trace.printed = capture.text();
  trace.weight = m.get_weights()[0].to_vector<float>()[0];
  return trace;
}

using Steps = std::vector<std::pair<int, bool>>;

}  // namespace

TEST_CASE("EarlyStopping follows Keras 3") {
  // Each trace: keras.callbacks.EarlyStopping(**options) on a fake model, same values.
  SUBCASE("patience") {
    EarlyStopping cb({.patience = 2, .verbose = 1});
    auto t = run_early_stopping(cb, {1.0, 0.8, 0.85, 0.9, 0.7});
    CHECK(t.steps == Steps{{0, false}, {0, false}, {1, false}, {2, true}});
    CHECK(cb.stopped_epoch() == 3);
    CHECK(cb.best() == 0.8);
    CHECK(cb.best_epoch() == 1);
    CHECK(t.printed == "Epoch 4: early stopping\n");
    CHECK(t.weight == 3.0);  // not restored
  }
  SUBCASE("min_delta") {
    EarlyStopping cb({.min_delta = 0.1, .patience = 2});
    auto t = run_early_stopping(cb, {1.0, 0.95, 0.85, 0.8, 0.79});
    CHECK(t.steps == Steps{{0, false}, {1, false}, {0, false}, {1, false}, {2, true}});
    CHECK(cb.stopped_epoch() == 4);
    CHECK(cb.best() == 0.85);
    CHECK(t.printed.empty());
  }
  SUBCASE("baseline, mode max") {
    EarlyStopping cb({.monitor = "val_accuracy", .patience = 2, .mode = "max", .baseline = 0.9});
    auto t = run_early_stopping(cb, {0.5, 0.6, 0.7, 0.95, 0.9, 0.91, 0.92}, "val_accuracy");
    CHECK(t.steps == Steps{{1, false}, {2, false}, {3, false}, {0, false}, {1, false}, {2, true}});
    CHECK(cb.stopped_epoch() == 5);
    EarlyStopping cb2({.monitor = "val_accuracy", .patience = 2, .mode = "max", .baseline = 0.9});
    auto t2 = run_early_stopping(cb2, {0.5, 0.6, 0.55, 0.58}, "val_accuracy");
    CHECK(t2.steps == Steps{{1, false}, {2, false}, {3, true}});
    CHECK(cb2.best() == 0.6);
  }
  SUBCASE("auto mode takes accuracies as higher-is-better") {
    EarlyStopping cb({.monitor = "val_accuracy", .patience = 2, .baseline = 0.9});
    auto t = run_early_stopping(cb, {0.5, 0.6, 0.55, 0.58}, "val_accuracy");
    CHECK(t.steps == Steps{{1, false}, {2, false}, {3, true}});
  }
  SUBCASE("restore_best_weights") {
    EarlyStopping cb({.patience = 1, .verbose = 1, .restore_best_weights = true});
    auto t = run_early_stopping(cb, {1.0, 0.5, 0.7, 0.8});
    CHECK(t.steps == Steps{{0, false}, {0, false}, {1, true}});
    CHECK(t.printed == "Epoch 3: early stopping\nRestoring model weights from the end of the best epoch: 2.\n");
    CHECK(t.weight == 1.0);  // the weights of epoch index 1
  }
  SUBCASE("start_from_epoch, patience 0") {
    EarlyStopping cb({.patience = 0, .start_from_epoch = 2});
    auto t = run_early_stopping(cb, {1.0, 2.0, 3.0, 2.5, 2.6});
    CHECK(t.steps == Steps{{0, false}, {0, false}, {0, false}, {0, false}, {1, true}});
    CHECK(cb.best() == 2.5);
    EarlyStopping plain;
    auto t2 = run_early_stopping(plain, {1.0, 1.0});
    CHECK(t2.steps == Steps{{0, false}, {1, true}});
  }
  SUBCASE("a missing monitor never stops") {
    EarlyStopping cb({.monitor = "val_auc", .mode = "max"});
    Capture warning(std::cerr);
    auto t = run_early_stopping(cb, {1.0, 0.5, 0.2});
    CHECK(t.steps == Steps{{0, false}, {0, false}, {0, false}});
    // Keras's warning, once.
    CHECK(warning.text() ==
          "WARNING: Early stopping conditioned on metric `val_auc` which is not available. Available metrics are: "
          "loss,val_loss\n");
  }
  SUBCASE("bad arguments") {
    CHECK(contains(message_of<ValueError>([] { EarlyStopping({.mode = "maximum"}); }), "\"maximum\""));
    EarlyStopping unknown({.monitor = "val_auc"});
    auto msg = message_of<ValueError>([&] {
      Logs logs = make_logs({{"val_auc", 0.5}});
      unknown.on_epoch_end(0, logs);
    });
    CHECK(contains(msg, "val_auc"));
    CHECK(contains(msg, "mode"));
  }
}

// ---- ReduceLROnPlateau, LearningRateScheduler ------------------------------------------------------------

TEST_CASE("ReduceLROnPlateau follows Keras 3") {
  SmallModel small;  // sgd: learning rate 0.01
  auto run = [&](ReduceLROnPlateau& cb, const std::vector<double>& values) {
    cb.set_model(&small.model);
    cb.on_train_begin({});
    std::vector<std::tuple<double, double, int, int>> out;  // (logged lr, lr after, wait, cooldown)
    for (std::size_t e = 0; e < values.size(); ++e) {
      Logs logs = make_logs({{"val_loss", values[e]}});
      cb.on_epoch_end(static_cast<int>(e), logs);
      out.emplace_back(logs.at("learning_rate"), static_cast<float>(small.model.optimizer().current_learning_rate()),
                       cb.wait(), cb.cooldown_counter());
    }
    return out;
  };
  SUBCASE("factor, patience, cooldown, min_lr") {
    ReduceLROnPlateau cb({.factor = 0.5, .patience = 2, .verbose = 1, .cooldown = 1, .min_lr = 0.002});
    Capture capture;
    auto trace = run(cb, {1.0, 1.0, 1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.99, 1.0, 1.1, 1.2});
    // keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_lr=0.002, verbose=1)
    const double a = 0.009999999776482582, b = 0.004999999888241291, c = 0.0024999999441206455,
                 d = 0.0020000000949949026;
    const std::vector<std::tuple<double, double, int, int>> expected = {
        {a, a, 0, 0}, {a, a, 1, 0}, {a, b, 0, 1}, {b, b, 0, 0}, {b, b, 1, 0}, {b, c, 0, 1},
        {c, c, 1, 0}, {c, d, 0, 1}, {d, d, 1, 0}, {d, d, 2, 0}, {d, d, 3, 0}, {d, d, 4, 0}};
    CHECK(trace == expected);
    CHECK(capture.text() ==
          "\nEpoch 3: ReduceLROnPlateau reducing learning rate to 0.004999999888241291.\n"
          "\nEpoch 6: ReduceLROnPlateau reducing learning rate to 0.0024999999441206455.\n"
          "\nEpoch 8: ReduceLROnPlateau reducing learning rate to 0.002.\n");
  }
  SUBCASE("min_delta") {
    ReduceLROnPlateau cb({.patience = 1, .min_delta = 0.05});
    auto trace = run(cb, {1.0, 0.97, 0.9, 0.89});
    CHECK(std::get<0>(trace[1]) == 0.009999999776482582);
    CHECK(std::get<1>(trace[1]) == static_cast<float>(0.0009999999310821295));
    CHECK(std::get<1>(trace[2]) == static_cast<float>(0.0009999999310821295));
    CHECK(std::get<1>(trace[3]) == static_cast<float>(9.99999901978299e-05));
  }
  SUBCASE("bad factor") {
    CHECK(contains(message_of<ValueError>([] { ReduceLROnPlateau({.factor = 1.5}); }), "factor"));
  }
}

TEST_CASE("LearningRateScheduler sets the rate each epoch") {
  SmallModel small;
  LearningRateScheduler cb([](int epoch, double lr) { return epoch < 1 ? lr : lr * 0.5; }, /*verbose=*/1);
  cb.set_model(&small.model);
  Capture capture;
  std::vector<double> logged;
  for (int e = 0; e < 3; ++e) {
    cb.on_epoch_begin(e, {});
    Logs logs = make_logs({{"loss", 1.0}});
    cb.on_epoch_end(e, logs);
    logged.push_back(logs.at("learning_rate"));
  }
  // keras.callbacks.LearningRateScheduler(sched, verbose=1) with a float32 learning rate of 0.01
  CHECK(logged == std::vector<double>{0.009999999776482582, 0.004999999888241291, 0.0024999999441206455});
  CHECK(capture.text() ==
        "\nEpoch 1: LearningRateScheduler setting learning rate to 0.009999999776482582.\n"
        "\nEpoch 2: LearningRateScheduler setting learning rate to 0.004999999888241291.\n"
        "\nEpoch 3: LearningRateScheduler setting learning rate to 0.0024999999441206455.\n");
  LearningRateScheduler bad([](int, double) { return std::nan(""); });
  bad.set_model(&small.model);
  CHECK(contains(message_of<ValueError>([&] { bad.on_epoch_begin(0, {}); }), "finite"));
}
