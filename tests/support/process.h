// Child processes for tests of the apps: spawn one, wait for it, read what it printed; and a small
// MNIST-style IDX data set for them to train on.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tower/core/random.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace tower::testing {

// Starts args[0] with args; its stdout and stderr go to `output` ("/dev/null" by default).
inline pid_t spawn(const std::vector<std::string>& args, const std::string& output = "/dev/null") {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE_MESSAGE(rc == 0, "cannot start " << args[0] << ": " << std::strerror(rc));
  return pid;
}

// The wait status (WIFEXITED, WEXITSTATUS, WIFSIGNALED, ...).
inline int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

struct ProcessResult {
  int exit_code = -1;  // -1 when it did not exit normally (a signal: a crash)
  std::string output;  // stdout and stderr together
};

// Runs args to the end, its output collected in a file under `dir`.
inline ProcessResult run_process(const std::vector<std::string>& args, const TempDir& dir) {
  const std::string log = dir / "process-output.txt";
  const int status = wait_for(spawn(args, log));
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_bytes(log)};
}

// Writes n_train and n_test random 28x28 images with labels 0..9 as the four IDX files
// (train-images-idx3-ubyte, ..., t10k-labels-idx1-ubyte) into dir.
inline void write_idx_set(const std::filesystem::path& dir, std::uint32_t n_train, std::uint32_t n_test) {
  auto write = [&](const std::string& name, std::uint32_t magic, std::vector<std::uint32_t> dims) {
    std::ofstream out(dir / name, std::ios::binary);
    auto be = [&](std::uint32_t v) {
      const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                                  static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
      out.write(reinterpret_cast<const char*>(b), 4);
    };
    be(magic);
    std::size_t count = 1;
    for (auto d : dims) {
      be(d);
      count *= d;
    }
    Generator g(magic + dims[0]);
    for (std::size_t i = 0; i < count; ++i) {
      const char byte = magic == 0x801 ? static_cast<char>(g.next_u32() % 10) : static_cast<char>(g.next_u32() % 256);
      out.put(byte);
    }
  };
  write("train-images-idx3-ubyte", 0x803, {n_train, 28, 28});
  write("train-labels-idx1-ubyte", 0x801, {n_train});
  write("t10k-images-idx3-ubyte", 0x803, {n_test, 28, 28});
  write("t10k-labels-idx1-ubyte", 0x801, {n_test});
}

}  // namespace tower::testing
