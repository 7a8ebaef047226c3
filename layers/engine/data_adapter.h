// DataAdapter: the batches fit, evaluate and predict iterate over (Keras's data adapters); the adapter of
// in-memory arrays; DataSource, what a dataset (io::Dataset) implements so that a Model can take it
// without layers/ knowing io/; and the per-epoch shuffle order every adapter shares.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/core/tensor.h"

namespace tower {

// One sample (no batch dimension) or one batch (a leading batch dimension): x per model input, y per
// model output (empty when unlabeled, as for predict), optional per-sample weights of the loss.
struct DataElement {
  std::vector<Tensor> x;                // (batch, ...) per model input
  std::vector<Tensor> y;                // (batch, ...) per model output; empty without labels
  std::optional<Tensor> sample_weight;  // (batch,)
};

// The order of epoch `epoch` over n samples: Fisher-Yates on the identity 0..n-1, drawing from
// Generator(seed, /*stream=*/epoch). It depends on (n, seed, epoch) only, so a run resumed at any
// epoch takes the same order as an uninterrupted one. fit() on arrays and Dataset::shuffle use it.
std::vector<std::int64_t> epoch_permutation(std::int64_t n, std::uint64_t seed, int epoch);

// What the training loop reads: an epoch at a time, a batch at a time.
class DataAdapter {
 public:
  virtual ~DataAdapter() = default;

  // Batches per epoch; -1 when it is not known before the epoch ends.
  virtual std::int64_t steps_per_epoch() const = 0;
  // Samples per epoch; -1 when not known in advance (predict then concatenates its batches).
  virtual std::int64_t num_samples() const { return -1; }
  // Whether each batch is this process's own part of the global batch (a Dataset::shard'ed pipeline
  // under a multi-worker strategy), rather than the global batch every process reads.
  virtual bool own_batches() const { return false; }
  // Starts epoch `epoch` (0-based: a shuffled order depends on it) and skips its first `skip`
  // batches, which a resumed run trained before it was interrupted.
  virtual void begin_epoch(int epoch, std::int64_t skip = 0) = 0;
  // The next batch of the epoch into `batch`; false after the last one. The tensors may share memory
  // with the adapter's buffers, refilled by the next call.
  virtual bool next(DataElement& batch) = 0;
  // Ends the epoch, also early (stop_training): frees its buffers and stops background threads.
  virtual void end_epoch() {}
  // The inputs of one batch (their shapes and dtypes), for a model that builds from data
  // (a Sequential without an Input).
  virtual std::vector<Tensor> peek_x() = 0;
  // A cheap fingerprint of the data, which the workers of a multi-worker job compare at fit's start
  // (every worker must read the same data); "" when there is none to compare (a pipeline).
  virtual std::string fingerprint() const { return ""; }
};

// Host arrays with the same number of rows: x (rows, ...) per input, y (rows, ...) per output (may be
// empty), sample weights (rows,) (undefined: none), of which the first n (all when n < 0) are used.
// Batches of batch_size rows (the last one smaller), in order or in epoch_permutation(n, seed, epoch)
// order. Gathers into buffers kept per batch size, so steps in a loop allocate nothing.
class ArrayDataAdapter final : public DataAdapter {
 public:
  ArrayDataAdapter(std::vector<Tensor> x, std::vector<Tensor> y, Tensor sample_weight, std::int64_t batch_size,
                   bool shuffle = false, std::uint64_t seed = 0, std::int64_t n = -1);

  std::int64_t steps_per_epoch() const override;
  std::int64_t num_samples() const override { return n_; }
  void begin_epoch(int epoch, std::int64_t skip) override;
  bool next(DataElement& batch) override;
  std::vector<Tensor> peek_x() override { return x_; }
  // A hash (16 hex digits) of every array's dtype and shape and the bytes of its first and last 4 rows
  // and of 56 rows strided over the first n: a few hundred rows, however large the data.
  std::string fingerprint() const override;

 private:
  std::vector<Tensor> x_, y_;
  Tensor sample_weight_;  // (n,) or undefined
  std::int64_t n_, batch_size_;
  bool shuffle_;
  std::uint64_t seed_;
  std::vector<std::int64_t> order_;  // this epoch's sample order
  std::int64_t position_ = 0;        // next row of order_
  std::map<std::int64_t, DataElement> buffers_;  // per batch size
};

// Copies rows idx[0..n) of a host array into `out` (n, ...), (re)allocating it only when its shape or
// dtype differs.
void gather_rows(const Tensor& src, const std::int64_t* idx, std::int64_t n, Tensor& out);

// A source of batches for Model::fit/evaluate/predict. io::Dataset implements it; a FitOptions
// validation_dataset holds one.
class DataSource {
 public:
  virtual ~DataSource() = default;
  // A fresh adapter over the batches (each call starts independent iteration).
  virtual std::unique_ptr<DataAdapter> make_adapter() const = 0;
};

}  // namespace tower
