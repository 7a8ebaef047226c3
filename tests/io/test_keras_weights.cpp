// HDF5 wrappers and Keras legacy weight files: layout, strings, split attributes, atomic writes,
// loading by position and by name, nested models, errors, and files written by real Keras.
#include <doctest/doctest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tower/io/hdf5.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/core/dense.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/layers.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tests/support/grad_check.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::read_bytes;
using tower::testing::TempDir;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::check_close;
namespace fs = std::filesystem;
namespace h5 = tower::io::hdf5;

namespace {

const fs::path kGoldenFiles = fs::path(TOWER_GOLDEN_DIR) / "files";
const fs::path kKerasFiles = fs::path(TOWER_SHARED_DIR) / "keras-files";

// Sets every weight to distinct values start, start + 0.01, ... so that a mix-up shows.
void fill(const std::vector<VariablePtr>& weights, float start) {
  for (const auto& w : weights) {
    std::vector<float> v(static_cast<std::size_t>(w->shape().num_elements()));
    for (auto& x : v) x = (start += 0.01f);
    w->assign(Tensor::from_vector<float>(w->shape(), v));
  }
}

std::vector<std::vector<float>> values(const std::vector<VariablePtr>& weights) {
  std::vector<std::vector<float>> out;
  for (const auto& w : weights) out.push_back(w->value().to_vector<float>());
  return out;
}

LayerPtr dense(std::int64_t in, std::int64_t units, const std::string& name) {
  layers::Dense d(units, {.name = name});
  d.ensure_built({{-1, in}});
  return d.share();
}

std::vector<VariablePtr> all_weights(const std::vector<LayerPtr>& layers) {
  std::vector<VariablePtr> out;
  for (const auto& l : layers)
    for (const auto& w : l->weights()) out.push_back(w);
  return out;
}

// An MLP 4 -> 3 -> `units` as a functional Model with explicit names.
Model mlp(const std::string& prefix, std::int64_t units = 2) {
  auto x = layers::Input({4}, {.name = prefix + "in"});
  auto h = layers::Dense(3, {.activation = "relu", .name = prefix + "1"})(x);
  return Model(x, layers::Dense(units, {.name = prefix + "2"})(h), prefix + "model");
}

// A layer whose one weight is float16, which HDF5 writing refuses: makes a save fail midway.
class Float16Layer : public Layer {
 public:
  Float16Layer() : Layer("half", "half"), w_(make_variable("half/w:0", Tensor(Shape{2}, DType::float16))) {}
  std::vector<SymbolicTensor> call(CallContext&, const std::vector<SymbolicTensor>& inputs) override { return inputs; }
  std::shared_ptr<Layer> share() const override { return std::make_shared<Float16Layer>(*this); }
  std::string class_name() const override { return "Float16Layer"; }
  std::vector<VariablePtr> trainable_weights() const override { return {w_}; }

 private:
  VariablePtr w_;
};

}  // namespace

// ---- hdf5 wrappers ------------------------------------------------------------------------------

