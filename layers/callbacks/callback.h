// Callback: hooks into fit, evaluate and predict (keras.callbacks.Callback), and History.
// The callbacks themselves (progress bar, EarlyStopping, ...) live in layers/callbacks/callbacks.h.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tower/layers/engine/logs.h"
#include "tower/layers/utils/plot_history.h"

namespace tower {

class Model;

// What fit tells callbacks (Keras's callback.params).
struct CallbackParams {
  int epochs = 1;
  std::int64_t steps = 0;  // batches per epoch (of training, or of evaluate/predict)
  int verbose = 1;
};

class Callback {
 public:
  virtual ~Callback() = default;

  void set_model(Model* model) { model_ = model; }
  void set_params(const CallbackParams& params) { params_ = params; }
  Model& model() const;  // throws when not attached to a model

  // Epoch numbers are 0-based as in Keras (the progress bar prints epoch + 1). Batch logs hold the
  // running averages of the epoch so far. on_epoch_end's logs may be changed (Keras adds "lr").
  virtual void on_train_begin(const Logs& logs) {}
  virtual void on_train_end(const Logs& logs) {}
  virtual void on_epoch_begin(int epoch, const Logs& logs) {}
  virtual void on_epoch_end(int epoch, Logs& logs) {}
  virtual void on_train_batch_begin(std::int64_t batch, const Logs& logs) {}
  virtual void on_train_batch_end(std::int64_t batch, const Logs& logs) {}
  virtual void on_test_begin(const Logs& logs) {}
  virtual void on_test_end(const Logs& logs) {}
  virtual void on_test_batch_begin(std::int64_t batch, const Logs& logs) {}
  virtual void on_test_batch_end(std::int64_t batch, const Logs& logs) {}
  virtual void on_predict_begin(const Logs& logs) {}
  virtual void on_predict_end(const Logs& logs) {}
  virtual void on_predict_batch_begin(std::int64_t batch, const Logs& logs) {}
  virtual void on_predict_batch_end(std::int64_t batch, const Logs& logs) {}

  // The files this callback writes on the chief of a multi-worker job alone, as the workers compare
  // them at fit's start (`ModelCheckpoint("ckpt.h5")`, `BackupAndRestore("dir")`); "" for the others
  // (CSVLogger and TensorBoard write on every worker, each to the path it was given).
  virtual std::string writes_to() const { return ""; }

 protected:
  Model* model_ = nullptr;
  CallbackParams params_;
};

using CallbackPtr = std::shared_ptr<Callback>;

// Records every epoch's logs; fit() returns it (Keras's History).
class History : public Callback {
 public:
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;

  std::vector<int> epoch;                               // 0-based epoch numbers
  std::map<std::string, std::vector<double>> history;  // "loss" -> one value per epoch

  // The curves as a PNG: utils::plot_history(*this, path, options) (layers/utils/plot_history.h).
  void plot(const std::string& path, const utils::PlotHistoryOptions& options = {}) const;
};

}  // namespace tower
