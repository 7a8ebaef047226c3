// A ".keras" name means Keras 3's zip format, which tower does not write: save, save_weights and
// ModelCheckpoint refuse it with a ValueError that says which name to use, before touching any file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/io/keras_model.h"
#include "tower/io/model_checkpoint.h"
#include "tower/layers/layers.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::read_bytes;
using tower::testing::TempDir;

namespace {

Model small_model() {
  auto x = layers::Input({3});
  return Model(x, layers::Dense(2)(x), "small");
}

}  // namespace

TEST_CASE(".keras names: save and save_weights refuse them and leave the disk as it was") {
  TempDir dir("keras_names");
  Model model = small_model();
  model.compile("sgd", "mse");

  // A name with nothing behind it: nothing is created.
  auto msg = message_of<ValueError>([&] { model.save(dir.file("m.keras")); });
  CHECK(contains(msg, "save(\"" + dir.file("m.keras") + "\")"));
  CHECK(contains(msg, ".keras format"));
  CHECK(contains(msg, "not implemented"));
  CHECK(contains(msg, "use a .h5 name (\"" + dir.file("m.h5") + "\")"));
  CHECK(dir.files().empty());

  // A real Keras 3 archive already there stays byte for byte, and no temporary file is left.
  const std::string archive = dir.file("user.keras");
  {
    std::ofstream out(archive, std::ios::binary);
    out << "PK\x03\x04 a Keras 3 zip archive";
  }
  const std::string before = read_bytes(archive);
  CHECK_THROWS_AS(model.save(archive), ValueError);
  CHECK_THROWS_AS(io::save_model_hdf5(model, archive), ValueError);
  msg = message_of<ValueError>([&] { model.save_weights(archive); });
  CHECK(contains(msg, "save_weights(\"" + archive + "\")"));
  CHECK(contains(msg, "not implemented"));
  CHECK(contains(msg, dir.file("user.h5")));
  CHECK(contains(msg, "Keras 3 reads a name ending in .weights.h5 as its own newer weights layout"));
  CHECK(read_bytes(archive) == before);
  CHECK(dir.files() == std::vector<std::string>{"user.keras"});

  // The names that work.
  model.save(dir.file("m.h5"));
  model.save_weights(dir.file("m.weights.h5"));
  CHECK(models::load_model(dir.file("m.h5")).count_params() == model.count_params());
  CHECK(dir.files() == std::vector<std::string>{"m.h5", "m.weights.h5", "user.keras"});
}

TEST_CASE(".keras names: ModelCheckpoint refuses them when it is made, before fit") {
  auto msg = message_of<ValueError>([] { callbacks::ModelCheckpoint("ckpt-{epoch:02d}.keras"); });
  CHECK(contains(msg, "ckpt-{epoch:02d}.keras"));
  CHECK(contains(msg, "not implemented"));
  CHECK(contains(msg, "\"ckpt-{epoch:02d}.h5\""));
  CHECK_THROWS_AS(callbacks::ModelCheckpoint("w.keras", {.save_weights_only = true}), ValueError);
  CHECK_NOTHROW(callbacks::ModelCheckpoint("ckpt-{epoch:02d}.h5"));
  CHECK_NOTHROW(callbacks::ModelCheckpoint("w.weights.h5", {.save_weights_only = true}));
}