TEST_CASE("hdf5: datasets of every dtype round-trip, with groups created on the way") {
  TempDir dir("io");
  const auto path = dir / "t.h5";
  {
    auto f = h5::File::create(path);
    f.write_dataset("a/b/f32", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6.5f}));
    f.write_dataset("f64", Tensor::from_vector<double>({2}, {0.25, -1e300}));
    f.write_dataset("i32", Tensor::from_vector<std::int32_t>({3}, {-7, 0, 2147483647}));
    f.write_dataset("i64", Tensor::from_vector<std::int64_t>({1}, {-(std::int64_t(1) << 40)}));
    f.write_dataset("u8", Tensor::from_vector<std::uint8_t>({2, 1}, {0, 255}));
    f.write_dataset("scalar", Tensor::scalar(3.0, DType::int64));
    f.write_dataset("empty", Tensor::zeros({0, 4}));
    f.create_group("g/h").write_int_attr("n", 42);
    f.close();
  }
  auto f = h5::File::open(path);
  CHECK(f.children() == std::vector<std::string>{"a", "empty", "f64", "g", "i32", "i64", "scalar", "u8"});
  CHECK(f.exists("a/b/f32"));
  CHECK(f.exists("/a/b"));
  CHECK_FALSE(f.exists("a/x/f32"));
  CHECK(f.is_group("a/b"));
  CHECK_FALSE(f.is_group("a/b/f32"));
  auto d = f.dataset("a/b/f32");
  CHECK(d.path() == "/a/b/f32");
  CHECK(d.shape() == Shape{2, 3});
  CHECK(d.dtype() == DType::float32);
  CHECK(f.read_dataset("a/b/f32").to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6.5f});
  CHECK(f.group("a").read_dataset("b/f32").shape() == Shape{2, 3});
  CHECK(f.read_dataset("f64").to_vector<double>() == std::vector<double>{0.25, -1e300});
  CHECK(f.read_dataset("i32").to_vector<std::int32_t>() == std::vector<std::int32_t>{-7, 0, 2147483647});
  CHECK(f.read_dataset("i64").to_vector<std::int64_t>() == std::vector<std::int64_t>{-(std::int64_t(1) << 40)});
  Tensor u8 = f.read_dataset("u8");
  CHECK(u8.dtype() == DType::uint8);
  CHECK(u8.shape() == Shape{2, 1});
  CHECK(u8.to_vector<int>() == std::vector<int>{0, 255});
  CHECK(f.read_dataset("scalar").shape() == Shape{});
  CHECK(f.read_dataset("scalar").item() == 3.0);
  CHECK(f.read_dataset("empty").shape() == Shape{0, 4});
  // Reading with another dtype converts (as Keras casts float64 weights into float32 variables).
  CHECK(f.dataset("i32").read(DType::float64).to_vector<double>() == std::vector<double>{-7, 0, 2147483647});
  CHECK(f.group("/g/h").read_int_attr("n") == 42);
  CHECK(f.root().group("g").group("h").path() == "/g/h");

  auto missing = message_of<io::FileError>([&] { f.group("nope"); });
  CHECK(contains(missing, "t.h5"));
  CHECK(contains(missing, "no group \"/nope\""));
  CHECK(contains(message_of<io::FileError>([&] { f.dataset("a/b/none"); }), "no dataset \"/a/b/none\""));
  CHECK(contains(message_of<io::FileError>([&] { f.read_string_attr("x"); }), "no such attribute"));
}

TEST_CASE("hdf5: string attributes, fixed-length (h5py 2) and variable-length (h5py 3)") {
  TempDir dir("io");
  const auto path = dir / "s.h5";
  {
    // Fixed-length NULL-padded strings written with the C API, as h5py 2 wrote Keras's attributes.
    hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 8);
    H5Tset_strpad(type, H5T_STR_NULLPAD);
    const hsize_t n = 3;
    hid_t space = H5Screate_simple(1, &n, nullptr);
    const char names[25] = "conv2d\0\0dense_1\0bn_long!";  // the last one fills all 8 bytes
    hid_t attr = H5Acreate2(file, "layer_names", type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, names);
    H5Aclose(attr);
    hid_t scalar = H5Screate(H5S_SCALAR);
    attr = H5Acreate2(file, "backend", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, "theano\0\0");
    H5Aclose(attr);
    // An empty float64 array: Keras's weight_names of a layer without weights.
    const hsize_t zero = 0;
    hid_t empty = H5Screate_simple(1, &zero, nullptr);
    attr = H5Acreate2(file, "weight_names", H5T_IEEE_F64LE, empty, H5P_DEFAULT, H5P_DEFAULT);
    H5Aclose(attr);
    for (hid_t id : {type, space, scalar, empty}) H5Idec_ref(id);
    H5Fclose(file);
  }
  {
    auto f = h5::File::open(path);
    CHECK(f.read_string_array_attr("layer_names") == std::vector<std::string>{"conv2d", "dense_1", "bn_long!"});
    CHECK(f.read_string_attr("backend") == "theano");
    CHECK(f.read_string_array_attr("backend") == std::vector<std::string>{"theano"});
    CHECK(f.read_string_array_attr("weight_names").empty());
    CHECK(contains(message_of<io::FileError>([&] { f.read_string_attr("layer_names"); }), "expected one string"));
  }
  {
    auto f = h5::File::create(path);
    f.write_string_attr("backend", "tensorflow");
    f.write_string_attr("backend", "tensorflow 2");  // replaces
    f.write_string_attr("unicode", "caf\xc3\xa9");
    f.write_string_array_attr("layer_names", {"input_1", "", "dense"});
    f.write_string_array_attr("weight_names", {});
    f.close();
  }
  auto f = h5::File::open(path);
  CHECK(f.read_string_attr("backend") == "tensorflow 2");
  CHECK(f.read_string_attr("unicode") == "caf\xc3\xa9");
  CHECK(f.read_string_array_attr("layer_names") == std::vector<std::string>{"input_1", "", "dense"});
  CHECK(f.read_string_array_attr("weight_names").empty());
  CHECK(f.attr_names() == std::vector<std::string>{"backend", "layer_names", "unicode", "weight_names"});
  // What tower wrote is what h5py 3 writes: variable-length strings.
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t attr = H5Aopen(file, "layer_names", H5P_DEFAULT);
  hid_t type = H5Aget_type(attr);
  CHECK(H5Tis_variable_str(type) > 0);
  H5Tclose(type);
  H5Aclose(attr);
  H5Fclose(file);
}

