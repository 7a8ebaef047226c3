// Dataset: building a pipeline (its stages are in io/dataset_stages.cpp), iterating it, and the
// DataAdapter through which Model::fit, evaluate and predict read a Dataset.
#include "tower/io/dataset.h"

#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/io/dataset_internal.h"
#include "tower/io/idx.h"

namespace tower::io {

// ---- Dataset -----------------------------------------------------------------------------------------------

Dataset::Dataset(std::shared_ptr<const detail::Stage> stage) : stage_(std::move(stage)) {}

Dataset Dataset::from_tensor_slices(std::vector<Tensor> x, std::vector<Tensor> y, std::optional<Tensor> sample_weight) {
  const char* where = "Dataset::from_tensor_slices";
  if (x.empty()) raise<ValueError>("{}: needs at least one x array (one per model input)", where);
  std::vector<std::pair<std::string, Tensor*>> all;
  for (std::size_t i = 0; i < x.size(); ++i) all.emplace_back(fmt::format("x[{}]", i), &x[i]);
  for (std::size_t i = 0; i < y.size(); ++i) all.emplace_back(fmt::format("y[{}]", i), &y[i]);
  if (sample_weight) all.emplace_back("sample_weight", &*sample_weight);
  std::int64_t n = -1;
  std::string sizes;
  for (auto& [name, t] : all) {
    if (!t->defined()) raise<ValueError>("{}: {} is an empty (undefined) tensor", where, name);
    if (t->shape().rank() == 0)
      raise<ShapeError>("{}: {} is a scalar; arrays need a leading sample dimension (n, ...)", where, name);
    if (t->device().kind() != DeviceKind::cpu) *t = t->to(cpu_device());
    sizes += (sizes.empty() ? "" : ", ") + name + " " + std::to_string(t->shape()[0]);
    if (n < 0) n = t->shape()[0];
  }
  for (auto& [name, t] : all)
    if (t->shape()[0] != n)
      raise<ValueError>("{}: every array needs the same number of samples (its first dimension), got {}", where, sizes);
  if (sample_weight && sample_weight->shape().rank() != 1)
    raise<ShapeError>("{}: sample_weight must have shape ({},), got {}", where, n, sample_weight->shape().to_string());
  if (n == 0) raise<ValueError>("{}: the arrays have no samples ({}); a dataset needs at least one", where, sizes);
  return Dataset(detail::slices_stage(std::move(x), std::move(y), std::move(sample_weight), n));
}

Dataset Dataset::from_idx(const IdxSplit& split) { return from_tensor_slices({split.images}, {split.labels}); }

Dataset Dataset::from_idx(const std::string& dir, const std::string& prefix) {
  return from_idx(read_idx_split(dir, prefix));
}

Dataset Dataset::shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed, bool reshuffle_each_iteration) const {
  if (buffer_size != kAll && buffer_size < 1)
    raise<ValueError>("{}.shuffle: buffer_size must be at least 1 (or Dataset::kAll for the whole epoch), got {}",
                      describe(), buffer_size);
  return Dataset(detail::shuffle_stage(stage_, buffer_size, seed ? *seed : next_seed(),
                                                        reshuffle_each_iteration));
}

Dataset Dataset::shard(std::int64_t num_shards, std::int64_t index) const {
  if (num_shards < 1 || index < 0 || index >= num_shards)
    raise<ValueError>("{}.shard({}, {}): num_shards must be at least 1 and index in [0, num_shards)", describe(),
                      num_shards, index);
  return Dataset(detail::shard_stage(stage_, num_shards, index));
}

Dataset Dataset::map(std::function<Element(Element)> fn) const {
  if (!fn) raise<ValueError>("{}.map: the function is empty", describe());
  return Dataset(detail::map_stage(stage_, std::move(fn)));
}

Dataset Dataset::batch(std::int64_t batch_size, bool drop_remainder) const {
  if (batch_size < 1) raise<ValueError>("{}.batch: batch_size must be at least 1, got {}", describe(), batch_size);
  return Dataset(detail::batch_stage(stage_, batch_size, drop_remainder));
}

Dataset Dataset::cache() const { return Dataset(detail::cache_stage(stage_)); }

HostAllocator pinned_memory() {
  Device* pinned = pinned_host_device();
  if (!pinned) return nullptr;
  return [pinned](const Tensor& value) { return value.to(*pinned); };
}

Dataset Dataset::prefetch(std::int64_t buffer_size, HostAllocator allocator) const {
  if (buffer_size < 1) raise<ValueError>("{}.prefetch: buffer_size must be at least 1, got {}", describe(), buffer_size);
  return Dataset(detail::prefetch_stage(stage_, buffer_size, std::move(allocator)));
}

std::int64_t Dataset::cardinality() const { return stage_->cardinality(); }
bool Dataset::batched() const { return stage_->batched(); }
bool Dataset::sharded() const { return stage_->sharded(); }
std::string Dataset::describe() const { return stage_->description(); }

Dataset::Iterator::Iterator(std::unique_ptr<detail::StageIterator> it) : it_(std::move(it)) {}
Dataset::Iterator::Iterator(Iterator&&) noexcept = default;
Dataset::Iterator& Dataset::Iterator::operator=(Iterator&&) noexcept = default;
Dataset::Iterator::~Iterator() = default;
bool Dataset::Iterator::next(Element& out) { return it_ && it_->next(out); }

Dataset::Iterator Dataset::iterate(int epoch, std::int64_t skip) const {
  if (epoch < 0 || skip < 0) raise<ValueError>("{}: iterate({}, {}): the epoch and skip must be >= 0", describe(), epoch, skip);
  auto it = detail::owning_iteration(stage_, epoch);
  if (skip > 0) it->skip(skip);
  return Iterator(std::move(it));
}

std::vector<Element> Dataset::collect(int epoch) const {
  std::vector<Element> out;
  auto it = iterate(epoch);
  Element e;
  while (it.next(e)) out.push_back(e);
  return out;
}

// ---- the DataAdapter for fit, evaluate and predict ----------------------------------------------------------

namespace {

class DatasetAdapter final : public DataAdapter {
 public:
  explicit DatasetAdapter(Dataset dataset) : dataset_(std::move(dataset)) {}

  std::int64_t steps_per_epoch() const override { return dataset_.cardinality(); }
  bool own_batches() const override { return dataset_.sharded(); }
  void begin_epoch(int epoch, std::int64_t skip) override {
    iteration_.reset();  // stop the previous epoch's threads first
    iteration_.emplace(dataset_.iterate(epoch, skip));
  }
  bool next(DataElement& batch) override { return iteration_ && iteration_->next(batch); }
  void end_epoch() override { iteration_.reset(); }
  std::vector<Tensor> peek_x() override {
    auto it = dataset_.iterate(0);
    Element e;
    if (!it.next(e)) raise<ValueError>("{}: the dataset is empty", dataset_.describe());
    return e.x;
  }

 private:
  Dataset dataset_;
  std::optional<Dataset::Iterator> iteration_;
};

}  // namespace

std::unique_ptr<DataAdapter> Dataset::make_adapter() const {
  if (!batched())
    raise<ValueError>("{}: the elements are single samples; call .batch(batch_size) before giving the dataset to fit, "
                      "evaluate or predict", describe());
  return std::make_unique<DatasetAdapter>(*this);
}

}  // namespace tower::io
