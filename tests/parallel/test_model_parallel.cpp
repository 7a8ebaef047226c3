// Model parallelism beyond towers (issue 38): a model over one CPU device's memory limit trains on two
// (placement, pipeline), and Keras 3's distribution API (tower::distribution): DeviceMesh, TensorLayout,
// LayoutMap's lookup, DataParallel and ModelParallel as data parallelism, sharded layouts refused.
#include <doctest/doctest.h>

#include <cmath>

#include "apps/text_models.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tests/support/temp_dir.h"
#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/distribution.h"
#include "tower/parallel/pipeline_model.h"
#include "tower/parallel/towers.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::TempDir;
namespace dist = tower::distribution;

TEST_CASE("model parallelism: a model over one device's memory limit is refused there and trains on two") {
  // 4 Dense layers, 662,026 parameters: with Adam, 10.6 MB of weights, gradients and slots. Each of
  // cpu:1 and cpu:2 may hold 9 MiB: one device cannot train it (it needs 10.2 MiB); two, by placement
  // (6.1 MiB on cpu:1) or as a pipeline of 2 micro-batches (8.1 MiB: a micro-batch's gradient
  // contributions are alive beside their sums), can.
  struct Limits {
    Limits() {
      for (int d : {1, 2}) set_cpu_device_memory_limit(d, 9u << 20);
    }
    ~Limits() {
      for (int d : {1, 2}) set_cpu_device_memory_limit(d, 0);
    }
  } limits;
  const Tensor x = random_normal({32, 256}, 0, 1, 6);
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 32; ++i) labels.push_back(i % 10);
  const Tensor y = Tensor::from_vector<std::int32_t>({32}, labels);
  // first..last: the devices of the layers (the first two, the last two).
  const auto model = [](const std::string& first, const std::string& last) {
    clear_session();
    set_random_seed(4);
    KerasTensor input = layers::Input({256}), h;
    {
      DefaultDeviceScope on(first);
      h = layers::Dense(512, {.activation = "relu", .name = "d1"})(input);
      h = layers::Dense(512, {.activation = "relu", .name = "d2"})(h);
    }
    DefaultDeviceScope on(last);
    h = layers::Dense(512, {.activation = "relu", .name = "d3"})(h);
    return Model(input, layers::Dense(10, {.activation = "softmax", .name = "d4"})(h));
  };
  {
    Model one = model("cpu:1", "cpu:1");
    one.compile(optimizers::Adam(), "sparse_categorical_crossentropy");
    const std::string msg = message_of<OutOfMemoryError>([&] { one.fit(x, y, {.batch_size = 16, .verbose = 0}); });
    CHECK_MESSAGE(contains(msg, "cpu:1: out of memory allocating"), msg);
    CHECK_MESSAGE(contains(msg, "of its memory limit of 9.00 MiB"), msg);
  }
  {
    Model placed = model("cpu:1", "cpu:2");
    placed.compile(optimizers::Adam(), "sparse_categorical_crossentropy");
    placed.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0});
    CHECK(device("cpu:1").memory_stats().in_use <= (9u << 20));
  }
  {
    Model inner = model("cpu:0", "cpu:0");
    Model piped = parallel::pipeline_model(inner, {"cpu:1", "cpu:2"}, {.micro_batches = 2});
    piped.compile(optimizers::Adam(), "sparse_categorical_crossentropy");
    const auto history = piped.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0});
    CHECK(std::isfinite(history.history.at("loss").back()));
  }
  // Tensor parallel: every kernel split by columns over cpu:1 and cpu:2 (the wholes are kept on cpu:0).
  dist::LayoutMap layout_map(dist::DeviceMesh({1, 2}, {"batch", "model"}, {"cpu:1", "cpu:2"}));
  layout_map.set("d\\d/kernel", {std::nullopt, "model"});
  Model tensor_parallel = [&] {
    auto scope = dist::scope(std::make_shared<const dist::ModelParallel>(layout_map));
    return model("cpu:0", "cpu:0");
  }();
  tensor_parallel.compile(optimizers::Adam(), "sparse_categorical_crossentropy");
  const auto sharded = tensor_parallel.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0});
  CHECK(std::isfinite(sharded.history.at("loss").back()));
  CHECK(device("cpu:1").memory_stats().in_use <= (9u << 20));  // 6.9 MiB; cpu:2 5.0 MiB (docs/benchmarks.md)
}

