// Dataset's stages (slices, shuffle, map, batch, cache, prefetch) and their iterators.
#include "tower/io/dataset_internal.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/io/hdf5.h"  // FileError

namespace tower::io::detail {

namespace {


// Rethrows `error` as the same tower exception type (or Error) with `context` before its message.
[[noreturn]] void rethrow_with_context(const std::exception_ptr& error, const std::string& context) {
  try {
    std::rethrow_exception(error);
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(context + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(context + e.what());
  } catch (const ShapeError& e) {
    throw ShapeError(context + e.what());
  } catch (const DTypeError& e) {
    throw DTypeError(context + e.what());
  } catch (const ValueError& e) {
    throw ValueError(context + e.what());
  } catch (const NotFoundError& e) {
    throw NotFoundError(context + e.what());
  } catch (const FileError& e) {
    throw FileError(context + e.what());
  } catch (const std::exception& e) {
    throw Error(context + e.what());
  } catch (...) {
    throw Error(context + "an exception that is not a std::exception");
  }
}



// ---- from_tensor_slices ------------------------------------------------------------------------

// Row i of `t` (n, ...) as a view (...): shares the array's storage.
Tensor row_view(const Tensor& t, std::int64_t i) {
  auto dims = t.shape().dims();
  const std::size_t row = t.shape()[0] ? t.nbytes() / static_cast<std::size_t>(t.shape()[0]) : 0;
  dims.erase(dims.begin());
  return Tensor(Shape(dims), t.dtype(), t.storage(), t.offset() + static_cast<std::size_t>(i) * row);
}

class SlicesStage final : public Stage {
 public:
  SlicesStage(std::vector<Tensor> x, std::vector<Tensor> y, std::optional<Tensor> w, std::int64_t n)
      : Stage(nullptr, "from_tensor_slices(" + std::to_string(n) + " samples)", false), x_(std::move(x)),
        y_(std::move(y)), w_(std::move(w)), n_(n) {}

  std::unique_ptr<StageIterator> iterate(int) const override { return std::make_unique<Iterator>(*this); }
  std::int64_t cardinality() const override { return n_; }

 private:
  class Iterator final : public StageIterator {
   public:
    explicit Iterator(const SlicesStage& s) : s_(s) {}
    bool next(Element& out) override {
      if (i_ >= s_.n_) return false;
      out.x.clear();
      out.y.clear();
      for (const auto& t : s_.x_) out.x.push_back(row_view(t, i_));
      for (const auto& t : s_.y_) out.y.push_back(row_view(t, i_));
      out.sample_weight.reset();
      if (s_.w_) out.sample_weight = row_view(*s_.w_, i_);
      ++i_;
      return true;
    }
    std::int64_t skip(std::int64_t n) override {
      const std::int64_t k = std::clamp<std::int64_t>(n, 0, s_.n_ - i_);
      i_ += k;
      return k;
    }

   private:
    const SlicesStage& s_;  // the Dataset's stages outlive iterations (the iterator holds the stage chain)
    std::int64_t i_ = 0;
  };

  std::vector<Tensor> x_, y_;
  std::optional<Tensor> w_;
  std::int64_t n_;
};

// ---- shuffle ----------------------------------------------------------------------------------------

// A full buffer: the epoch's elements in epoch_permutation(n, seed, stream) order.
class FullShuffleIterator final : public StageIterator {
 public:
  FullShuffleIterator(std::unique_ptr<StageIterator> input, std::uint64_t seed, int stream)
      : input_(std::move(input)), seed_(seed), stream_(stream) {}
  bool next(Element& out) override {
    fill();
    if (position_ >= order_.size()) return false;
    out = std::move(elements_[static_cast<std::size_t>(order_[position_++])]);
    return true;
  }
  std::int64_t skip(std::int64_t n) override {
    fill();
    const auto k = static_cast<std::size_t>(std::clamp<std::int64_t>(n, 0, static_cast<std::int64_t>(order_.size() - position_)));
    for (std::size_t i = 0; i < k; ++i) elements_[static_cast<std::size_t>(order_[position_ + i])] = Element{};
    position_ += k;
    return static_cast<std::int64_t>(k);
  }

 private:
  void fill() {
    if (filled_) return;
    Element e;
    while (input_->next(e)) elements_.push_back(std::move(e));
    input_.reset();
    order_ = epoch_permutation(static_cast<std::int64_t>(elements_.size()), seed_, stream_);
    filled_ = true;
  }
  std::unique_ptr<StageIterator> input_;
  std::uint64_t seed_;
  int stream_;
  bool filled_ = false;
  std::vector<Element> elements_;
  std::vector<std::int64_t> order_;
  std::size_t position_ = 0;
};

// A bounded buffer, as tf.data: fill it, then hand out a random entry and put the next input element
// in its place.
class BufferShuffleIterator final : public StageIterator {
 public:
  BufferShuffleIterator(std::unique_ptr<StageIterator> input, std::int64_t size, std::uint64_t seed, int stream)
      : input_(std::move(input)), size_(static_cast<std::size_t>(size)), generator_(seed, static_cast<std::uint64_t>(stream)) {}
  bool next(Element& out) override {
    while (!exhausted_ && buffer_.size() < size_) {
      Element e;
      if (!input_->next(e)) {
        exhausted_ = true;
        break;
      }
      buffer_.push_back(std::move(e));
    }
    if (buffer_.empty()) return false;
    const std::size_t j = generator_.next_u32() % buffer_.size();
    out = std::move(buffer_[j]);
    Element e;
    if (!exhausted_ && input_->next(e)) {
      buffer_[j] = std::move(e);
    } else {
      exhausted_ = true;
      buffer_[j] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    return true;
  }

 private:
  std::unique_ptr<StageIterator> input_;
  std::size_t size_;
  Generator generator_;
  bool exhausted_ = false;
  std::vector<Element> buffer_;
};

class ShuffleStage final : public Stage {
 public:
  ShuffleStage(std::shared_ptr<const Stage> input, std::int64_t buffer_size, std::uint64_t seed, bool reshuffle)
      : Stage(input, input->description() + ".shuffle(" +
                         (buffer_size == Dataset::kAll ? std::string("all") : std::to_string(buffer_size)) + ")",
              input->batched()),
        buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}

  std::unique_ptr<StageIterator> iterate(int epoch) const override {
    const int stream = reshuffle_ ? epoch : 0;
    const std::int64_t n = input_->cardinality();
    if (buffer_size_ == Dataset::kAll || (n >= 0 && buffer_size_ >= n))
      return std::make_unique<FullShuffleIterator>(input_->iterate(epoch), seed_, stream);
    return std::make_unique<BufferShuffleIterator>(input_->iterate(epoch), buffer_size_, seed_, stream);
  }
  std::int64_t cardinality() const override { return input_->cardinality(); }

 private:
  std::int64_t buffer_size_;
  std::uint64_t seed_;
  bool reshuffle_;
};

// ---- map ------------------------------------------------------------------------------------------------

// Every num_shards-th element, from element `index` on (tf.data's shard).
class ShardStage final : public Stage {
 public:
  ShardStage(std::shared_ptr<const Stage> input, std::int64_t num_shards, std::int64_t index)
      : Stage(input, fmt::format("{}.shard({}, {})", input->description(), num_shards, index), input->batched()),
        num_shards_(num_shards), index_(index) {
    sharded_ = true;
  }

  std::unique_ptr<StageIterator> iterate(int epoch) const override {
    return std::make_unique<Iterator>(*this, input_->iterate(epoch));
  }
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    return n < 0 ? n : n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }

 private:
  class Iterator final : public StageIterator {
   public:
    Iterator(const ShardStage& s, std::unique_ptr<StageIterator> input) : s_(s), input_(std::move(input)) {}
    bool next(Element& out) override {
      // Before the first element: the shard's first; after it: the num_shards - 1 of the other shards.
      const std::int64_t gap = first_ ? s_.index_ : s_.num_shards_ - 1;
      first_ = false;
      if (input_->skip(gap) < gap) return false;
      return input_->next(out);
    }

   private:
    const ShardStage& s_;
    std::unique_ptr<StageIterator> input_;
    bool first_ = true;
  };
  std::int64_t num_shards_, index_;
};

class MapStage final : public Stage {
 public:
  MapStage(std::shared_ptr<const Stage> input, std::function<Element(Element)> fn)
      : Stage(input, input->description() + ".map()", input->batched()), fn_(std::move(fn)) {}

