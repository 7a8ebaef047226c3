// libFuzzer target: any bytes, as a .h5 file, through load_model (Keras's legacy full-model file: the
// model_config architecture, the weights, the training_config and the optimizer state), compiled and
// not. A tower::Error is the expected answer to a bad file; a crash, a sanitizer report, another
// exception or a hang is a bug.
//
// TOWER_FUZZ_WRITE_SEEDS=<dir> ./fuzz_keras_model writes the seed files of
// tests/fuzz/corpus/keras_model (full-model files tower writes) into <dir> and exits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tower/core/error.h"
#include "tower/io/keras_model.h"
#include "tower/layers/core/dense.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/sequential.h"
#include "tower/layers/layer.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace {

using namespace tower;

void write_seeds(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  Sequential plain({layers::Input({4}), layers::Dense(3, {.activation = "softmax"})});
  plain.save((fs::path(dir) / "dense_uncompiled.h5").string());
  Sequential compiled({layers::Input({4}), layers::Dense(5, {.activation = "relu"}), layers::Dense(3)});
  compiled.compile("adam", "mse", {"mae"});
  compiled.fit(Tensor::zeros(Shape({4, 4}), DType::float32), Tensor::zeros(Shape({4, 3}), DType::float32),
               {.batch_size = 2, .verbose = 0});
  compiled.save((fs::path(dir) / "mlp_adam.h5").string());
}

}  // namespace

// As fuzz_hdf5_weights (see there): libhdf5 mallocs sizes read from the file and handles NULL, and
// leaks metadata-cache entries on corrupt objects; the architecture's layer sizes also come from the
// file. Allocations over 256 MB fail (operator new throws, which tower must turn into a tower::Error).
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=256:detect_leaks=0";
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("TOWER_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tower::fuzz::ScratchFile scratch("-model.h5");
  tower::fuzz::write_scratch(scratch.path, data, size);
  for (bool compile : {true, false}) {
    try {
      clear_session();
      (void)models::load_model(scratch.path, {.compile = compile});
    } catch (const Error&) {
    }
  }
  return 0;
}
