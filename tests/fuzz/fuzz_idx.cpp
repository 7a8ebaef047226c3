// libFuzzer target: any bytes, as a file, through io::read_idx (raw or gzip). A tower::Error is the
// expected answer to a bad file; a crash, a sanitizer report, another exception or a hang is a bug.
#include <cstddef>
#include <cstdint>

#include "tower/core/error.h"
#include "tower/io/idx.h"
#include "tests/fuzz/fuzz_scratch.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tower::fuzz::ScratchFile scratch("-idx");
  tower::fuzz::write_scratch(scratch.path, data, size);
  try {
    tower::Tensor t = tower::io::read_idx(scratch.path);
    // A file that loads holds exactly what its header announces.
    std::size_t count = 1;
    for (auto d : t.shape().dims()) count *= static_cast<std::size_t>(d);
    if (t.dtype() != tower::DType::uint8 || t.shape().rank() < 1 || t.shape().rank() > 4 ||
        static_cast<std::size_t>(t.num_elements()) != count)
      __builtin_trap();
  } catch (const tower::Error&) {
  }
  return 0;
}
