// libFuzzer target: any bytes as the training_metadata of a BackupAndRestore backup ({"epoch", "step"}
// JSON: the next batch to train). Each input is written into an otherwise valid backup.h5 (the weights
// and optimizer state of a small compiled model, as BackupAndRestore writes them), and a fit of three
// epochs resumes from it. A tower::Error is the expected answer to bad metadata; a crash, a sanitizer
// report (a signed overflow in the resume position included), another exception or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "tower/core/error.h"
#include "tower/io/backup_and_restore.h"
#include "tower/io/hdf5.h"
#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/core/dense.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/sequential.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace {

using namespace tower;

// Input(4) -> Dense(3, softmax), compiled with SGD; 8 samples, so a fit of batch 2 has 4 steps.
struct Setup {
  Sequential model{{layers::Input({4}), layers::Dense(3, {.activation = "softmax"})}};
  Tensor x = Tensor::zeros(Shape({8, 4}), DType::float32);
  Tensor y = Tensor::zeros(Shape({8}), DType::int32);
  Setup() { model.compile("sgd", "sparse_categorical_crossentropy"); }
};

Setup& setup() {
  static Setup s;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tower::fuzz::ScratchFile scratch("-backup");
  namespace fs = std::filesystem;
  Setup& s = setup();
  const std::string metadata(reinterpret_cast<const char*>(data), size);
  fs::create_directories(scratch.path);
  const std::string path = (fs::path(scratch.path) / "backup.h5").string();
  io::hdf5::write_file_atomically(path, "fuzz backup", [&](io::hdf5::File& file) {
    file.write_string_attr("training_metadata", metadata);
    io::hdf5::Group weights = file.create_group("model_weights");
    io::save_weights_to_group(weights, s.model.layers());
    io::hdf5::Group optimizer = file.create_group("optimizer_weights");
    io::write_optimizer_state(optimizer, s.model.optimizer());
  });
  try {
    auto backup = std::make_shared<callbacks::BackupAndRestore>(scratch.path);
    s.model.fit(s.x, s.y, {.batch_size = 2, .epochs = 3, .verbose = 0, .callbacks = {backup}});
  } catch (const Error&) {
  }
  return 0;
}
