// TempDir: a fresh directory per test, removed with everything in it at the end; read_bytes.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace tower::testing {

class TempDir {
 public:
  std::filesystem::path path;

  // <tmp>/tower_test_<tag>_<pid>_<n>, empty.
  explicit TempDir(const std::string& tag = "tmp") {
    static int n = 0;
    path = std::filesystem::temp_directory_path() /
           ("tower_test_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  // Write permission is restored first, so that a test that made the directory read-only still
  // cleans up.
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add,
                                 ignored);
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::string file(const std::string& name) const { return *this / name; }
  // The names of the entries directly inside, sorted.
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

// The whole file as bytes ("" when it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace tower::testing