TEST_CASE("distribution: DeviceMesh and TensorLayout check what Keras checks") {
  const dist::DeviceMesh mesh({2, 2}, {"batch", "model"}, {"cpu:1", "cpu:2", "cpu:3", "cpu:4"});
  CHECK(mesh.to_string() == "<DeviceMesh shape=(2, 2), axis_names=['batch', 'model']>");
  CHECK(mesh.devices_along("batch") == std::vector<std::string>{"cpu:1", "cpu:3"});
  CHECK(mesh.devices_along("model") == std::vector<std::string>{"cpu:1", "cpu:2"});
  CHECK(mesh.axis_size("model") == 2);
  const auto refused = [](auto make) { return message_of<ValueError>(make); };
  CHECK(contains(refused([] { dist::DeviceMesh({2, 2}, {"batch"}, {"cpu:1", "cpu:2", "cpu:3", "cpu:4"}); }),
                 "shape and axis_names should have same size. Received: shape=(2, 2), axis_names=['batch']"));
  CHECK(contains(refused([] { dist::DeviceMesh({3}, {"batch"}, {"cpu:1", "cpu:2"}); }),
                 "shape does not match the number of devices. Received: shape=(3,); 2 device(s) (cpu:1, cpu:2)"));
  CHECK(contains(refused([] { dist::DeviceMesh({}, {}); }), "shape and axis_names cannot be empty"));
  CHECK(contains(refused([] { dist::DeviceMesh({2}, {"batch"}, {"cpu:1", "cpu:1"}); }), "device cpu:1 is listed twice"));
  CHECK(contains(refused([&] { (void)mesh.axis("data"); }), "has no axis 'data'; its axes are ['batch', 'model']"));

  auto shared = std::make_shared<const dist::DeviceMesh>(mesh);
  const dist::TensorLayout column({std::nullopt, "model"}, shared);
  CHECK(column.to_string() == "(None, 'model')");
  CHECK(column.sharded());
  CHECK_FALSE(dist::TensorLayout({std::nullopt, std::nullopt}, shared).sharded());
  CHECK(contains(refused([&] { dist::TensorLayout({"rows"}, shared); }),
                 "invalid axis names for Layout. Valid axis names: ['batch', 'model'], got 'rows'"));
  dist::TensorLayout later({"model"});
  later.set_device_mesh(shared);
  CHECK(contains(refused([&] { later.set_device_mesh(shared); }), "cannot override device mesh value"));
}

