// Dataset's stages (slices, shuffle, map, batch, cache, prefetch) and their iterators: private to
// io/dataset.cpp and io/dataset_stages.cpp. Not installed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/io/dataset.h"

namespace tower::io::detail {

// One stage of a pipeline: immutable, shared by every Dataset made from it.
class Stage {
 public:
  Stage(std::shared_ptr<const Stage> input, std::string description, bool batched)
      : input_(std::move(input)), description_(std::move(description)), batched_(batched),
        sharded_(input_ && input_->sharded_) {}
  virtual ~Stage() = default;
  virtual std::unique_ptr<StageIterator> iterate(int epoch) const = 0;
  virtual std::int64_t cardinality() const = 0;
  const std::string& description() const { return description_; }
  bool batched() const { return batched_; }
  bool sharded() const { return sharded_; }  // a shard() stage is in the pipeline

 protected:
  std::shared_ptr<const Stage> input_;
  std::string description_;  // the whole pipeline up to this stage
  bool batched_;
  bool sharded_;
};

class StageIterator {
 public:
  virtual ~StageIterator() = default;
  virtual bool next(Element& out) = 0;
  // Skips up to n elements; returns how many there were.
  virtual std::int64_t skip(std::int64_t n) {
    Element e;
    std::int64_t k = 0;
    while (k < n && next(e)) ++k;
    return k;
  }
};

std::shared_ptr<const Stage> slices_stage(std::vector<Tensor> x, std::vector<Tensor> y, std::optional<Tensor> sample_weight,
                                          std::int64_t n);
std::shared_ptr<const Stage> shuffle_stage(std::shared_ptr<const Stage> input, std::int64_t buffer_size, std::uint64_t seed,
                                           bool reshuffle_each_iteration);
std::shared_ptr<const Stage> shard_stage(std::shared_ptr<const Stage> input, std::int64_t num_shards, std::int64_t index);
std::shared_ptr<const Stage> map_stage(std::shared_ptr<const Stage> input, std::function<Element(Element)> fn);
std::shared_ptr<const Stage> batch_stage(std::shared_ptr<const Stage> input, std::int64_t batch_size, bool drop_remainder);
std::shared_ptr<const Stage> cache_stage(std::shared_ptr<const Stage> input);
std::shared_ptr<const Stage> prefetch_stage(std::shared_ptr<const Stage> input, std::int64_t buffer_size,
                                            HostAllocator allocator);
// An iteration of `stage` that keeps the stage chain alive while it runs (iterators refer to their stages).
std::unique_ptr<StageIterator> owning_iteration(std::shared_ptr<const Stage> stage, int epoch);

}  // namespace tower::io::detail