TEST_CASE("hdf5: string lists over 64512 bytes split into name0, name1, ... as Keras does") {
  TempDir dir("io");
  const auto path = dir / "split.h5";
  // 3000 names of 30 bytes: 90000 bytes as a fixed-length array, so numpy.array_split into 2 parts
  // of 1500 (45000 bytes each); 5000 names: 150000 bytes, 3 parts of 1667, 1667, 1666.
  auto make = [](int n) {
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) names.push_back(fmt::format("layer_{:024d}", i));
    return names;
  };
  const auto three_thousand = make(3000), five_thousand = make(5000);
  {
    auto f = h5::File::create(path);
    f.write_string_array_attr("layer_names", three_thousand);
    f.create_group("g").write_string_array_attr("weight_names", five_thousand);
    f.close();
  }
  {
    auto f = h5::File::open(path);
    CHECK(f.attr_names() == std::vector<std::string>{"layer_names0", "layer_names1"});
    CHECK(f.read_string_array_attr("layer_names0").size() == 1500);
    CHECK(f.has_string_array_attr("layer_names"));
    CHECK(f.read_string_array_attr("layer_names") == three_thousand);
    auto g = f.group("g");
    CHECK(g.read_string_array_attr("weight_names2").size() == 1666);
    CHECK(g.read_string_array_attr("weight_names1").front() == five_thousand[1667]);
    CHECK(g.read_string_array_attr("weight_names") == five_thousand);
  }
  // Rewriting a shorter list removes the parts.
  auto f = h5::File::create(dir / "rewrite.h5");
  f.write_string_array_attr("layer_names", three_thousand);
  f.write_string_array_attr("layer_names", {"a"});
  CHECK(f.attr_names() == std::vector<std::string>{"layer_names"});
  CHECK(f.read_string_array_attr("layer_names") == std::vector<std::string>{"a"});
}

TEST_CASE("hdf5: missing, corrupt and truncated files give FileError naming the file") {
  TempDir dir("io");
  CHECK(contains(message_of<io::FileError>([&] { h5::File::open(dir / "none.h5"); }), "none.h5\": no such file"));
  {
    std::ofstream(dir / "text.h5") << "this is not HDF5";
  }
  CHECK(contains(message_of<io::FileError>([&] { h5::File::open(dir / "text.h5"); }), "is not an HDF5 file"));
  {
    auto f = h5::File::create(dir / "full.h5");
    f.write_dataset("x", Tensor::zeros({1000}));
    f.close();
  }
  fs::copy_file(dir / "full.h5", dir / "cut.h5");
  fs::resize_file(dir / "cut.h5", fs::file_size(dir / "cut.h5") / 2);
  auto msg = message_of<io::FileError>([&] {
    auto f = h5::File::open(dir / "cut.h5");
    f.read_dataset("x");
  });
  CHECK(contains(msg, "cut.h5"));
}