TEST_CASE("distribution: LayoutMap finds an exact key first, then the one key whose regex matches in full") {
  dist::LayoutMap layout_map(dist::DeviceMesh({1, 2}, {"batch", "model"}, {"cpu:1", "cpu:2"}));
  layout_map.set("dense.*kernel", {std::nullopt, "model"});
  layout_map.set("dense.*bias", {"model"});
  layout_map.set("conv2d.*kernel", {std::nullopt, std::nullopt, std::nullopt, "model"});
  layout_map.set("dense_1/kernel", {"model", std::nullopt});
  CHECK(layout_map.get("dense_1/kernel")->to_string() == "('model', None)");  // the exact key wins
  CHECK(layout_map.get("dense_2/kernel")->to_string() == "(None, 'model')");
  CHECK(layout_map.get("dense/bias")->to_string() == "('model',)");
  CHECK(layout_map.get("my_model/conv2d_123/kernel") == std::nullopt);  // in full, not a substring (Keras >= 3.14)
  CHECK(layout_map.get("conv2d_1/kernel")->axes().size() == 4);
  CHECK(layout_map.get("conv3d_1/kernel") == std::nullopt);             // no match: replicated
  CHECK(layout_map.get("dense_2/kernel")->device_mesh() == layout_map.device_mesh());  // took the map's mesh
  layout_map.set(".*kernel", {std::nullopt, "model"});
  const std::string two = message_of<ValueError>([&] { (void)layout_map.get("dense_2/kernel"); });
  CHECK_MESSAGE(contains(two, "path 'dense_2/kernel' matches multiple layout specification keys: ['dense.*kernel', "
                              "'.*kernel']"),
                two);
  CHECK(contains(message_of<ValueError>([&] { layout_map.set("dense.*bias", {std::nullopt}); }),
                 "dense.*bias already exist in the LayoutMap with value ('model',)"));
  CHECK(contains(message_of<ValueError>([&] { layout_map.set("batch_axis", {"data"}); }), "got 'data'"));
  dist::LayoutMap bad(dist::DeviceMesh({2}, {"model"}, {"cpu:1", "cpu:2"}));
  bad.set("dense(", {"model"});
  CHECK(contains(message_of<ValueError>([&] { (void)bad.get("dense/kernel"); }),
                 "key 'dense(' is not a valid regular expression"));
}

TEST_CASE("distribution: DataParallel and a replicated ModelParallel train as towers; a sharded layout is refused") {
  const Tensor x = random_normal({20, 6}, 0, 1, 3);
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 20; ++i) labels.push_back(i % 3);
  const Tensor y = Tensor::from_vector<std::int32_t>({20}, labels);
  const auto make = [] {
    clear_session();
    set_random_seed(8);
    Sequential m;
    m.add(layers::Input({6}));
    m.add(layers::Dense(8, {.activation = "relu"}));
    m.add(layers::Dense(3, {.activation = "softmax"}));
    m.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    return m;
  };
  const FitOptions fit{.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false};
  Model one = make();
  one.fit(x, y, fit);
  REQUIRE(dist::distribution() == nullptr);

  auto data_parallel = std::make_shared<const dist::DataParallel>(std::vector<std::string>{"cpu:1", "cpu:2"});
  Model dp = [&] {
    auto scope = dist::scope(data_parallel);
    CHECK(dist::distribution() == data_parallel);
    CHECK(data_parallel->get_data_layout(2).to_string() == "('batch', None)");
    return make();
  }();
  CHECK(dist::distribution() == nullptr);  // the scope ended; the model keeps its distribution
  CHECK(parallel::tower_devices(dp) == std::vector<std::string>{"cpu:1", "cpu:2"});
  dp.fit(x, y, fit);
  const auto wa = one.get_weights(), wb = dp.get_weights();
  for (std::size_t i = 0; i < wa.size(); ++i) check_close(wb[i], wa[i], 1e-5, 1e-6);

  // ModelParallel on a 2 x 2 mesh whose layouts shard nothing over an axis of more than one device: data
  // parallelism over its batch axis (cpu:1 and cpu:3).
  dist::LayoutMap replicated(dist::DeviceMesh({2, 2}, {"batch", "model"}, {"cpu:1", "cpu:2", "cpu:3", "cpu:4"}));
  replicated.set("dense.*kernel", {std::nullopt, std::nullopt});
  auto model_parallel = std::make_shared<const dist::ModelParallel>(replicated, "batch");
  dist::set_distribution(model_parallel);
  Model mp = make();
  dist::set_distribution(nullptr);
  CHECK(mp.replication() != nullptr);
  mp.fit(x, y, fit);
  const auto wc = mp.get_weights();
  for (std::size_t i = 0; i < wa.size(); ++i) check_close(wc[i], wa[i], 1e-5, 1e-6);

}

