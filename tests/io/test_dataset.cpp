// Dataset (slices, shuffle, map, batch, cache, prefetch), fit/evaluate/predict on datasets, and
// resuming fit mid-epoch (set_initial_position) with shuffling and Dropout.
#include <doctest/doctest.h>

#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <stdexcept>

#include "tower/core/random.h"
#include "tower/io/dataset.h"
#include "tower/io/datasets.h"
#include "tower/io/idx.h"
#include "tower/layers/layers.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/engine/sequential.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/errors.h"
#include "tests/support/weights.h"

using namespace tower;
using tower::testing::flat_weights;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

// x (n, 2) float32 with x[i] = {i, -i}, y (n,) int32 with y[i] = i.
std::pair<Tensor, Tensor> counting(std::int64_t n) {
  std::vector<float> xs;
  std::vector<std::int32_t> ys;
  for (std::int64_t i = 0; i < n; ++i) {
    xs.push_back(static_cast<float>(i));
    xs.push_back(static_cast<float>(-i));
    ys.push_back(static_cast<std::int32_t>(i));
  }
  return {Tensor::from_vector<float>({n, 2}, xs), Tensor::from_vector<std::int32_t>({n}, ys)};
}

// The y values (sample ids) of every element of a list, batched or not, in order.
std::vector<std::int32_t> ids(const std::vector<io::Element>& elements) {
  std::vector<std::int32_t> out;
  for (const auto& e : elements)
    for (auto v : e.y.at(0).to_vector<std::int32_t>()) out.push_back(v);
  return out;
}

// Two Gaussian blobs per class of 3, in 4 dimensions; int32 labels.
std::pair<Tensor, Tensor> blobs(std::int64_t n, std::uint64_t seed) {
  Generator g(seed);
  std::vector<float> xs;
  std::vector<std::int32_t> ys;
  for (std::int64_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % 3);
    for (int j = 0; j < 4; ++j) xs.push_back(static_cast<float>((j == c ? 2.0 : 0.0) + 0.5 * g.next_normal()));
    ys.push_back(c);
  }
  return {Tensor::from_vector<float>({n, 4}, xs), Tensor::from_vector<std::int32_t>({n}, ys)};
}

// A small classifier with Dropout; layer names fixed so that optimizer slot names match across models.
Sequential classifier() {
  Sequential model({
      layers::Input({4}),
      layers::Dense(16, {.activation = "relu", .name = "hidden"}),
      layers::Dropout(0.3, {.name = "drop"}),
      layers::Dense(3, {.activation = "softmax", .name = "out"}),
  });
  model.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

// Two identical classifiers: the same initial weights and the same Dropout seed.
std::pair<Sequential, Sequential> twins() {
  clear_session();
  set_random_seed(31);
  Sequential a = classifier();
  clear_session();
  set_random_seed(31);
  Sequential b = classifier();
  REQUIRE(flat_weights(a) == flat_weights(b));
  return {a, b};
}

// Sets stop_training after batch `batch` of epoch `epoch` (an interruption).
class StopAt : public Callback {
 public:
  StopAt(int epoch, std::int64_t batch) : epoch_(epoch), batch_(batch) {}
  void on_epoch_begin(int epoch, const Logs&) override { current_ = epoch; }
  void on_train_batch_end(std::int64_t batch, const Logs&) override {
    if (current_ == epoch_ && batch == batch_) model().set_stop_training(true);
  }

 private:
  int epoch_, current_ = 0;
  std::int64_t batch_;
};

// Records the batch numbers fit reports, per epoch.
class BatchLog : public Callback {
 public:
  void on_epoch_begin(int epoch, const Logs&) override { seen.emplace_back(epoch, std::vector<std::int64_t>{}); }
  void on_train_batch_begin(std::int64_t batch, const Logs&) override { seen.back().second.push_back(batch); }
  std::vector<std::pair<int, std::vector<std::int64_t>>> seen;
};

}  // namespace

// ---- the pipeline ---------------------------------------------------------------------------------

