// libFuzzer target: any bytes as a model_config JSON text (the architecture that load_model reads
// from a file's model_config attribute, and model_from_json), in every Keras dialect tower reads.
// A model that builds must serialize again (model_to_json). A tower::Error is the expected answer to
// a bad config; a crash, a sanitizer report, another exception or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tower/core/error.h"
#include "tower/io/model_config.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/layer.h"

// Layer sizes come from the config: a Dense of 10^9 units asks for gigabytes. Allocations over
// 256 MB fail here (operator new throws, which tower must turn into a tower::Error) instead of
// running the process past libFuzzer's RSS limit.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1:max_allocation_size_mb=256"; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    tower::clear_session();
    tower::Model model = tower::io::model_from_json(text);
    (void)tower::io::model_to_json(model);
  } catch (const tower::Error&) {
  }
  return 0;
}