// ---- Keras weight files: writing ----------------------------------------------------------------

TEST_CASE("save_weights: Keras's legacy layout, and load_weights restores every weight") {
  clear_session();
  Model m = mlp("a");
  fill(m.weights(), 0.5f);
  TempDir dir("io");
  const auto path = dir / "w.h5";
  m.save_weights(path);
  {
    auto f = h5::File::open(path);
    CHECK(f.read_string_array_attr("layer_names") == std::vector<std::string>{"ain", "a1", "a2"});
    CHECK(f.read_string_attr("backend") == "tensorflow");
    CHECK(f.read_string_attr("keras_version") == "2.15.0");
    CHECK(f.children() == std::vector<std::string>{"a1", "a2", "ain", "top_level_model_weights"});
    CHECK(f.group("ain").read_string_array_attr("weight_names").empty());
    CHECK(f.group("top_level_model_weights").read_string_array_attr("weight_names").empty());
    CHECK(f.group("a1").read_string_array_attr("weight_names") == std::vector<std::string>{"a1/kernel:0", "a1/bias:0"});
    CHECK(f.group("a1").children() == std::vector<std::string>{"a1"});
    CHECK(f.read_dataset("a1/a1/kernel:0").shape() == Shape{4, 3});
    CHECK(f.read_dataset("a2/a2/bias:0").to_vector<float>() == m.get_layer("a2")->get_weights()[1].to_vector<float>());
  }
  const auto saved = values(m.weights());
  fill(m.weights(), -3.0f);
  m.load_weights(path);
  CHECK(values(m.weights()) == saved);

  // The free functions work on any list of built layers; position decides, not names.
  auto d1 = dense(4, 3, "other_1"), d2 = dense(3, 2, "other_2");
  io::load_weights_hdf5({d1, d2}, path);
  CHECK(values(all_weights({d1, d2})) == saved);
  fill(all_weights({d1, d2}), 7.0f);
  io::save_weights_hdf5({d1, d2}, dir / "free.h5");
  m.load_weights(dir / "free.h5");
  CHECK(values(m.weights()) == values(all_weights({d1, d2})));
  auto files = dir.files();
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"free.h5", "w.h5"});  // no temporary files left
}

TEST_CASE("save_weights: a nested model is one group holding all its weights, trainable first") {
  clear_session();
  auto inner_in = layers::Input({5}, {.name = "inner_in"});
  layers::Dense d3(3, {.name = "d3"});
  Model inner(inner_in, layers::Dense(2, {.name = "d4"})(d3(inner_in)), "inner");
  d3.set_trainable(false);
  auto x = layers::Input({4}, {.name = "x"});
  Model outer(x, inner(layers::Dense(5, {.name = "d1"})(x)), "outer");
  fill(outer.weights(), 0.1f);
  TempDir dir("io");
  outer.save_weights(dir / "nested.h5");
  auto f = h5::File::open(dir / "nested.h5");
  CHECK(f.read_string_array_attr("layer_names") == std::vector<std::string>{"x", "d1", "inner"});
  auto g = f.group("inner");
  CHECK(g.read_string_array_attr("weight_names") ==
        std::vector<std::string>{"d4/kernel:0", "d4/bias:0", "d3/kernel:0", "d3/bias:0"});
  CHECK(g.children() == std::vector<std::string>{"d3", "d4"});
  CHECK(g.read_dataset("d3/kernel:0").to_vector<float>() == d3.get_weights()[0].to_vector<float>());
  CHECK_FALSE(f.exists("d3"));
}