  std::unique_ptr<StageIterator> iterate(int epoch) const override {
    return std::make_unique<Iterator>(*this, input_->iterate(epoch), epoch);
  }
  std::int64_t cardinality() const override { return input_->cardinality(); }

 private:
  class Iterator final : public StageIterator {
   public:
    Iterator(const MapStage& s, std::unique_ptr<StageIterator> input, int epoch)
        : s_(s), input_(std::move(input)), epoch_(epoch) {}
    bool next(Element& out) override {
      Element e;
      if (!input_->next(e)) return false;
      try {
        out = s_.fn_(std::move(e));
      } catch (...) {
        rethrow_with_context(std::current_exception(),
                             fmt::format("{}: the map function failed on element {} of epoch {}: ", s_.description(),
                                         index_, epoch_));
      }
      ++index_;
      return true;
    }
    std::int64_t skip(std::int64_t n) override {
      const std::int64_t k = input_->skip(n);
      index_ += k;
      return k;
    }

   private:
    const MapStage& s_;
    std::unique_ptr<StageIterator> input_;
    int epoch_;
    std::int64_t index_ = 0;
  };

  std::function<Element(Element)> fn_;
};

// ---- batch ------------------------------------------------------------------------------------------------

// Stacks tensors of equal shape and dtype: (shape) x k -> (k, shape).
Tensor stack(const std::vector<const Tensor*>& parts, const std::string& what, const std::string& where) {
  const Tensor& first = *parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i)
    if (parts[i]->shape() != first.shape() || parts[i]->dtype() != first.dtype())
      raise<ShapeError>("{}: element {} of a batch has {} of shape {} {} but element 0 has {} {}; elements must agree "
                        "to be batched (map them to one shape first)", where, i, what, parts[i]->shape().to_string(),
                        dtype_name(parts[i]->dtype()), first.shape().to_string(), dtype_name(first.dtype()));
  auto dims = first.shape().dims();
  dims.insert(dims.begin(), static_cast<std::int64_t>(parts.size()));
  Tensor out = Tensor::zeros(Shape(dims), first.dtype());
  const std::size_t row = first.nbytes();
  auto* to = static_cast<char*>(out.raw_data());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Tensor host = parts[i]->device().kind() == DeviceKind::cpu ? *parts[i] : parts[i]->to(cpu_device());
    std::memcpy(to + i * row, host.raw_data(), row);
  }
  return out;
}