namespace {

// Input(6) -> Dense(8, relu) -> Dense(4, tanh) -> Dense(2, softmax) under `distribution` (none: one device).
Model sharded_mlp(std::shared_ptr<const dist::Distribution> distribution) {
  auto scope = dist::scope(std::move(distribution));
  clear_session();
  set_random_seed(12);
  Sequential m;
  m.add(layers::Input({6}));
  m.add(layers::Dense(8, {.activation = "relu"}));
  m.add(layers::Dense(4, {.activation = "tanh"}));
  m.add(layers::Dense(2, {.activation = "softmax"}));
  return m;
}

std::shared_ptr<const dist::ModelParallel> sharded(const std::vector<std::string>& devices,
                                                    std::vector<std::optional<std::string>> kernel,
                                                    std::vector<std::optional<std::string>> bias) {
  dist::LayoutMap layout_map(dist::DeviceMesh({1, static_cast<std::int64_t>(devices.size())}, {"batch", "model"}, devices));
  layout_map.set("dense.*kernel", std::move(kernel));
  if (!bias.empty()) layout_map.set("dense.*bias", std::move(bias));
  return std::make_shared<const dist::ModelParallel>(layout_map, "batch");
}

}  // namespace

TEST_CASE("tensor parallel: kernels sharded by columns or rows over 2 CPU devices train to one device's weights") {
  const Tensor x = random_normal({20, 6}, 0, 1, 3);
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 20; ++i) labels.push_back(i % 2);
  const Tensor y = Tensor::from_vector<std::int32_t>({20}, labels);
  const FitOptions fit{.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false};
  for (const char* optimizer : {"sgd", "adam"}) {
    Model one = sharded_mlp(nullptr);
    one.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy");
    one.fit(x, y, fit);
    struct Case {
      const char* name;
      std::shared_ptr<const dist::ModelParallel> distribution;
      int axis;  // of the kernels' pieces
    };
    for (const Case& c : {Case{"column", sharded({"cpu:1", "cpu:2"}, {std::nullopt, "model"}, {"model"}), 1},
                          Case{"row", sharded({"cpu:2", "cpu:1"}, {"model", std::nullopt}, {}), 0}}) {
      CAPTURE(optimizer);
      CAPTURE(c.name);
      Model mp = sharded_mlp(c.distribution);
      mp.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy");
      mp.fit(x, y, fit);
      const auto wa = one.get_weights(), wb = mp.get_weights();  // the wholes, gathered from their pieces
      for (std::size_t i = 0; i < wa.size(); ++i) check_close(wb[i], wa[i], 1e-5, 1e-6);
      const auto kernel = mp.layers()[0]->weights()[0];
      const auto pieces = kernel->pieces();
      REQUIRE(pieces.size() == 2);
      CHECK(pieces[0]->shape()[c.axis] * 2 == kernel->shape()[c.axis]);
      CHECK(pieces[0]->device().name() == c.distribution->device_mesh().devices()[0]);
      CHECK(pieces[1]->device().name() == c.distribution->device_mesh().devices()[1]);
      for (const auto& slot : mp.optimizer().variables())  // the wholes' slots: their pieces were updated
        if (slot->name().find("dense/kernel") != std::string::npos) CHECK(slot->pieces().size() == 2);
      check_close(mp.predict(x, {.verbose = 0}), one.predict(x, {.verbose = 0}), 1e-5, 1e-6);
    }
  }
}