TEST_CASE("save_weights: atomic; a failed save leaves the old file, and a missing directory is named") {
  clear_session();
  TempDir dir("io");
  const auto path = dir / "w.h5";
  auto a = dense(4, 3, "a"), b = dense(3, 2, "b");
  fill(all_weights({a, b}), 1.0f);
  io::save_weights_hdf5({a, b}, path);
  const auto before = values(all_weights({a, b}));
  const auto size = fs::file_size(path);

  // The second layer's dataset cannot be written (float16): the first layer was already written
  // into the temporary file when it fails.
  fill(all_weights({a, b}), 2.0f);
  LayerPtr half = std::make_shared<Float16Layer>();
  CHECK(contains(message_of<DTypeError>([&] { io::save_weights_hdf5({a, half}, path); }), "float16"));
  CHECK(dir.files() == std::vector<std::string>{"w.h5"});  // no temporary file left
  CHECK(fs::file_size(path) == size);
  io::load_weights_hdf5({a, b}, path);
  CHECK(values(all_weights({a, b})) == before);

  auto msg = message_of<io::FileError>([&] { io::save_weights_hdf5({a}, dir / "no/such/dir/w.h5"); });
  CHECK(contains(msg, "save_weights(\""));
  CHECK(contains(msg, "no/such/dir\" does not exist"));
  CHECK(contains(message_of<ValueError>([&] { io::save_weights_hdf5({a, a}, dir / "dup.h5"); }),
                 "two layers are named \"a\""));
  CHECK(dir.files() == std::vector<std::string>{"w.h5"});
}

// ---- Keras weight files: loading ----------------------------------------------------------------

TEST_CASE("load_weights: another architecture is refused, naming the layer and shapes, and nothing changes") {
  clear_session();
  TempDir dir("io");
  const auto path = dir / "a.h5";
  Model a = mlp("a", 2);
  fill(a.weights(), 0.3f);
  a.save_weights(path);

  Model b = mlp("b", 5);  // b1 fits a1; b2 (3, 5) does not fit a2 (3, 2)
  fill(b.weights(), -1.0f);
  const auto before = values(b.weights());
  auto msg = message_of<ValueError>([&] { b.load_weights(path); });
  CHECK(msg == "load_weights(\"" + path + "\"): layer \"b2\" weight \"b2/kernel:0\" has shape (3, 5) in the model "
               "but (3, 2) in the file (\"a2/a2/kernel:0\")");
  CHECK(values(b.weights()) == before);  // b1 unchanged too

  auto x = layers::Input({4});
  Model c(x, layers::Dense(2, {.name = "c3"})(layers::Dense(3, {.name = "c2"})(layers::Dense(4, {.name = "c1"})(x))));
  msg = message_of<ValueError>([&] { c.load_weights(path); });
  CHECK(contains(msg, "the file has weights for 2 layers (a1, a2) but the model has 3 layers with weights (c1, c2, c3)"));

  auto no_bias = layers::Dense(3, {.use_bias = false, .name = "nb"});
  no_bias.ensure_built({{-1, 4}});
  msg = message_of<ValueError>([&] { io::load_weights_hdf5({no_bias.share(), dense(3, 2, "z")}, path); });
  CHECK(contains(msg, "layer \"nb\" has 1 weights in the model but the file's layer \"a1\" has 2 (a1/kernel:0, a1/bias:0)"));

  CHECK(contains(message_of<io::FileError>([&] { b.load_weights(dir / "missing.h5"); }),
                 "load_weights(\"" + dir / "missing.h5" + "\"): cannot open"));
  {
    auto f = h5::File::create(dir / "plain.h5");
    f.write_dataset("x", Tensor::zeros({2}));
  }
  CHECK(contains(message_of<io::FileError>([&] { b.load_weights(dir / "plain.h5"); }), "is not a Keras weight file"));
}