TEST_CASE("from_tensor_slices: element i is row i of every array") {
  auto [x, y] = counting(5);
  auto w = Tensor::from_vector<float>({5}, {1, 2, 3, 4, 5});
  auto ds = io::Dataset::from_tensor_slices({x}, {y}, w);
  CHECK(ds.cardinality() == 5);
  CHECK_FALSE(ds.batched());
  auto elements = ds.collect();
  REQUIRE(elements.size() == 5);
  CHECK(elements[3].x[0].shape() == Shape{2});
  CHECK(elements[3].x[0].to_vector<float>() == std::vector<float>{3, -3});
  CHECK(elements[3].y[0].to_vector<std::int32_t>() == std::vector<std::int32_t>{3});
  REQUIRE(elements[3].sample_weight);
  CHECK(elements[3].sample_weight->item() == 4.0);
  CHECK(ds.describe() == "from_tensor_slices(5 samples)");
  // Unlabeled data.
  auto unlabeled = io::Dataset::from_tensor_slices({x}).collect();
  CHECK(unlabeled[0].y.empty());
}

TEST_CASE("shard: every num_shards-th element from index on, as tf.data's shard") {
  auto [x, y] = counting(7);
  const auto ds = io::Dataset::from_tensor_slices({x}, {y});
  const auto ids = [](const io::Dataset& d) {
    std::vector<std::int32_t> out;
    for (const auto& e : d.collect()) out.push_back(e.y[0].to_vector<std::int32_t>()[0]);
    return out;
  };
  CHECK(ids(ds.shard(3, 0)) == std::vector<std::int32_t>{0, 3, 6});
  CHECK(ids(ds.shard(3, 2)) == std::vector<std::int32_t>{2, 5});
  CHECK(ds.shard(3, 0).cardinality() == 3);
  CHECK(ds.shard(3, 2).cardinality() == 2);
  CHECK(ds.shard(2, 1).describe() == "from_tensor_slices(7 samples).shard(2, 1)");
  CHECK(contains(message_of<ValueError>([&] { ds.shard(2, 2); }), "index in [0, num_shards)"));
}

TEST_CASE("shuffle: every sample once per epoch, reproducible per seed, a new order every epoch") {
  auto [x, y] = counting(50);
  for (std::int64_t buffer : {io::Dataset::kAll, std::int64_t{50}, std::int64_t{7}}) {
    CAPTURE(buffer);
    auto ds = io::Dataset::from_tensor_slices({x}, {y}).shuffle(buffer, 123);
    auto e0 = ids(ds.collect(0)), e1 = ids(ds.collect(1));
    CHECK(std::set<std::int32_t>(e0.begin(), e0.end()).size() == 50);
    CHECK(e0.size() == 50);
    CHECK(std::set<std::int32_t>(e1.begin(), e1.end()).size() == 50);
    CHECK(e0 != e1);  // reshuffled every epoch
    std::vector<std::int32_t> identity(50);
    std::iota(identity.begin(), identity.end(), 0);
    CHECK(e0 != identity);
    // The same seed and epoch: the same order, also from a new Dataset object (a resumed run).
    auto again = io::Dataset::from_tensor_slices({x}, {y}).shuffle(buffer, 123);
    CHECK(ids(again.collect(1)) == e1);
    CHECK(ids(io::Dataset::from_tensor_slices({x}, {y}).shuffle(buffer, 124).collect(0)) != e0);
    // Without reshuffling, every epoch takes epoch 0's order.
    auto fixed = io::Dataset::from_tensor_slices({x}, {y}).shuffle(buffer, 123, false);
    CHECK(ids(fixed.collect(0)) == ids(fixed.collect(3)));
  }
  // A full buffer is epoch_permutation(n, seed, epoch), the order fit(x, y) takes.
  auto full = ids(io::Dataset::from_tensor_slices({x}, {y}).shuffle(io::Dataset::kAll, 9).collect(2));
  auto perm = epoch_permutation(50, 9, 2);
  CHECK(std::vector<std::int64_t>(full.begin(), full.end()) == perm);
}

TEST_CASE("shuffle without a seed draws one from the global seed") {
  auto [x, y] = counting(30);
  set_random_seed(77);
  auto a = ids(io::Dataset::from_tensor_slices({x}, {y}).shuffle(io::Dataset::kAll).collect());
  set_random_seed(77);
  auto b = ids(io::Dataset::from_tensor_slices({x}, {y}).shuffle(io::Dataset::kAll).collect());
  CHECK(a == b);
}

