// TensorBoard (keras.callbacks.TensorBoard): epoch and batch scalars, weight histograms and the Keras
// model graph, written as TensorFlow event files (io/tfevents) that TensorBoard reads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tower/layers/callbacks/callback.h"

namespace tower::io {
class EventWriter;
}

namespace tower::callbacks {

// Keras's update_freq: "epoch", "batch" (= 1) or a number of batches.
struct UpdateFreq {
  UpdateFreq(const char* text);  // NOLINT(google-explicit-constructor): `.update_freq = "epoch"`
  UpdateFreq(const std::string& text);
  UpdateFreq(std::int64_t batches);  // NOLINT: `.update_freq = 100`
  UpdateFreq(int batches) : UpdateFreq(static_cast<std::int64_t>(batches)) {}
  std::int64_t batches = 0;  // 0 = every epoch only
};

// Keras 3's arguments and defaults. write_images, profile_batch and embeddings_freq are not supported
// (ValueError when set).
struct TensorBoardOptions {
  std::string log_dir = "logs";
  int histogram_freq = 0;  // epochs between weight histograms; 0 = none
  bool write_graph = true;  // the "keras" model-config summary (TensorBoard's conceptual graph)
  bool write_images = false;
  bool write_steps_per_second = false;
  UpdateFreq update_freq = "epoch";
  int profile_batch = 0;
  int embeddings_freq = 0;
};

// Writes <log_dir>/train and <log_dir>/validation event files as Keras 3 does:
//  - per epoch (step = epoch): train "epoch_<name>" for every non-val_ log, "epoch_learning_rate", and
//    "epoch_steps_per_second" with write_steps_per_second; validation "epoch_<name>" for val_<name>;
//  - after each evaluation (fit's validation, at epoch end; evaluate with this callback): validation
//    "evaluation_<name>_vs_iterations" at step = optimizer iterations;
//  - with an integer update_freq N: train "batch_<name>" (and "batch_steps_per_second") at global
//    batches N, 2N, ... (1-based);
//  - every histogram_freq epochs: train "<model>/<layer>/<weight>/histogram" (30 buckets) at step epoch;
//  - with write_graph: train "keras" at step 0 (the model's to_json()).
// Files are flushed at each epoch end and closed at train end.
class TensorBoard : public Callback {
 public:
  explicit TensorBoard(TensorBoardOptions options = {});
  ~TensorBoard() override;

  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;

  const TensorBoardOptions& options() const { return options_; }

 private:
  io::EventWriter& train_writer();
  io::EventWriter& val_writer();
  void log_weights(int epoch);

  TensorBoardOptions options_;
  std::unique_ptr<io::EventWriter> train_, val_;
  std::int64_t global_train_batch_ = 0;
  bool evaluated_this_epoch_ = false;  // on_test_end ran (validation with callbacks) since epoch begin
  std::int64_t epoch_start_iterations_ = 0;
  double epoch_start_ = 0, batch_start_ = 0;
};

}  // namespace tower::callbacks
