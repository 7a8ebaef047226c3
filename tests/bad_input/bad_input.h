// What the bad-input suites (tests/bad_input/, docs/refusals.md) share: running train_mnist as a user
// would, and checking that a good file on disk did not change.
#pragma once

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "tests/support/errors.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace tower::testing {

// train_mnist with args, run to the end in a child process; its output collected under dir.
inline ProcessResult train_mnist(std::vector<std::string> args, const TempDir& dir) {
  args.insert(args.begin(), TOWER_TRAIN_MNIST);
  return run_process(args, dir);
}

// A file's bytes and mode when taken; unchanged() says whether both are still the same.
struct FileSnapshot {
  std::string path, bytes;
  unsigned mode = 0;
  explicit FileSnapshot(std::string p) : path(std::move(p)), bytes(read_bytes(path)), mode(mode_of(path)) {
    REQUIRE_MESSAGE(!bytes.empty(), path << " is missing or empty; a snapshot needs a good file");
  }
  bool unchanged() const { return read_bytes(path) == bytes && mode_of(path) == mode; }
  static unsigned mode_of(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<unsigned>(st.st_mode) : 0u;
  }
};

}  // namespace tower::testing