TEST_CASE("batch: with and without drop_remainder") {
  auto [x, y] = counting(10);
  auto ds = io::Dataset::from_tensor_slices({x}, {y});
  auto batches = ds.batch(4).collect();
  CHECK(ds.batch(4).cardinality() == 3);
  CHECK(ds.batch(4).batched());
  REQUIRE(batches.size() == 3);
  CHECK(batches[0].x[0].shape() == Shape{4, 2});
  CHECK(batches[2].x[0].shape() == Shape{2, 2});
  CHECK(batches[1].x[0].to_vector<float>() == std::vector<float>{4, -4, 5, -5, 6, -6, 7, -7});
  CHECK(ids(batches) == ids(ds.collect()));

  auto dropped = ds.batch(4, true).collect();
  CHECK(ds.batch(4, true).cardinality() == 2);
  REQUIRE(dropped.size() == 2);
  CHECK(dropped[1].y[0].to_vector<std::int32_t>() == std::vector<std::int32_t>{4, 5, 6, 7});
  // Sample weights are stacked too.
  auto weighted = io::Dataset::from_tensor_slices({x}, {y}, Tensor::full({10}, 0.5)).batch(3).collect();
  REQUIRE(weighted[0].sample_weight);
  CHECK(weighted[0].sample_weight->shape() == Shape{3});
}

TEST_CASE("map: per element before batch, per batch after it") {
  auto [x, y] = counting(6);
  auto ds = io::Dataset::from_tensor_slices({x}, {y});
  std::atomic<int> calls{0};
  auto doubled = ds.map([&](io::Element e) {
                      ++calls;
                      CHECK(e.x[0].shape() == Shape{2});  // one sample
                      e.x[0] = io::to_float(e.x[0], 2.0, {2});
                      return e;
                    })
                     .batch(4)
                     .collect();
  CHECK(calls == 6);
  CHECK(doubled[0].x[0].to_vector<float>() == std::vector<float>{0, 0, 2, -2, 4, -4, 6, -6});

  calls = 0;
  auto after = ds.batch(4)
                   .map([&](io::Element e) {
                     ++calls;
                     CHECK(e.x[0].shape()[1] == 2);  // a batch (b, 2)
                     e.x[0] = io::to_float(e.x[0], 1.0, {-1, 1, 2});
                     return e;
                   })
                   .collect();
  CHECK(calls == 2);
  CHECK(after[0].x[0].shape() == Shape{4, 1, 2});
  CHECK(after[1].x[0].shape() == Shape{2, 1, 2});
  // The map's exception comes out with the pipeline and the element named.
  auto failing = ds.map([](io::Element e) -> io::Element {
    if (e.y[0].to_vector<std::int32_t>()[0] == 3) raise<ValueError>("bad sample");
    return e;
  });
  auto msg = message_of<ValueError>([&] { failing.collect(); });
  CHECK(contains(msg, "from_tensor_slices(6 samples).map(): the map function failed on element 3 of epoch 0: bad sample"));
}

TEST_CASE("cache: the stages before it run once; later epochs replay") {
  auto [x, y] = counting(9);
  std::atomic<int> calls{0};
  auto ds = io::Dataset::from_tensor_slices({x}, {y})
                .map([&](io::Element e) {
                  ++calls;
                  return e;
                })
                .cache()
                .shuffle(io::Dataset::kAll, 5)
                .batch(4);
  auto e0 = ds.collect(0), e1 = ds.collect(1), e2 = ds.collect(2);
  CHECK(calls == 9);
  CHECK(ids(e0) != ids(e1));  // shuffled after the cache: a new order each epoch
  auto sorted = ids(e2);
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == ids(io::Dataset::from_tensor_slices({x}, {y}).collect()));
  // A copy of the Dataset shares the cache.
  auto copy = ds;
  copy.collect(3);
  CHECK(calls == 9);
  // An incomplete first pass does not fill it.
  calls = 0;
  auto fresh = io::Dataset::from_tensor_slices({x}, {y}).map([&](io::Element e) {
                 ++calls;
                 return e;
               }).cache();
  {
    auto it = fresh.iterate(0);
    io::Element e;
    it.next(e);
  }
  fresh.collect(0);
  fresh.collect(1);
  CHECK(calls == 1 + 9);
}

