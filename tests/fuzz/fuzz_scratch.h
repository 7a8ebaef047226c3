// A scratch file per fuzzing process: the loaders under test take paths, so each input is written
// to it first: in $TOWER_FUZZ_SCRATCH (scripts/fuzz.sh sets it to a directory it removes, since a
// crashing process leaves its file behind), else on /dev/shm when there is one (so that fuzzing
// does not wear a disk), else in the temporary directory.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tower::fuzz {

inline std::string scratch_path(const std::string& suffix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* env = std::getenv("TOWER_FUZZ_SCRATCH");
  const fs::path dir = env && *env                         ? fs::path(env)
                       : fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm")
                                                          : fs::temp_directory_path();
  return (dir / ("tower-fuzz-" + std::to_string(::getpid()) + suffix)).string();
}

// Writes the input to `path`, replacing what was there; aborts (a fuzzer finding) when it cannot.
inline void write_scratch(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

// Removes the scratch file when the process ends normally.
struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& suffix) : path(scratch_path(suffix)) {}
  ~ScratchFile() { std::remove(path.c_str()); }
};

}  // namespace tower::fuzz
