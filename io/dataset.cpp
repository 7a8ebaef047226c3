// Dataset's stages (slices, shuffle, map, batch, cache, prefetch), their iterators, and the
// DataAdapter through which Model::fit, evaluate and predict read a Dataset.
#include "tower/io/dataset.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/io/hdf5.h"
#include "tower/io/idx.h"

namespace tower::io {

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


}  // namespace

namespace detail {

// One stage of a pipeline: immutable, shared by every Dataset made from it.
class Stage {
 public:
  Stage(std::shared_ptr<const Stage> input, std::string description, bool batched)
      : input_(std::move(input)), description_(std::move(description)), batched_(batched) {}
  virtual ~Stage() = default;
  virtual std::unique_ptr<StageIterator> iterate(int epoch) const = 0;
  virtual std::int64_t cardinality() const = 0;
  const std::string& description() const { return description_; }
  bool batched() const { return batched_; }

 protected:
  std::shared_ptr<const Stage> input_;
  std::string description_;  // the whole pipeline up to this stage
  bool batched_;
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

namespace {

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
    return drop_remainder_ ? n / size_ : (n + size_ - 1) / size_;
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
      const std::int64_t k = input_->skip(n * s_.size_);
      return s_.drop_remainder_ ? k / s_.size_ : (k + s_.size_ - 1) / s_.size_;
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
}  // namespace detail

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
  return Dataset(std::make_shared<detail::SlicesStage>(std::move(x), std::move(y), std::move(sample_weight), n));
}

Dataset Dataset::from_idx(const IdxSplit& split) { return from_tensor_slices({split.images}, {split.labels}); }

Dataset Dataset::from_idx(const std::string& dir, const std::string& prefix) {
  return from_idx(read_idx_split(dir, prefix));
}

Dataset Dataset::shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed, bool reshuffle_each_iteration) const {
  if (buffer_size != kAll && buffer_size < 1)
    raise<ValueError>("{}.shuffle: buffer_size must be at least 1 (or Dataset::kAll for the whole epoch), got {}",
                      describe(), buffer_size);
  return Dataset(std::make_shared<detail::ShuffleStage>(stage_, buffer_size, seed ? *seed : next_seed(),
                                                        reshuffle_each_iteration));
}

Dataset Dataset::map(std::function<Element(Element)> fn) const {
  if (!fn) raise<ValueError>("{}.map: the function is empty", describe());
  return Dataset(std::make_shared<detail::MapStage>(stage_, std::move(fn)));
}

Dataset Dataset::batch(std::int64_t batch_size, bool drop_remainder) const {
  if (batch_size < 1) raise<ValueError>("{}.batch: batch_size must be at least 1, got {}", describe(), batch_size);
  return Dataset(std::make_shared<detail::BatchStage>(stage_, batch_size, drop_remainder));
}

Dataset Dataset::cache() const { return Dataset(std::make_shared<detail::CacheStage>(stage_)); }

HostAllocator pinned_memory() {
  Device* pinned = pinned_host_device();
  if (!pinned) return nullptr;
  return [pinned](const Tensor& value) { return value.to(*pinned); };
}

Dataset Dataset::prefetch(std::int64_t buffer_size, HostAllocator allocator) const {
  if (buffer_size < 1) raise<ValueError>("{}.prefetch: buffer_size must be at least 1, got {}", describe(), buffer_size);
  return Dataset(std::make_shared<detail::PrefetchStage>(stage_, buffer_size, std::move(allocator)));
}

std::int64_t Dataset::cardinality() const { return stage_->cardinality(); }
bool Dataset::batched() const { return stage_->batched(); }
std::string Dataset::describe() const { return stage_->description(); }

Dataset::Iterator::Iterator(std::unique_ptr<detail::StageIterator> it) : it_(std::move(it)) {}
Dataset::Iterator::Iterator(Iterator&&) noexcept = default;
Dataset::Iterator& Dataset::Iterator::operator=(Iterator&&) noexcept = default;
Dataset::Iterator::~Iterator() = default;
bool Dataset::Iterator::next(Element& out) { return it_ && it_->next(out); }

Dataset::Iterator Dataset::iterate(int epoch, std::int64_t skip) const {
  if (epoch < 0 || skip < 0) raise<ValueError>("{}: iterate({}, {}): the epoch and skip must be >= 0", describe(), epoch, skip);
  auto it = std::make_unique<detail::Owning>(stage_, stage_->iterate(epoch));
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