TEST_CASE("tensor parallel: files hold the whole weights; a file loads into pieces; what cannot be sharded is refused") {
  TempDir dir("tensor_parallel");
  const Tensor x = random_normal({10, 6}, 0, 1, 5);
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 10; ++i) labels.push_back(i % 2);
  const Tensor y = Tensor::from_vector<std::int32_t>({10}, labels);
  Model mp = sharded_mlp(sharded({"cpu:1", "cpu:2"}, {std::nullopt, "model"}, {"model"}));
  mp.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
  mp.fit(x, y, {.batch_size = 5, .epochs = 1, .verbose = 0});
  mp.save(dir / "sharded.h5");  // gathers: the file of a one-device model
  Model loaded = models::load_model(dir / "sharded.h5");
  for (const auto& w : loaded.weights()) CHECK(w->pieces().empty());
  check_close(loaded.predict(x, {.verbose = 0}), mp.predict(x, {.verbose = 0}), 1e-6, 1e-6);
  // The other way: a one-device file (or set_weights) into a sharded model reaches its pieces.
  Model one = sharded_mlp(nullptr);
  one.save_weights(dir / "one.weights.h5");
  mp.load_weights(dir / "one.weights.h5");
  check_close(mp.predict(x, {.verbose = 0}), one.predict(x, {.verbose = 0}), 1e-6, 1e-6);
  mp.set_weights(loaded.get_weights());
  check_close(mp.predict(x, {.verbose = 0}), loaded.predict(x, {.verbose = 0}), 1e-6, 1e-6);

  const auto refused = [&](std::shared_ptr<const dist::Distribution> distribution) {
    Model m = sharded_mlp(std::move(distribution));
    m.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    return message_of<ValueError>([&] { m.fit(x, y, {.batch_size = 5, .verbose = 0}); });
  };
  std::string msg = refused(sharded({"cpu:1", "cpu:2", "cpu:3"}, {std::nullopt, "model"}, {}));
  CHECK_MESSAGE(contains(msg, "\"dense/kernel\" (6, 8) cannot be sharded over axis 'model' of 3 devices: its "
                              "dimension 1 (8) is not a multiple of 3"),
                msg);
  dist::LayoutMap on_batch(dist::DeviceMesh({2, 1}, {"batch", "model"}, {"cpu:1", "cpu:2"}));
  on_batch.set("dense.*kernel", {std::nullopt, "batch"});
  msg = refused(std::make_shared<const dist::ModelParallel>(on_batch));
  CHECK_MESSAGE(contains(msg, "\"dense/kernel\" is sharded over the batch axis 'batch'"), msg);
  dist::LayoutMap both(dist::DeviceMesh({1, 2, 2}, {"batch", "rows", "model"}, {"cpu:1", "cpu:2", "cpu:3", "cpu:4"}));
  both.set("dense.*kernel", {"rows", "model"});
  msg = refused(std::make_shared<const dist::ModelParallel>(both));
  CHECK_MESSAGE(contains(msg, "the layout ('rows', 'model') of \"dense/kernel\" shards 2 dimensions"), msg);
  dist::LayoutMap rank(dist::DeviceMesh({1, 2}, {"batch", "model"}, {"cpu:1", "cpu:2"}));
  rank.set("dense/kernel", {"model"});
  msg = refused(std::make_shared<const dist::ModelParallel>(rank));
  CHECK_MESSAGE(contains(msg, "the layout ('model',) of \"dense/kernel\" has 1 axes, and the variable (6, 8) has rank 2"),
                msg);
}