TEST_CASE("prefetch: the same sequence; the allocator hook sees every tensor") {
  auto [x, y] = counting(37);
  auto base = io::Dataset::from_tensor_slices({x}, {y}).shuffle(10, 3).batch(5);
  for (std::int64_t buffer : {1, 2, 8}) {
    CAPTURE(buffer);
    for (int epoch : {0, 1}) {
      auto plain = base.collect(epoch);
      auto fetched = base.prefetch(buffer).collect(epoch);
      REQUIRE(plain.size() == fetched.size());
      for (std::size_t i = 0; i < plain.size(); ++i) {
        CHECK(plain[i].x[0].to_vector<float>() == fetched[i].x[0].to_vector<float>());
        CHECK(plain[i].y[0].to_vector<std::int32_t>() == fetched[i].y[0].to_vector<std::int32_t>());
      }
    }
  }
  std::atomic<int> copies{0};
  auto pinned = base.prefetch(2, [&](const Tensor& t) {
    ++copies;
    return t.clone();
  });
  CHECK(ids(pinned.collect()) == ids(base.collect()));
  CHECK(copies == 8 * 2);  // 8 batches, x and y each
  CHECK(contains(message_of<ValueError>([&] { base.prefetch(0); }), "buffer_size must be at least 1"));
}

TEST_CASE("prefetch: a producer exception is rethrown in the consumer, with its type and context") {
  auto [x, y] = counting(20);
  auto ds = io::Dataset::from_tensor_slices({x}, {y})
                .map([](io::Element e) -> io::Element {
                  if (e.y[0].to_vector<std::int32_t>()[0] == 13) raise<ShapeError>("sample 13 is malformed");
                  return e;
                })
                .batch(4)
                .prefetch(2);
  auto it = ds.iterate(0);
  io::Element e;
  int got = 0;
  std::string msg;
  try {
    while (it.next(e)) ++got;
  } catch (const ShapeError& error) {
    msg = error.what();
  }
  CHECK(got == 3);  // batches 0..2; batch 3 holds sample 13
  CHECK(contains(msg, "prefetch(2): the prefetch thread failed after 3 elements of epoch 0"));
  CHECK(contains(msg, "sample 13 is malformed"));
  // A non-tower exception becomes a tower::Error.
  auto foreign = io::Dataset::from_tensor_slices({x}, {y})
                     .map([](io::Element) -> io::Element { throw std::runtime_error("disk gone"); })
                     .prefetch(1);
  CHECK(contains(message_of<Error>([&] { foreign.collect(); }), "disk gone"));
}

TEST_CASE("prefetch: destroying an iteration mid-epoch stops its thread") {
  auto [x, y] = counting(1000);
  std::atomic<int> produced{0};
  auto ds = io::Dataset::from_tensor_slices({x}, {y})
                .map([&](io::Element e) {
                  ++produced;
                  return e;
                })
                .prefetch(4);
  {
    auto it = ds.iterate(0);
    io::Element e;
    for (int i = 0; i < 10; ++i) REQUIRE(it.next(e));
  }  // joins the producer, which was blocked on the full queue
  const int after = produced;
  CHECK(after >= 10);
  CHECK(after <= 10 + 4 + 1);  // the queue and the element in the producer's hands
  CHECK(produced == after);    // nothing runs any more
  // An iteration never read, and one read to the end, end cleanly too.
  { auto unused = ds.iterate(1); }
  CHECK(ds.collect(1).size() == 1000);
}

TEST_CASE("iterate(epoch, skip) skips the first elements of that epoch's order") {
  auto [x, y] = counting(23);
  for (bool prefetch : {false, true}) {
    CAPTURE(prefetch);
    auto ds = io::Dataset::from_tensor_slices({x}, {y}).shuffle(io::Dataset::kAll, 8).batch(4);
    if (prefetch) ds = ds.prefetch(2);
    auto all = ids(ds.collect(1));
    auto it = ds.iterate(1, 2);
    std::vector<io::Element> rest;
    io::Element e;
    while (it.next(e)) rest.push_back(e);
    CHECK(ids(rest) == std::vector<std::int32_t>(all.begin() + 8, all.end()));
  }
}

