// Keras's built-in callbacks (keras.callbacks): ProgbarLogger (the tf.keras 2 progress bar),
// EarlyStopping, ReduceLROnPlateau, LearningRateScheduler, TerminateOnNaN, CSVLogger, LambdaCallback.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tower/core/tensor.h"
#include "tower/layers/callbacks/callback.h"

namespace tower::callbacks {

// ---- ProgbarLogger ---------------------------------------------------------------------------------

struct ProgbarOptions {
  std::ostream* stream = nullptr;       // where to print; nullptr = std::cout
  std::optional<bool> dynamic_display;  // redraw the bar in place with '\r'; default: the stream is a terminal
  std::function<double()> clock;        // seconds, for the times shown; default: a steady clock
  double interval = 0.05;               // minimum seconds between redraws (verbose 1)
  int width = 30;                       // characters inside [ ]
};

// Prints fit's and evaluate's progress as tf.keras 2 does, counting steps. fit adds one when
// verbose != 0. verbose 1 (params): `Epoch 1/12`, then
//   `469/469 [==============================] - 2s 4ms/step - loss: 0.2950 - accuracy: 0.9121`
// redrawn with '\r' on a terminal (with `- ETA: 1s` while running); elsewhere only the final line.
// verbose 2: `469/469 - 2s - loss: 0.2950 - accuracy: 0.9121 - 2s/epoch - 4ms/step` per epoch.
class ProgbarLogger : public Callback {
 public:
  explicit ProgbarLogger(ProgbarOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

  // Keras's duration text: " 2s/epoch", " 4ms/step", " 950us/step" (leading space included).
  static std::string format_time(double seconds, const std::string& unit);
  // Keras's value text: "%.4f" when |v| > 1e-3, else "%.4e" (0 prints as 0.0000e+00).
  static std::string format_value(double value);
  // The ETA text: "5s", "1:05", "1:01:05".
  static std::string format_eta(double seconds);

 private:
  void start();  // a new bar (each epoch, evaluate, predict)
  void update(std::int64_t current, const Logs& logs, bool finalize);
  double estimate_step_duration(std::int64_t current, double now);
  int verbose() const { return params_.verbose; }

  ProgbarOptions options_;
  std::ostream* out_;
  bool dynamic_;
  bool in_fit_ = false;  // validation inside fit is silent
  bool active_ = false;
  std::int64_t target_ = 0, seen_ = 0;
  double start_ = 0, epoch_start_ = 0;
  std::optional<double> last_update_, time_after_first_step_, epoch_end_;
  std::size_t total_width_ = 0;
};

// ---- helpers of the callbacks that monitor a value (EarlyStopping, ModelCheckpoint, ...) ----------------

// Throws unless mode is "auto", "min" or "max".
void check_mode(const char* who, const std::string& mode);
// Keras 3's "auto" mode takes the metric's direction: losses and errors go down, accuracies up.
bool higher_is_better(const char* who, const std::string& monitor, const std::string& mode);
// Keras's MonitorCallback._is_improvement, min_delta taken towards "better".
bool is_improvement(double current, std::optional<double> reference, bool higher, double min_delta);
// Keras's warning (printed once per `warned`) when the monitored value is missing from the logs.
void warn_missing(bool& warned, const char* what, const std::string& monitor, const Logs& logs);

// ---- EarlyStopping and ReduceLROnPlateau ------------------------------------------------------------

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;  // smaller changes do not count as improvement
  int patience = 0;        // epochs without improvement before stopping
  int verbose = 0;
  std::string mode = "auto";  // "min", "max", or "auto": from the metric (losses go down, accuracies up)
  std::optional<double> baseline;
  bool restore_best_weights = false;
  int start_from_epoch = 0;  // warm-up epochs that are not monitored
};

// Stops training when the monitored value stops improving (Keras 3's rules).
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  int wait() const { return wait_; }
  int stopped_epoch() const { return stopped_epoch_; }  // 0 when training was not stopped
  int best_epoch() const { return best_epoch_; }
  std::optional<double> best() const { return best_; }