Element stack_elements(const std::vector<Element>& elements, const std::string& where) {
  const Element& first = elements[0];
  for (std::size_t i = 1; i < elements.size(); ++i) {
    const Element& e = elements[i];
    if (e.x.size() != first.x.size() || e.y.size() != first.y.size() ||
        e.sample_weight.has_value() != first.sample_weight.has_value())
      raise<ValueError>("{}: element {} of a batch has {} x, {} y and {} sample weight but element 0 has {}, {} and {}",
                        where, i, e.x.size(), e.y.size(), e.sample_weight ? "a" : "no", first.x.size(), first.y.size(),
                        first.sample_weight ? "a" : "no");
  }
  Element out;
  std::vector<const Tensor*> parts(elements.size());
  auto column = [&](auto&& get, const std::string& what) {
    for (std::size_t i = 0; i < elements.size(); ++i) parts[i] = &get(elements[i]);
    return stack(parts, what, where);
  };
  for (std::size_t k = 0; k < first.x.size(); ++k)
    out.x.push_back(column([k](const Element& e) -> const Tensor& { return e.x[k]; }, fmt::format("x[{}]", k)));
  for (std::size_t k = 0; k < first.y.size(); ++k)
    out.y.push_back(column([k](const Element& e) -> const Tensor& { return e.y[k]; }, fmt::format("y[{}]", k)));
  if (first.sample_weight)
    out.sample_weight = column([](const Element& e) -> const Tensor& { return *e.sample_weight; }, "sample_weight");
  return out;
}

class BatchStage final : public Stage {
 public:
  BatchStage(std::shared_ptr<const Stage> input, std::int64_t size, bool drop_remainder)
      : Stage(input, input->description() + ".batch(" + std::to_string(size) + (drop_remainder ? ", drop_remainder" : "") + ")",
              true),
        size_(size), drop_remainder_(drop_remainder) {}