TEST_CASE("tensor parallel: an Embedding table by rows and a Conv2D kernel by output channels") {
  const auto model = [](std::shared_ptr<const dist::Distribution> distribution) {
    auto scope = dist::scope(std::move(distribution));
    clear_session();
    set_random_seed(3);
    KerasTensor ids = layers::Input({3}, {.dtype = DType::int32});
    KerasTensor e = layers::Flatten()(layers::Embedding(10, 4)(ids));  // (3 * 4)
    KerasTensor image = layers::Input({5, 5, 1});
    KerasTensor c = layers::Flatten()(layers::Conv2D(4, {3, 3}, {.activation = "relu"})(image));
    KerasTensor out = layers::Dense(2, {.activation = "softmax"})(layers::Concatenate()({e, c}));
    Model m({ids, image}, {out});
    m.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    return m;
  };
  std::vector<std::int32_t> id_values, labels;
  for (int i = 0; i < 12; ++i) id_values.push_back((i * 7) % 10);
  for (int i = 0; i < 4; ++i) labels.push_back(i % 2);
  const Tensor ids = Tensor::from_vector<std::int32_t>({4, 3}, id_values);
  const Tensor images = random_normal({4, 5, 5, 1}, 0, 1, 2);
  const Tensor y = Tensor::from_vector<std::int32_t>({4}, labels);
  dist::LayoutMap layout_map(dist::DeviceMesh({1, 2}, {"batch", "model"}, {"cpu:1", "cpu:2"}));
  layout_map.set("embedding/embeddings", {"model", std::nullopt});
  layout_map.set("conv2d/kernel", {std::nullopt, std::nullopt, std::nullopt, "model"});
  layout_map.set("conv2d/bias", {"model"});
  Model one = model(nullptr), mp = model(std::make_shared<const dist::ModelParallel>(layout_map));
  one.fit({ids, images}, {y}, {.batch_size = 2, .epochs = 2, .verbose = 0, .shuffle = false});
  mp.fit({ids, images}, {y}, {.batch_size = 2, .epochs = 2, .verbose = 0, .shuffle = false});
  const auto wa = one.get_weights(), wb = mp.get_weights();
  for (std::size_t i = 0; i < wa.size(); ++i) check_close(wb[i], wa[i], 1e-5, 1e-6);
  CHECK(mp.get_layer("embedding")->weights()[0]->pieces().size() == 2);
  CHECK(mp.get_layer("conv2d")->weights()[0]->pieces().at(1)->shape().to_string() == "(3, 3, 1, 2)");
}

TEST_CASE("tensor parallel: keras.io's transformer text classifier, attention by heads, Dense by columns") {
  // MultiHeadAttention's query/key/value kernels (d, heads, head_dim) and their biases split by heads,
  // its output kernel (heads, head_dim, d) likewise, every Dense by output units: within 1e-5 of one
  // device with SGD, 1e-4 with Adam (the proof), on a 1 x 2 mesh and on a 2 x 2 mesh.
  const std::int64_t maxlen = 10, vocab = 50;
  std::vector<std::int32_t> tokens, labels;
  for (int i = 0; i < 8 * maxlen; ++i) tokens.push_back((i * 13 + 5) % vocab);
  for (int i = 0; i < 8; ++i) labels.push_back(i % 2);
  const Tensor x = Tensor::from_vector<std::int32_t>({8, maxlen}, tokens);
  const Tensor y = Tensor::from_vector<std::int32_t>({8}, labels);
  dist::LayoutMap layout_map(dist::DeviceMesh({1, 2}, {"batch", "model"}, {"cpu:1", "cpu:2"}));
  layout_map.set("multi_head_attention/(query|key|value)/kernel", {std::nullopt, "model", std::nullopt});
  layout_map.set("multi_head_attention/(query|key|value)/bias", {"model", std::nullopt});
  layout_map.set("multi_head_attention/attention_output/kernel", {"model", std::nullopt, std::nullopt});
  layout_map.set("dense.*/kernel", {std::nullopt, "model"});
  layout_map.set("dense.*/bias", {"model"});
  const auto model = [&](std::shared_ptr<const dist::Distribution> distribution, const char* optimizer) {
    auto scope = dist::scope(std::move(distribution));
    clear_session();
    set_random_seed(6);
    Model m = apps::text_classifier("transformer", maxlen, vocab);
    m.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy");
    return m;
  };
  dist::LayoutMap square(dist::DeviceMesh({2, 2}, {"batch", "model"}, {"cpu:1", "cpu:2", "cpu:3", "cpu:4"}));
  for (const char* key : {"multi_head_attention/(query|key|value)/kernel", "multi_head_attention/(query|key|value)/bias",
                          "multi_head_attention/attention_output/kernel", "dense.*/kernel", "dense.*/bias"})
    square.set(key, *layout_map.get(key));
  for (const auto& [optimizer, tolerance] : {std::pair{"sgd", 1e-5}, std::pair{"adam", 1e-4}})
  for (const dist::LayoutMap* layouts : {&layout_map, &square}) {
    CAPTURE(optimizer);
    CAPTURE(layouts->device_mesh()->to_string());
    Model one = model(nullptr, optimizer);
    Model mp = model(std::make_shared<const dist::ModelParallel>(*layouts), optimizer);
    const FitOptions fit{.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false};
    one.fit(x, y, fit);
    mp.fit(x, y, fit);
    const auto wa = one.get_weights(), wb = mp.get_weights();
    REQUIRE(wa.size() == wb.size());
    for (std::size_t i = 0; i < wa.size(); ++i) check_close(wb[i], wa[i], tolerance, tolerance);
    std::size_t split = 0;
    for (const auto& w : mp.weights()) split += w->pieces().empty() ? 0 : 1;
    CHECK(split == 15);  // 4 attention kernels, 3 attention biases, 4 Dense kernels and their 4 biases
  }
}