TEST_CASE("Dataset: bad arguments get clear errors") {
  auto [x, y] = counting(10);
  auto [x9, y9] = counting(9);
  auto msg = message_of<ValueError>([&] { io::Dataset::from_tensor_slices({x}, {y9}); });
  CHECK(contains(msg, "every array needs the same number of samples"));
  CHECK(contains(msg, "x[0] 10, y[0] 9"));
  CHECK(contains(message_of<ValueError>([&] { io::Dataset::from_tensor_slices({}, {y}); }), "needs at least one x array"));
  CHECK(contains(message_of<ValueError>([&] { io::Dataset::from_tensor_slices({Tensor::zeros({0, 3})}); }),
                 "no samples"));
  CHECK(contains(message_of<ShapeError>([&] { io::Dataset::from_tensor_slices({Tensor::scalar(1.0)}); }), "scalar"));
  auto ds = io::Dataset::from_tensor_slices({x}, {y});
  CHECK(contains(message_of<ValueError>([&] { ds.batch(0); }), "batch_size must be at least 1, got 0"));
  CHECK(contains(message_of<ValueError>([&] { ds.shuffle(0); }), "buffer_size must be at least 1"));
  CHECK(contains(message_of<ValueError>([&] { ds.map(nullptr); }), "the function is empty"));
  // Elements of different shapes cannot be batched.
  auto ragged = ds.map([](io::Element e) {
    if (e.y[0].to_vector<std::int32_t>()[0] == 2) e.x[0] = Tensor::zeros({3});
    return e;
  });
  msg = message_of<ShapeError>([&] { ragged.batch(4).collect(); });
  CHECK(contains(msg, "element 2 of a batch has x[0] of shape (3,)"));
}

// ---- fit, evaluate and predict on a Dataset ---------------------------------------------------------

TEST_CASE("fit on a Dataset gives the weights fit on arrays gives, with the same order") {
  auto [x, y] = blobs(50, 3);
  for (bool shuffle : {false, true}) {
    CAPTURE(shuffle);
    auto [a, b] = twins();
    auto ha = a.fit(x, y, {.batch_size = 8, .epochs = 3, .verbose = 0, .shuffle = shuffle, .seed = 21});
    auto ds = io::Dataset::from_tensor_slices({x}, {y});
    if (shuffle) ds = ds.shuffle(io::Dataset::kAll, 21);
    auto hb = b.fit(ds.batch(8).prefetch(2), {.epochs = 3, .verbose = 0});
    CHECK(flat_weights(a) == flat_weights(b));
    CHECK(ha.history.at("loss") == hb.history.at("loss"));
    CHECK(ha.history.at("accuracy") == hb.history.at("accuracy"));
  }
}

TEST_CASE("evaluate and predict on a Dataset equal the array versions") {
  clear_session();
  auto [x, y] = blobs(23, 4);
  Sequential model = classifier();
  model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0});
  auto weights = Tensor::from_vector<float>({23}, std::vector<float>(23, 0.5f));
  auto arrays = model.evaluate(x, y, {.batch_size = 5, .verbose = 0, .sample_weight = weights});
  auto ds = io::Dataset::from_tensor_slices({x}, {y}, weights).batch(5);
  auto data = model.evaluate(ds, {.verbose = 0});
  CHECK(arrays.entries() == data.entries());
  auto p_arrays = model.predict(x, {.batch_size = 5});
  auto p_data = model.predict(io::Dataset::from_tensor_slices({x}).batch(5).prefetch(1));
  REQUIRE(p_data.size() == 1);
  CHECK(p_data[0].shape() == Shape{23, 3});
  CHECK(p_arrays.to_vector<float>() == p_data[0].to_vector<float>());
  // predict ignores labels.
  CHECK(model.predict(ds)[0].to_vector<float>() == p_arrays.to_vector<float>());
}

TEST_CASE("fit: validation from a Dataset, uint8 IDX-like data, class_weight per batch") {
  auto [x, y] = blobs(40, 5);
  auto [vx, vy] = blobs(12, 6);
  auto [a, b] = twins();
  const std::map<std::int64_t, double> class_weight{{0, 2.0}, {2, 0.5}};
  auto ha = a.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .validation_data = {{{vx}, {vy}}},
                         .shuffle = false, .class_weight = class_weight, .validation_batch_size = 4});
  auto hb = b.fit(io::Dataset::from_tensor_slices({x}, {y}).batch(8),
                  {.epochs = 2, .verbose = 0,
                   .validation_dataset = std::make_shared<io::Dataset>(io::Dataset::from_tensor_slices({vx}, {vy}).batch(4)),
                   .class_weight = class_weight});
  CHECK(ha.history.at("val_loss") == hb.history.at("val_loss"));
  CHECK(ha.history.at("loss") == hb.history.at("loss"));
  CHECK(flat_weights(a) == flat_weights(b));

  // A Sequential without an Input builds from the dataset's first batch; uint8 labels work.
  clear_session();
  Sequential lazy({layers::Dense(3, {.activation = "softmax"})});
  lazy.compile("sgd", "sparse_categorical_crossentropy");
  auto labels = Tensor::from_vector<std::uint8_t>({6}, {0, 1, 2, 0, 1, 2});
  lazy.fit(io::Dataset::from_tensor_slices({Tensor::full({6, 5}, 0.1)}, {labels}).batch(4), {.verbose = 0});
  CHECK(lazy.inputs()[0].shape() == Shape{-1, 5});
}

