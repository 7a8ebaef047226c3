// Dataset: an input pipeline in tf.data's spirit on host tensors (slices of arrays or IDX files,
// shuffle, map, batch, cache, prefetch) that Model::fit, evaluate and predict take. docs/data.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/core/tensor.h"
#include "tower/layers/engine/data_adapter.h"

namespace tower::io {

struct IdxSplit;

// One element: x per model input, y per model output (empty without labels), optional sample weights.
// Before batch() a single sample (no batch dimension; a scalar weight), after it a batch.
using Element = DataElement;

// What prefetch passes each tensor of an element through before queueing it; empty: the tensors are
// queued as they are (ordinary host memory). pinned_memory() gives the one for GPU training.
using HostAllocator = std::function<Tensor(const Tensor& value)>;

// Copies each prefetched tensor into page-locked host memory (cudaHostAlloc), from which a GPU copies
// by DMA without a staging copy: ds.prefetch(2, io::pinned_memory()). Empty (ordinary host memory)
// when tower has no CUDA backend or no GPU is visible, so the same pipeline runs everywhere.
HostAllocator pinned_memory();

namespace detail {
class Stage;
class StageIterator;
}  // namespace detail

// A Dataset is an immutable description of a pipeline; each method returns a new Dataset that shares
// the stages before it (copies are cheap). Iterating it runs the pipeline one epoch at a time:
//
//   auto ds = io::Dataset::from_tensor_slices({x}, {y})   // x: (n, ...) per input, y per output
//                 .shuffle(io::Dataset::kAll, /*seed=*/42)  // a new order every epoch
//                 .batch(128)
//                 .prefetch(2);                             // a background thread fills a queue
//   model.fit(ds, {.epochs = 5});
//
// Ordering: the elements of epoch e depend only on the pipeline and e (shuffle draws its order from
// Generator(seed, stream e)), so a run resumed at epoch e and batch k sees what an uninterrupted one saw.
class Dataset : public DataSource {
 public:
  // shuffle(kAll): the buffer holds the whole epoch (a uniform permutation of it).
  static constexpr std::int64_t kAll = -1;

  // Element i is row i of every array: x (n, ...) per model input, y (n, ...) per model output (may be
  // empty: unlabeled data, for predict), sample_weight (n,). The arrays are referred to, not copied (as
  // fit(x, y) does), and moved to the host when they live on a device. Throws ValueError when x is
  // empty, the arrays disagree on n or n is 0.
  static Dataset from_tensor_slices(std::vector<Tensor> x, std::vector<Tensor> y = {},
                                    std::optional<Tensor> sample_weight = std::nullopt);
  // x: the images (n, rows, cols) uint8, y: the labels (n,) uint8 of an IDX split (io/idx.h).
  static Dataset from_idx(const IdxSplit& split);
  // read_idx_split(dir, prefix): prefix "train" or "t10k" (MNIST, Fashion-MNIST, KMNIST),
  // "emnist-balanced-train", ... (EMNIST).
  static Dataset from_idx(const std::string& dir, const std::string& prefix);

  // Shuffles with a buffer of buffer_size elements (kAll or >= the number of elements: a full
  // permutation, epoch_permutation(n, seed, epoch)); smaller buffers shuffle locally as tf.data does.
  // seed unset: tower::next_seed() now, so a program run after set_random_seed(s) is reproducible.
  // reshuffle_each_iteration false: every epoch takes epoch 0's order.
  Dataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  // Every num_shards-th element, starting at element `index` (tf.data's shard): for pipelines that
  // split their input among the workers of a job, e.g. shard(strategy.num_workers(),
  // strategy.worker_index()) before batch(). (fit under MultiWorkerMirroredStrategy needs no shard:
  // each worker takes its rows of every global batch.)
  Dataset shard(std::int64_t num_shards, std::int64_t index) const;
  // Applies fn to every element: to single samples before batch(), to whole batches after it.
  // fn must return new tensors rather than write into its argument's (they may be views of the arrays
  // given to from_tensor_slices). It may run on prefetch's thread. Elements skipped when a run resumes
  // mid-epoch are not passed through fn.
  Dataset map(std::function<Element(Element)> fn) const;
  // Stacks batch_size consecutive elements into one (a leading dimension batch_size); the last batch
  // of an epoch is smaller, or dropped with drop_remainder. Elements must agree in shapes and dtypes.
  Dataset batch(std::int64_t batch_size, bool drop_remainder = false) const;
  // Keeps the first complete epoch's elements in memory; later epochs replay them without running the
  // stages before (put shuffle after cache, or every epoch replays the first order).
  Dataset cache() const;
  // A background thread runs the stages before and keeps up to buffer_size elements ready in a
  // bounded queue. Its exceptions are rethrown by the consumer (same type, with context); destroying
  // the iteration mid-epoch stops and joins the thread. allocator: see HostAllocator.
  Dataset prefetch(std::int64_t buffer_size = 2, HostAllocator allocator = nullptr) const;

  // Elements per epoch (batches after batch()); -1 when unknown.
  std::int64_t cardinality() const;
  // True after batch(): what fit, evaluate and predict need.
  bool batched() const;
  // True after shard(): under a multi-worker strategy, each batch is then this worker's own part of
  // the global batch (the workers' parts together make it), not the global batch itself.
  bool sharded() const;
  // The pipeline, for messages: "from_tensor_slices(100 samples).shuffle(all).batch(32)".
  std::string describe() const;

  // One epoch's iteration (move-only; destroying it stops prefetch threads).
  class Iterator {
   public:
    explicit Iterator(std::unique_ptr<detail::StageIterator> it);
    Iterator(Iterator&&) noexcept;
    Iterator& operator=(Iterator&&) noexcept;
    ~Iterator();
    // The next element into `out`; false at the end of the epoch.
    bool next(Element& out);

   private:
    std::unique_ptr<detail::StageIterator> it_;
  };
  // Epoch `epoch` (its shuffle order), after skipping its first `skip` elements.
  Iterator iterate(int epoch = 0, std::int64_t skip = 0) const;
  // Every element of epoch `epoch`.
  std::vector<Element> collect(int epoch = 0) const;

  // DataSource: what Model::fit/evaluate/predict iterate. Throws ValueError when not batched().
  std::unique_ptr<DataAdapter> make_adapter() const override;

 private:
  explicit Dataset(std::shared_ptr<const detail::Stage> stage);
  std::shared_ptr<const detail::Stage> stage_;
};

}  // namespace tower::io