TEST_CASE("load_weights by_name: layers take their namesake's weights, others are left alone") {
  clear_session();
  TempDir dir("io");
  const auto path = dir / "w.h5";
  auto p = dense(4, 3, "p"), q = dense(3, 2, "q");
  fill(all_weights({p, q}), 0.2f);
  io::save_weights_hdf5({p, q}, path);

  auto q2 = dense(3, 2, "q"), r = dense(4, 3, "r");
  fill(all_weights({q2, r}), 5.0f);
  const auto r_before = values(r->weights());
  io::load_weights_hdf5({r, q2}, path, {.by_name = true});
  CHECK(values(q2->weights()) == values(q->weights()));
  CHECK(values(r->weights()) == r_before);

  auto p_wide = dense(4, 7, "p");
  fill(all_weights({p_wide, q2}), 9.0f);
  const auto wide_before = values(all_weights({p_wide, q2}));
  auto msg = message_of<ValueError>([&] { io::load_weights_hdf5({p_wide, q2}, path, {.by_name = true}); });
  CHECK(contains(msg, "layer \"p\" weight \"p/kernel:0\" has shape (4, 7) in the model but (4, 3) in the file"));
  CHECK(values(all_weights({p_wide, q2})) == wide_before);
  io::load_weights_hdf5({p_wide, q2}, path, {.by_name = true, .skip_mismatch = true});
  CHECK(values(p_wide->weights()) == std::vector<std::vector<float>>(wide_before.begin(), wide_before.begin() + 2));
  CHECK(values(q2->weights()) == values(q->weights()));

  CHECK(contains(message_of<ValueError>([&] { io::load_weights_hdf5({r}, path, {.by_name = true}); }),
                 "no layer with weights has a namesake in the file (file layers: p, q)"));
  CHECK(contains(message_of<ValueError>([&] { io::load_weights_hdf5({p, q}, path, {.skip_mismatch = true}); }),
                 "skip_mismatch needs by_name"));
}

TEST_CASE("load_weights: a model.save() file is read from its model_weights group") {
  clear_session();
  TempDir dir("io");
  const auto path = dir / "model.h5";
  auto p = dense(4, 3, "p");
  fill(p->weights(), 0.7f);
  {
    auto f = h5::File::create(path);
    f.write_string_attr("model_config", "{}");
    auto g = f.create_group("model_weights");
    io::save_weights_to_group(g, {p});
  }
  auto p2 = dense(4, 3, "p2");
  io::load_weights_hdf5({p2}, path);
  CHECK(values(p2->weights()) == values(p->weights()));
}

// ---- files written by Keras ---------------------------------------------------------------------

// The model of tests/golden/make_io_files.py; `freeze_d3` as in Keras (the file lists the nested
// model's weights trainable first: d4 before d3).
Model keras_io_model(bool freeze_d3) {
  auto inner_in = layers::Input({5}, {.name = "inner_x"});
  layers::Dense d3(3, {.activation = "tanh", .name = "d3"});
  Model inner(inner_in, layers::Dense(2, {.name = "d4"})(d3(inner_in)), "inner");
  if (freeze_d3) d3.set_trainable(false);
  auto x = layers::Input({4}, {.name = "x"});
  return Model(x, inner(layers::Dense(5, {.activation = "relu", .name = "d1"})(x)), "outer");
}

TEST_CASE("load_weights: a file written by Keras 3's legacy writer (nested model, names without :0)") {
  const std::string path = (kGoldenFiles / "keras_io_weights.h5").string();
  auto expected = h5::File::open((kGoldenFiles / "keras_io_expected.h5").string());
  const Tensor x = expected.read_dataset("x"), y = expected.read_dataset("y");
  auto check_predictions = [&](Model& m) {
    auto got = m.predict(x).to_vector<float>(), want = y.to_vector<float>();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  };
  for (bool freeze : {true, false}) {
    for (bool by_name : {false, true}) {
      CAPTURE(freeze);
      CAPTURE(by_name);
      clear_session();
      Model m = keras_io_model(freeze);
      m.load_weights(path, {.by_name = by_name});
      // By position the file's "inner" group lists d4 before d3, so only names map it right when
      // d3 is trainable in tower.
      check_predictions(m);
    }
  }
}