TEST_CASE("fit/evaluate/predict on a Dataset: bad inputs get clear errors") {
  clear_session();
  auto [x, y] = blobs(10, 7);
  Sequential model = classifier();
  auto ds = io::Dataset::from_tensor_slices({x}, {y});
  CHECK(contains(message_of<ValueError>([&] { model.fit(ds, {.verbose = 0}); }), "call .batch(batch_size)"));
  CHECK(contains(message_of<ValueError>([&] { model.fit(ds.batch(4), {.batch_size = 64, .verbose = 0}); }),
                 "are for arrays"));
  CHECK(contains(message_of<ValueError>([&] { model.fit(io::Dataset::from_tensor_slices({x}).batch(4), {.verbose = 0}); }),
                 "have no labels (y)"));
  CHECK(contains(message_of<ValueError>([&] { model.evaluate(io::Dataset::from_tensor_slices({x}).batch(4), {.verbose = 0}); }),
                 "have no labels (y)"));
  CHECK(contains(message_of<ValueError>([&] { model.fit(ds.batch(16, true), {.verbose = 0}); }),
                 "gave no batches in epoch 0"));
  CHECK(contains(message_of<ValueError>([&] { model.predict(ds.batch(16, true)); }), "gave no batches"));
  // Two x arrays for a model with one input.
  CHECK(contains(message_of<ValueError>([&] { model.fit(io::Dataset::from_tensor_slices({x, x}, {y}).batch(4), {.verbose = 0}); }),
                 "expects 1 input arrays, got 2"));
  // Samples of the wrong shape.
  CHECK(contains(message_of<ShapeError>([&] {
                   model.evaluate(io::Dataset::from_tensor_slices({Tensor::zeros({6, 5})}, {Tensor::zeros({6}, DType::int32)}).batch(3),
                                  {.verbose = 0});
                 }),
                 "expects arrays of shape (None, 4), got (3, 5)"));
}

// ---- resuming fit mid-epoch -----------------------------------------------------------------------

namespace {

// Trains `model` (fresh from classifier()) on arrays or on a shuffled Dataset made now, so that the
// dataset's seed is drawn at the same point of the program in every run.
History train(Sequential& model, const Tensor& x, const Tensor& y, bool dataset, FitOptions options) {
  options.verbose = 0;
  if (!dataset) {
    options.batch_size = 8;
    return model.fit(x, y, options);
  }
  auto ds = io::Dataset::from_tensor_slices({x}, {y}).shuffle(io::Dataset::kAll).batch(8).prefetch(2);
  return model.fit(ds, options);
}

}  // namespace

TEST_CASE("resume: 1.5 epochs, then a new model with the state copied and set_initial_position, equals 3 epochs") {
  auto [x, y] = blobs(44, 11);  // 6 batches of 8 per epoch, the last one of 4
  for (bool dataset : {false, true}) {
    CAPTURE(dataset);
    // Each run is a "fresh process": the same global seed and the same program order, so Dropout's
    // seed (drawn when the layer is made) and the shuffle seed (drawn by fit or shuffle()) agree.
    clear_session();
    set_random_seed(2024);
    Sequential whole = classifier();
    train(whole, x, y, dataset, {.epochs = 3});
    CHECK(whole.optimizer().iterations() == 18);

    clear_session();
    set_random_seed(2024);
    Sequential first = classifier();
    train(first, x, y, dataset, {.epochs = 3, .callbacks = {std::make_shared<StopAt>(1, 2)}});
    CHECK(first.optimizer().iterations() == 6 + 3);  // epoch 0 and batches 0..2 of epoch 1
    CHECK(flat_weights(first) != flat_weights(whole));

    clear_session();
    set_random_seed(2024);
    Sequential resumed = classifier();
    resumed.set_weights(first.get_weights());
    std::map<std::string, Tensor> slots;
    for (const auto& v : first.optimizer().variables()) slots[v->name()] = v->value().clone();
    REQUIRE_FALSE(slots.empty());
    resumed.optimizer().set_state(first.optimizer().iterations(), slots);
    resumed.set_initial_position(1, 3);
    auto log = std::make_shared<BatchLog>();
    auto history = train(resumed, x, y, dataset, {.epochs = 3, .callbacks = {log}});
    CHECK(resumed.optimizer().iterations() == 18);
    CHECK(flat_weights(resumed) == flat_weights(whole));
    // Skipped batches get no callbacks; the numbering goes on from where it stopped.
    REQUIRE(log->seen.size() == 2);
    CHECK(log->seen[0].first == 1);
    CHECK(log->seen[0].second == std::vector<std::int64_t>{3, 4, 5});
    CHECK(log->seen[1].second == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5});
    CHECK(history.epoch == std::vector<int>{1, 2});
    // The position is forgotten after one fit.
    resumed.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .callbacks = {log}});
    CHECK(log->seen.back().first == 0);
  }
}

