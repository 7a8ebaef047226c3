// libFuzzer target: any bytes, as a .h5 file, through the Keras weight-file readers: load_weights by
// position and by name into a small fixed model (Input(4) -> Dense(3) "dense"), and
// read_weight_file_layers with every small dataset read. A tower::Error is the expected answer to a
// bad file; a crash, a sanitizer report, another exception or a hang is a bug.
//
// TOWER_FUZZ_WRITE_SEEDS=<dir> ./fuzz_hdf5_weights writes the seed files of
// tests/fuzz/corpus/hdf5_weights (files tower writes for this model) into <dir> and exits.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tower/core/error.h"
#include "tower/io/hdf5.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/core/dense.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/sequential.h"
#include "tests/fuzz/fuzz_scratch.h"

namespace {

using namespace tower;

Sequential& model() {
  static Sequential m = [] {
    clear_session();
    return Sequential({layers::Input({4}), layers::Dense(3)});
  }();
  return m;
}

void write_seeds(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  Sequential& m = model();
  m.save_weights((fs::path(dir) / "dense.h5").string());
  // A two-layer model: the by-position count check and by-name partial matches.
  Sequential two({layers::Input({4}), layers::Dense(3, {.name = "dense"}), layers::Dense(2, {.name = "out"})});
  two.save_weights((fs::path(dir) / "dense_out.h5").string());
  // A weightless model: empty weight_names (an empty float64 array, as Keras writes).
  Sequential none({layers::Input({4})}, "empty");
  none.save_weights((fs::path(dir) / "empty.h5").string());
}

}  // namespace

// libhdf5 (not instrumented) mallocs sizes read from the file and handles a NULL result as an error;
// by default ASan reports such a request (say 0xc2c2c2c2c2c2c2c2 bytes from H5C_protect) as a crash
// instead of returning NULL, and a request of a few GB (H5T__conv_vlen's buffer for a string length
// read from the file) succeeds and runs past the RSS limit: requests over 512 MB return NULL here.
// C++ `new` still reports failure, so tower's own allocations stay checked.
// No leak checks: libhdf5 1.10 leaks metadata-cache entries when it fails to open a corrupt object
// (docs/fuzzing.md), and tower's HDF5 handles are RAII owners that LeakSanitizer could not see anyway
// (HDF5 keeps every open identifier in a global table).
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1:max_allocation_size_mb=512:detect_leaks=0"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("TOWER_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  model();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tower::fuzz::ScratchFile scratch("-weights.h5");
  tower::fuzz::write_scratch(scratch.path, data, size);
  for (bool by_name : {false, true}) {
    try {
      model().load_weights(scratch.path, {.by_name = by_name});
    } catch (const Error&) {
    }
  }
  try {
    auto file = io::hdf5::File::open(scratch.path);
    auto group = io::find_weights_group(file, "fuzz");
    if (group.has_attr("keras_version")) group.read_string_attr("keras_version");
    for (const auto& layer : io::read_weight_file_layers(group)) {
      auto g = group.group(layer.name);
      for (std::size_t i = 0; i < layer.weight_names.size(); ++i)
        if (layer.shapes[i].num_elements() <= 4096) g.dataset(layer.weight_names[i]).read();
    }
  } catch (const Error&) {
  }
  return 0;
}
