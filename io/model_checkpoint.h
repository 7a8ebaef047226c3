// ModelCheckpoint (keras.callbacks.ModelCheckpoint): saves the model or its weights during fit, every
// epoch or every N batches, optionally only when the monitored value improves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/layers/callbacks/callback.h"

namespace tower::callbacks {

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  int verbose = 0;  // 1: a line per save (or per skipped save with save_best_only)
  bool save_best_only = false;
  bool save_weights_only = false;  // save_weights() instead of save()
  std::string mode = "auto";       // "min", "max", or "auto" from the metric's name
  std::int64_t save_freq = 0;      // 0: at the end of every epoch (Keras's "epoch"); N: every N batches
  std::optional<double> initial_value_threshold;  // with save_best_only: the value to beat first
  bool allow_non_finite = false;   // save weights holding NaN or infinity instead of failing (Model::save)
};

// filepath may hold Python-style fields: {epoch} (1-based, as Keras), {batch} (1-based, with
// save_freq), and any log value, e.g. "ckpt-{epoch:02d}-{val_loss:.2f}.h5" (format specs as
// str.format). Every save is atomic: a failed save leaves the previous file as it was, and is an error.
// on_train_begin checks that the destination is writable (io::check_writable: the directory, a
// read-only file), so that a bad filepath fails before the first epoch, not after it.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  std::string writes_to() const override;

  // The best monitored value so far (save_best_only), and the path of the last file written.
  std::optional<double> best() const { return best_; }
  const std::string& last_saved() const { return last_saved_; }

 private:
  void save(int epoch, std::optional<std::int64_t> batch, const Logs& logs);

  std::string filepath_;
  ModelCheckpointOptions options_;
  bool higher_ = false;
  std::optional<double> best_;
  std::string last_saved_;
  int epoch_ = 0;
  std::int64_t batches_seen_ = 0;
  bool warned_ = false;
};

// "ckpt-{epoch:02d}-{val_loss:.2f}.h5" with epoch = 3 and logs {val_loss: 0.1234} -> "ckpt-03-0.12.h5".
// Fields missing from the logs, or specs that do not fit the value, throw ValueError naming them.
std::string format_checkpoint_path(const std::string& pattern, int epoch, std::optional<std::int64_t> batch,
                                   const Logs& logs);

}  // namespace tower::callbacks
