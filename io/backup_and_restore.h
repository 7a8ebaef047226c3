// BackupAndRestore (keras.callbacks.BackupAndRestore): backs up the training state during fit, so a
// fit interrupted by a crash, a kill or a preemption resumes where it stopped when run again.
#pragma once

#include <cstdint>
#include <string>

#include "tower/layers/callbacks/callback.h"

namespace tower::callbacks {

struct BackupAndRestoreOptions {
  std::int64_t save_freq = 0;    // 0: at the end of every epoch (Keras's "epoch"); N: every N batches
  bool delete_checkpoint = true;  // remove the backup when fit ends normally
};

// The backup is one file, <backup_dir>/backup.h5, replaced atomically at each save: the weights
// (model_weights), the optimizer state (optimizer_weights: step count and slots) and the position
// (attribute training_metadata: {"epoch", "step"}: the next batch to train). When fit starts and a
// backup exists, it restores all three and fit continues at that epoch and batch. With the same seed,
// the continued run takes the same batches, dropout masks and updates as an uninterrupted one (see
// docs/data.md for the ordering rules that make this exact). A damaged backup (not HDF5, or metadata
// that is not JSON or lacks an integer epoch or step >= 0) throws io::FileError naming the file, the
// field and the fix, before anything is restored; a backup whose epoch is fit's epochs or past it
// trains nothing, as in Keras, and says so on stderr.
class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  std::string writes_to() const override;

  std::string backup_path() const;
  // Where the last fit resumed (epoch, step), or (-1, -1) when it started from scratch.
  int resumed_epoch() const { return resumed_epoch_; }
  std::int64_t resumed_step() const { return resumed_step_; }

 private:
  void backup(int epoch, std::int64_t step);
  void restore();  // the backup's weights, optimizer state and position into the model  // the next batch to train is `step` of `epoch`

  std::string dir_;
  BackupAndRestoreOptions options_;
  int epoch_ = 0;
  std::int64_t batches_seen_ = 0;
  int resumed_epoch_ = -1;
  std::int64_t resumed_step_ = -1;
};

}  // namespace tower::callbacks