  std::unique_ptr<StageIterator> iterate(int epoch) const override {
    return std::make_unique<Iterator>(*this, input_->iterate(epoch));
  }
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (n < 0) return n;
    return n / size_ + (!drop_remainder_ && n % size_ != 0);  // n + size - 1 overflowed for a huge size
  }

 private:
  class Iterator final : public StageIterator {
   public:
    Iterator(const BatchStage& s, std::unique_ptr<StageIterator> input) : s_(s), input_(std::move(input)) {}
    bool next(Element& out) override {
      pending_.clear();
      Element e;
      while (static_cast<std::int64_t>(pending_.size()) < s_.size_ && input_->next(e)) pending_.push_back(std::move(e));
      if (pending_.empty() || (s_.drop_remainder_ && static_cast<std::int64_t>(pending_.size()) < s_.size_)) return false;
      out = stack_elements(pending_, s_.description());
      return true;
    }
    std::int64_t skip(std::int64_t n) override {
      // n batches are n * size elements, or all there are when that overflows (no input has 2^63).
      std::int64_t elements = 0;
      if (__builtin_mul_overflow(std::max<std::int64_t>(n, 0), s_.size_, &elements))
        elements = std::numeric_limits<std::int64_t>::max();
      const std::int64_t k = input_->skip(elements);
      return k / s_.size_ + (!s_.drop_remainder_ && k % s_.size_ != 0);
    }

   private:
    const BatchStage& s_;
    std::unique_ptr<StageIterator> input_;
    std::vector<Element> pending_;
  };

  std::int64_t size_;
  bool drop_remainder_;
};

// ---- cache ----------------------------------------------------------------------------------------------

class CacheStage final : public Stage {
 public:
  explicit CacheStage(std::shared_ptr<const Stage> input)
      : Stage(input, input->description() + ".cache()", input->batched()), state_(std::make_shared<State>()) {}

  std::unique_ptr<StageIterator> iterate(int epoch) const override {
    {
      std::lock_guard lock(state_->mutex);
      if (state_->elements) return std::make_unique<Replay>(state_->elements);
    }
    return std::make_unique<Fill>(input_->iterate(epoch), state_);
  }
  std::int64_t cardinality() const override { return input_->cardinality(); }

 private:
  struct State {
    std::mutex mutex;
    std::shared_ptr<const std::vector<Element>> elements;  // set by the first iteration that completes
  };

  class Replay final : public StageIterator {
   public:
    explicit Replay(std::shared_ptr<const std::vector<Element>> elements) : elements_(std::move(elements)) {}
    bool next(Element& out) override {
      if (position_ >= elements_->size()) return false;
      out = (*elements_)[position_++];
      return true;
    }
    std::int64_t skip(std::int64_t n) override {
      const auto k = std::min(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)), elements_->size() - position_);
      position_ += k;
      return static_cast<std::int64_t>(k);
    }

   private:
    std::shared_ptr<const std::vector<Element>> elements_;
    std::size_t position_ = 0;
  };

  // Reads the input and keeps what it reads (skipped elements too); publishes it at the end.
  class Fill final : public StageIterator {
   public:
    Fill(std::unique_ptr<StageIterator> input, std::shared_ptr<State> state)
        : input_(std::move(input)), state_(std::move(state)) {}
    bool next(Element& out) override {
      if (!input_) return false;
      if (input_->next(out)) {
        kept_.push_back(out);
        return true;
      }
      input_.reset();
      std::lock_guard lock(state_->mutex);
      if (!state_->elements) state_->elements = std::make_shared<const std::vector<Element>>(std::move(kept_));
      return false;
    }

   private:
    std::unique_ptr<StageIterator> input_;
    std::shared_ptr<State> state_;
    std::vector<Element> kept_;
  };

  std::shared_ptr<State> state_;
};

// ---- prefetch ---------------------------------------------------------------------------------------------

// Runs the input on a background thread that keeps up to `capacity` elements in a queue. The thread
// starts at the first next() (so skip() before it goes straight to the input) and is stopped and
// joined by the destructor, also mid-epoch.
class PrefetchIterator final : public StageIterator {
 public:
  PrefetchIterator(std::unique_ptr<StageIterator> input, std::size_t capacity, HostAllocator allocator,
                   std::string description, int epoch)
      : input_(std::move(input)), capacity_(capacity), allocator_(std::move(allocator)),
        description_(std::move(description)), epoch_(epoch) {}
  ~PrefetchIterator() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    not_full_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  PrefetchIterator(const PrefetchIterator&) = delete;
  PrefetchIterator& operator=(const PrefetchIterator&) = delete;

  bool next(Element& out) override {
    if (!thread_.joinable()) thread_ = std::thread([this] { produce(); });
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (!queue_.empty()) {
      out = std::move(queue_.front());
      queue_.pop_front();
      ++consumed_;
      lock.unlock();
      not_full_.notify_one();
      return true;
    }
    if (error_)
      rethrow_with_context(error_, fmt::format("{}: the prefetch thread failed after {} elements of epoch {}: ",
                                               description_, consumed_, epoch_));
    return false;
  }
  std::int64_t skip(std::int64_t n) override {
    if (!thread_.joinable()) return input_->skip(n);
    return StageIterator::skip(n);
  }