TEST_CASE("data and tensor parallel on a 2 x 2 mesh; saved on 1 x 4, loaded on 2 x 2") {
  // Rows of the mesh cut the batch (towers), columns hold the pieces; each piece's gradient is summed
  // across the rows and every row updates its copies: one device's weights.
  TempDir dir("mesh");
  const Tensor x = random_normal({20, 6}, 0, 1, 3);
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 20; ++i) labels.push_back(i % 2);
  const Tensor y = Tensor::from_vector<std::int32_t>({20}, labels);
  const FitOptions fit{.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false};
  const auto mesh = [](std::vector<std::int64_t> shape, std::vector<std::string> devices) {
    dist::LayoutMap layout_map(dist::DeviceMesh(std::move(shape), {"batch", "model"}, std::move(devices)));
    layout_map.set("dense.*kernel", {std::nullopt, "model"});
    layout_map.set("dense.*bias", {"model"});
    return std::make_shared<const dist::ModelParallel>(layout_map);
  };
  for (const auto& [optimizer, tolerance] : {std::pair{"sgd", 1e-5}, std::pair{"adam", 1e-4}}) {
    CAPTURE(optimizer);
    Model one = sharded_mlp(nullptr);
    one.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy");
    one.fit(x, y, fit);
    Model two_by_two = sharded_mlp(mesh({2, 2}, {"cpu:1", "cpu:2", "cpu:3", "cpu:4"}));
    two_by_two.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy");
    two_by_two.fit(x, y, fit);
    const auto wa = one.get_weights(), wb = two_by_two.get_weights();
    for (std::size_t i = 0; i < wa.size(); ++i) check_close(wb[i], wa[i], tolerance, tolerance);
    check_close(two_by_two.predict(x, {.verbose = 0}), one.predict(x, {.verbose = 0}), tolerance, tolerance);
    CHECK(two_by_two.replication()->num_replicas_in_sync() == 2);
  }
  dist::LayoutMap four(dist::DeviceMesh({1, 4}, {"batch", "model"}, {"cpu:1", "cpu:2", "cpu:3", "cpu:4"}));
  four.set("dense(_1)?/kernel", {std::nullopt, "model"});  // dense_2's kernel (4, 2) cannot take 4 columns
  four.set("dense(_1)?/bias", {"model"});
  Model wide = sharded_mlp(std::make_shared<const dist::ModelParallel>(four));
  wide.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
  wide.fit(x, y, fit);
  wide.save(dir / "wide.h5");
  Model square = sharded_mlp(mesh({2, 2}, {"cpu:4", "cpu:3", "cpu:2", "cpu:1"}));
  square.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
  square.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0});  // pieces and mirrors made
  square.load_weights(dir / "wide.h5");
  check_close(square.predict(x, {.verbose = 0}), wide.predict(x, {.verbose = 0}), 1e-6, 1e-6);
}