TEST_CASE("resume: the masks of Dropout depend on the optimizer step, not on how many steps this graph ran") {
  // Without the reset of the random counters a reloaded model would draw step 0's masks again.
  auto [x, y] = blobs(16, 12);
  clear_session();
  set_random_seed(5);
  Sequential a = classifier();
  a.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  clear_session();
  set_random_seed(5);
  Sequential b = classifier();
  b.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .shuffle = false});
  clear_session();
  set_random_seed(5);
  Sequential c = classifier();
  c.set_weights(b.get_weights());
  std::map<std::string, Tensor> slots;
  for (const auto& v : b.optimizer().variables()) slots[v->name()] = v->value().clone();
  c.optimizer().set_state(1, slots);
  c.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false, .initial_epoch = 1});
  CHECK(flat_weights(c) == flat_weights(a));
  CHECK(contains(message_of<ValueError>([&] { c.set_initial_position(-1, 0); }), "must be >= 0"));
}

// ---- from IDX files ---------------------------------------------------------------------------------

TEST_CASE("Dataset::from_idx: an MNIST-style split, raw or gzip") {
  const auto dir = std::filesystem::temp_directory_path() / ("tower_test_dataset_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto idx = [](const std::vector<std::uint32_t>& dims, std::size_t payload) {
    std::string s{'\0', '\0', '\x08', static_cast<char>(dims.size())};
    for (auto d : dims)
      for (int shift : {24, 16, 8, 0}) s += static_cast<char>((d >> shift) & 0xff);
    for (std::size_t i = 0; i < payload; ++i) s += static_cast<char>(i % 10);
    return s;
  };
  std::ofstream(dir / "train-images-idx3-ubyte", std::ios::binary) << idx({7, 3, 3}, 63);
  {
    const std::string labels = idx({7}, 7);
    gzFile f = gzopen((dir / "train-labels-idx1-ubyte.gz").c_str(), "wb");
    gzwrite(f, labels.data(), static_cast<unsigned>(labels.size()));
    gzclose(f);
  }
  auto ds = io::Dataset::from_idx(dir.string(), "train");
  CHECK(ds.cardinality() == 7);
  auto batches = ds.batch(4).collect();
  REQUIRE(batches.size() == 2);
  CHECK(batches[0].x[0].shape() == Shape{4, 3, 3});
  CHECK(batches[0].x[0].dtype() == DType::uint8);
  CHECK(batches[1].y[0].to_vector<std::uint8_t>() == std::vector<std::uint8_t>{4, 5, 6});
  std::filesystem::remove_all(dir);
}

TEST_CASE("pinned_memory: page-locked host memory when a GPU is visible, else the ordinary path") {
  const auto allocator = io::pinned_memory();
  CHECK(static_cast<bool>(allocator) == (pinned_host_device() != nullptr));
  CHECK(static_cast<bool>(allocator) == (device_count(DeviceKind::cuda) > 0));
  auto [x, y] = counting(37);
  auto base = io::Dataset::from_tensor_slices({x}, {y}).batch(5);
  auto fetched = base.prefetch(2, allocator).collect();
  auto plain = base.collect();
  REQUIRE(fetched.size() == plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    CHECK(fetched[i].x[0].device().host_accessible());
    if (allocator) CHECK(&fetched[i].x[0].device() == pinned_host_device());
    CHECK(plain[i].x[0].to_vector<float>() == fetched[i].x[0].to_vector<float>());
  }
}