 private:
  EarlyStoppingOptions options_;
  std::optional<bool> higher_is_better_;  // resolved on the first epoch, as Keras
  int wait_ = 0, stopped_epoch_ = 0, best_epoch_ = 0;
  std::optional<double> best_;
  std::vector<Tensor> best_weights_;
  bool warned_ = false;
};

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;  // new_lr = lr * factor; must be < 1
  int patience = 10;
  int verbose = 0;
  std::string mode = "auto";
  double min_delta = 1e-4;
  int cooldown = 0;  // epochs to wait after a reduction before counting again
  double min_lr = 0.0;
};

// Multiplies the learning rate by `factor` when the monitored value has not improved for `patience`
// epochs; adds "learning_rate" to the epoch logs (Keras 3).
class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;

  int wait() const { return wait_; }
  int cooldown_counter() const { return cooldown_counter_; }
  std::optional<double> best() const { return best_; }

 private:
  ReduceLROnPlateauOptions options_;
  std::optional<bool> higher_is_better_;
  int wait_ = 0, cooldown_counter_ = 0;
  std::optional<double> best_;
  bool warned_ = false;
};

// ---- LearningRateScheduler, TerminateOnNaN -------------------------------------------------------------

// Sets the learning rate at each epoch's start to schedule(epoch, current lr); adds "learning_rate"
// to the epoch logs.
class LearningRateScheduler : public Callback {
 public:
  using Schedule = std::function<double(int epoch, double learning_rate)>;
  explicit LearningRateScheduler(Schedule schedule, int verbose = 0);
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;

 private:
  Schedule schedule_;
  int verbose_;
};

// Stops training after a batch whose "loss" is NaN or infinite (or throws, with raise_error).
class TerminateOnNaN : public Callback {
 public:
  explicit TerminateOnNaN(bool raise_error = false) : raise_error_(raise_error) {}
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;

 private:
  bool raise_error_;
};

// ---- CSVLogger ---------------------------------------------------------------------------------------

struct CSVLoggerOptions {
  std::string separator = ",";
  bool append = false;  // append to an existing file (no second header)
};

// Writes one row per epoch: `epoch,accuracy,loss,val_accuracy,val_loss` (keys sorted, val_ columns
// added when the first epoch has none), values as Python prints them, CRLF line ends as Python's csv.
class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string filename, CSVLoggerOptions options = {});
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;

 private:
  std::string filename_;
  CSVLoggerOptions options_;
  std::ofstream file_;
  bool header_ = true;
  std::optional<std::vector<std::string>> keys_;
};

// ---- LambdaCallback -----------------------------------------------------------------------------------

// A callback from functions: `LambdaCallback({.on_epoch_end = [](int epoch, Logs& logs) {...}})`.
struct LambdaHooks {
  std::function<void(const Logs&)> on_train_begin, on_train_end;
  std::function<void(int, const Logs&)> on_epoch_begin;
  std::function<void(int, Logs&)> on_epoch_end;
  std::function<void(std::int64_t, const Logs&)> on_train_batch_begin, on_train_batch_end;
  std::function<void(const Logs&)> on_test_begin, on_test_end;
  std::function<void(std::int64_t, const Logs&)> on_test_batch_begin, on_test_batch_end;
  std::function<void(const Logs&)> on_predict_begin, on_predict_end;
  std::function<void(std::int64_t, const Logs&)> on_predict_batch_begin, on_predict_batch_end;
};

class LambdaCallback : public Callback {
 public:
  explicit LambdaCallback(LambdaHooks hooks) : hooks_(std::move(hooks)) {}
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_test_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_test_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;
  void on_predict_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_predict_batch_end(std::int64_t batch, const Logs& logs) override;

 private:
  LambdaHooks hooks_;
};

// Python's repr() of a float ("0.1", "100.0", "1e-05", "nan"): how Keras prints values in messages
// and CSV files.
std::string python_repr(double value);

}  // namespace tower::callbacks
