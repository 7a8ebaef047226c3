// apps/bench_gpus on CPU devices: it measures each device alone and together and prints ratios that
// follow the devices' speed; bad options end with a message and exit code 2.
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "tower/core/device.h"
#include "tests/support/errors.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

using tower::testing::contains;
using tower::testing::ProcessResult;
using tower::testing::run_process;
using tower::testing::TempDir;

namespace {

ProcessResult bench_gpus(std::vector<std::string> args, const TempDir& dir) {
  args.insert(args.begin(), TOWER_BENCH_GPUS);
  return run_process(args, dir);
}

}  // namespace

TEST_CASE("bench_gpus: alone, together, and ratios that give a slowed device less") {
  TempDir dir("bench");
  const auto r = bench_gpus({"--devices", "cpu:0", "cpu:1", "--model", "mlp", "--batches", "32", "--steps", "3",
                             "--slowdown", "cpu:1=3"},
                            dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(contains(r.output, "alone     cpu:0"));
  CHECK(contains(r.output, "alone     cpu:1"));
  CHECK(contains(r.output, "together  ratios 32:32, batch 64"));
  CHECK(contains(r.output, "cpu:1    busy"));
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(r.output, m, std::regex(R"(global batch of 64\): (\d+):(\d+))")), r.output);
  CHECK(std::stoi(m[1]) + std::stoi(m[2]) == 64);
  CHECK(std::stoi(m[1]) > std::stoi(m[2]));  // cpu:1 runs 3 times slower: it gets less
}

TEST_CASE("bench_gpus: bad options end with a message and exit code 2") {
  TempDir dir("bench");
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--devices", "cpu:0", "cpu:1", "--batches", "8", "8", "8"}, "--batches gives 3 sizes for 2 devices"},
      {{"--devices", "cpu:0", "--batches", "0"}, "--batches must be > 0"},
      {{"--devices", "cpu:0", "--model", "resnet"}, "--model must be mlp or cnn"},
      {{"--devices", "cpu:0", "--slowdown", "cpu:0"}, "DEVICE=FACTOR"},
      {{"--gpus", "0", "1", "--devices", "cpu:0"}, "exclude each other"},
  };
  if (tower::device_count(tower::DeviceKind::cuda) == 0) {  // what a machine without a GPU says
    cases.push_back({{"--gpus", "2"}, "none is visible"});
    cases.push_back({{"--virtual-gpus", "3"}, "no GPU is visible"});
    cases.push_back({{}, "measure CPU devices with --devices cpu:0 cpu:1"});
  }
  for (const auto& [args, message] : cases) {
    CAPTURE(message);
    const auto r = bench_gpus(args, dir);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(contains(r.output, message), r.output);
  }
}