 private:
  void produce() {
    try {
      for (;;) {
        Element e;
        const bool got = input_->next(e);
        if (got && allocator_) {
          for (auto& t : e.x) t = allocator_(t);
          for (auto& t : e.y) t = allocator_(t);
          if (e.sample_weight) e.sample_weight = allocator_(*e.sample_weight);
        }
        std::unique_lock lock(mutex_);
        not_full_.wait(lock, [&] { return queue_.size() < capacity_ || stop_; });
        if (stop_) return;
        if (!got) {
          done_ = true;
          lock.unlock();
          not_empty_.notify_all();
          return;
        }
        queue_.push_back(std::move(e));
        lock.unlock();
        not_empty_.notify_one();
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      done_ = true;
    }
    not_empty_.notify_all();
  }

  std::unique_ptr<StageIterator> input_;  // used by the thread only, once it runs
  std::size_t capacity_;
  HostAllocator allocator_;
  std::string description_;
  int epoch_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<Element> queue_;
  bool done_ = false, stop_ = false;
  std::exception_ptr error_;
  std::int64_t consumed_ = 0;
};

class PrefetchStage final : public Stage {
 public:
  PrefetchStage(std::shared_ptr<const Stage> input, std::int64_t buffer_size, HostAllocator allocator)
      : Stage(input, input->description() + ".prefetch(" + std::to_string(buffer_size) + ")", input->batched()),
        buffer_size_(buffer_size), allocator_(std::move(allocator)) {}

  std::unique_ptr<StageIterator> iterate(int epoch) const override {
    return std::make_unique<PrefetchIterator>(input_->iterate(epoch), static_cast<std::size_t>(buffer_size_), allocator_,
                                              description(), epoch);
  }
  std::int64_t cardinality() const override { return input_->cardinality(); }

 private:
  std::int64_t buffer_size_;
  HostAllocator allocator_;
};

// Keeps the stage chain alive as long as an iteration of it runs (iterators refer to their stages).
class Owning final : public StageIterator {
 public:
  Owning(std::shared_ptr<const Stage> stage, std::unique_ptr<StageIterator> it)
      : stage_(std::move(stage)), it_(std::move(it)) {}
  ~Owning() override { it_.reset(); }  // the iteration (and its threads) ends before the stages go
  bool next(Element& out) override { return it_->next(out); }
  std::int64_t skip(std::int64_t n) override { return it_->skip(n); }

 private:
  std::shared_ptr<const Stage> stage_;
  std::unique_ptr<StageIterator> it_;
};


}  // namespace

std::shared_ptr<const Stage> slices_stage(std::vector<Tensor> x, std::vector<Tensor> y, std::optional<Tensor> sample_weight,
                                          std::int64_t n) {
  return std::make_shared<SlicesStage>(std::move(x), std::move(y), std::move(sample_weight), n);
}
std::shared_ptr<const Stage> shuffle_stage(std::shared_ptr<const Stage> input, std::int64_t buffer_size, std::uint64_t seed,
                                           bool reshuffle_each_iteration) {
  return std::make_shared<ShuffleStage>(std::move(input), buffer_size, seed, reshuffle_each_iteration);
}
std::shared_ptr<const Stage> shard_stage(std::shared_ptr<const Stage> input, std::int64_t num_shards, std::int64_t index) {
  return std::make_shared<ShardStage>(std::move(input), num_shards, index);
}
std::shared_ptr<const Stage> map_stage(std::shared_ptr<const Stage> input, std::function<Element(Element)> fn) {
  return std::make_shared<MapStage>(std::move(input), std::move(fn));
}
std::shared_ptr<const Stage> batch_stage(std::shared_ptr<const Stage> input, std::int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchStage>(std::move(input), batch_size, drop_remainder);
}
std::shared_ptr<const Stage> cache_stage(std::shared_ptr<const Stage> input) {
  return std::make_shared<CacheStage>(std::move(input));
}
std::shared_ptr<const Stage> prefetch_stage(std::shared_ptr<const Stage> input, std::int64_t buffer_size,
                                            HostAllocator allocator) {
  return std::make_shared<PrefetchStage>(std::move(input), buffer_size, std::move(allocator));
}
std::unique_ptr<StageIterator> owning_iteration(std::shared_ptr<const Stage> stage, int epoch) {
  auto it = stage->iterate(epoch);
  return std::make_unique<Owning>(std::move(stage), std::move(it));
}

}  // namespace tower::io::detail