TEST_CASE("load_weights: a Keras multi_gpu_model wrapper's file loads into the plain model and into towers") {
  // tests/golden/make_multi_gpu_file.py: the wrapper's layers input_1, lambda_1, lambda_2, "seq" (the
  // inner model, every weight) and "b" (the Concatenate); BatchNormalization's moving statistics last.
  const std::string path = (kGoldenFiles / "keras_multi_gpu_weights.h5").string();
  auto expected = h5::File::open((kGoldenFiles / "keras_multi_gpu_expected.h5").string());
  const Tensor x = expected.read_dataset("x"), y = expected.read_dataset("y");
  const auto make = [](bool keras_names) {
    const auto name = [&](const char* n) { return keras_names ? std::string(n) : std::string(); };
    return Sequential({layers::Input({6}), layers::Dense(8, {.activation = "relu", .name = name("a")}),
                       layers::BatchNormalization({.name = name("bn")}),
                       layers::Dense(3, {.activation = "softmax", .name = name("b")})});
  };
  for (const bool keras_names : {true, false}) {  // matched by name, else by position in Keras's order
    CAPTURE(keras_names);
    clear_session();
    Sequential model = make(keras_names);
    model.load_weights(path);
    check_close(model.predict(x), y, 1e-5, 1e-6);
    Model towers = parallel::multi_gpu_model(make(keras_names), std::vector<std::string>{"cpu:0", "cpu:1"});
    towers.load_weights(path);  // through the wrapper, into its inner model
    check_close(towers.predict(x), y, 1e-5, 1e-6);
  }
  // A model that is not the nested one: the error says what the file holds.
  clear_session();
  Sequential other({layers::Input({6}), layers::Dense(8), layers::Dense(3)});
  CHECK(contains(message_of<ValueError>([&] { other.load_weights(path); }),
                 "the file's layer \"seq\" has 8 (a/kernel:0, a/bias:0, bn/gamma:0"));
}

TEST_CASE("read_weight_file_layers: the real tf.keras 2.2.4 files (h5py 2, fixed-length strings)") {
  if (!fs::exists(kKerasFiles / "toyresnet_weights.h5")) {
    MESSAGE("skipped: " << kKerasFiles.string() << " is absent");
    return;
  }
  {
    auto f = h5::File::open((kKerasFiles / "toyresnet_weights.h5").string());
    CHECK(f.read_string_attr("keras_version") == "2.2.4-tf");
    auto layers = io::read_weight_file_layers(io::find_weights_group(f, "test"));
    std::vector<std::string> names;
    for (const auto& l : layers) names.push_back(l.name);
    CHECK(names == std::vector<std::string>{"img", "conv2d_34", "conv2d_35", "max_pooling2d_5", "conv2d_36",
                                            "conv2d_37", "add_8", "conv2d_38", "conv2d_39", "add_9", "conv2d_40",
                                            "global_average_pooling2d_3", "dense_6", "dense_7"});
    CHECK(layers[0].weight_names.empty());
    CHECK(layers[1].weight_names == std::vector<std::string>{"conv2d_34/kernel:0", "conv2d_34/bias:0"});
    CHECK(layers[1].shapes == std::vector<Shape>{{3, 3, 1, 32}, {32}});
    CHECK(layers[13].shapes == std::vector<Shape>{{256, 10}, {10}});
    // By name into Dense layers of the right shapes; values as h5py reads them.
    auto d6 = dense(64, 256, "dense_6"), d7 = dense(256, 10, "dense_7");
    io::load_weights_hdf5({d7, d6}, (kKerasFiles / "toyresnet_weights.h5").string(), {.by_name = true});
    auto bias = d7->weights()[1]->value().to_vector<float>();
    CHECK(bias[0] == 0.038488566875457764f);
    CHECK(bias[1] == -0.04868493601679802f);
    CHECK(bias[2] == 0.02085682936012745f);
    CHECK(d7->weights()[0]->value().to_vector<float>()[1] == 0.11198922991752625f);
  }
  auto f = h5::File::open((kKerasFiles / "batchnorm_weights.h5").string());
  auto layers = io::read_weight_file_layers(f.root());
  REQUIRE(layers.size() == 16);
  CHECK(layers[1].name == "batch_normalization_12");
  CHECK(layers[1].weight_names ==
        std::vector<std::string>{"batch_normalization_12/gamma:0", "batch_normalization_12/beta:0",
                                 "batch_normalization_12/moving_mean:0", "batch_normalization_12/moving_variance:0"});
  CHECK(layers[9].shapes == std::vector<Shape>{{3136, 256}, {256}});
  CHECK(layers[15].shapes == std::vector<Shape>{{84, 10}, {10}});
}
