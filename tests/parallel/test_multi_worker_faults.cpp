// Fault injection for multi-worker jobs (label mpi): tests/parallel/mpi_job.cpp run by mpirun with two
// workers, one of which misbehaves. Each job must end, with a non-zero exit, within the test's deadline
// and with a named error on every rank that can still speak; no checkpoint is damaged; and a job
// killed mid-epoch, run again, ends with the weights of an uninterrupted run, bit for bit.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tests/support/errors.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::ProcessResult;
using tower::testing::TempDir;

namespace {

// Runs the job (2 workers) to its end; `seconds` how long it took.
ProcessResult run_job(const std::string& scenario, const TempDir& dir, double* seconds = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  auto result = testing::run_process({TOWER_MPIEXEC, "-np", "2", "--oversubscribe", TOWER_MPI_JOB, "--scenario",
                                      scenario, "--dir", dir.path.string()},
                                     dir);
  if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A file the chief wrote loads as a whole model.
void check_loads(const std::filesystem::path& path) {
  INFO(path.string());
  CHECK_NOTHROW(io::load_model_hdf5(path.string()));
}

struct Deadline {  // the collectives' deadline for the jobs of one test
  explicit Deadline(const char* seconds) { setenv("TOWER_COLLECTIVE_TIMEOUT", seconds, 1); }
  ~Deadline() { unsetenv("TOWER_COLLECTIVE_TIMEOUT"); }
};

}  // namespace

TEST_CASE("multi-worker faults: a worker that stalls past the deadline ends the job with the collective named") {
  Deadline deadline("3");
  TempDir dir("mw_stall");
  double seconds = 0;
  const auto r = run_job("stall", dir, &seconds);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(seconds < 60);
  // The chief waited on its gradients (sequence number, bucket, bytes) and names the missing rank.
  CHECK(std::regex_search(r.output, std::regex(R"(tower worker 0 of 2: collective #[0-9]+ \(all_reduce of gradients bucket 0 \([0-9]+ bytes\)\) waited 3 s for rank\(s\) 1, which did not arrive)")));
}

TEST_CASE("multi-worker faults: a worker with a different model gets an error naming the variable and the ranks") {
  Deadline deadline("30");
  TempDir dir("mw_model");
  const auto r = run_job("different_model", dir);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  const std::string what = "the workers build different models: variable 0 is \"dense/kernel:0\" (6, 16) float32 on "
                           "worker 0 (the chief) but \"dense/kernel:0\" (6, 17) float32 on worker 1";
  CHECK(count(r.output, what) == 2);  // both workers say it
}

TEST_CASE("multi-worker faults: a worker with fewer samples gets an error, not a hang") {
  Deadline deadline("30");
  TempDir dir("mw_data");
  const auto r = run_job("fewer_batches", dir);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(count(r.output, "worker 1 and the chief disagree on the number of training samples: 64 (chief) vs 56 "
                        "(worker 1)") == 2);
}

// Issue 37: workers started with other options trained as one job without a word. Every kind in one
// job (a fit each, which every worker ends with the same error; the group stays in step for the next).
TEST_CASE("multi-worker faults: workers started with different options get the same named error on every worker") {
  Deadline deadline("30");
  TempDir dir("mw_disagree");
  const auto r = run_job("disagree", dir);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  const std::string prefix = "MultiWorkerMirroredStrategy: worker 1 and the chief disagree on ";
  const std::string dir_path = dir.path.string();
  for (const auto& [kind, what] : std::vector<std::pair<std::string, std::string>>{
           {"learning_rate", "the optimizer's learning_rate: 0.1 (chief) vs 0.01 (worker 1)"},
           {"optimizer", "the optimizer: SGD (chief) vs Adam (worker 1)"},
           {"metrics", "the metrics: accuracy (chief) vs none (worker 1)"},
           {"batch_size", "batch_size: 8 (chief) vs 16 (worker 1)"},
           {"epochs", "epochs: 4 (chief) vs 3 (worker 1)"},
           {"checkpoint", "the callbacks that write files: ModelCheckpoint(\"" + dir_path +
                              "/checkpoint.h5\") (chief) vs none (worker 1)"},
           {"backup", "the callbacks that write files: none (chief) vs BackupAndRestore(\"" + dir_path +
                          "/backup\") (worker 1)"}}) {
    INFO(kind);
    const std::string message = "mpi_job: " + kind + ": " + prefix + what + "; start every worker with the same options";
    CHECK(count(r.output, message) == 2);
  }
  // Other data of the same size: the fingerprints differ.
  const std::regex data("mpi_job: data: " + prefix + R"(the training data \(a fingerprint of its first, last and )"
                        R"(strided rows\): ([0-9a-f]{16}) \(chief\) vs ([0-9a-f]{16}) \(worker 1\))");
  CHECK(std::distance(std::sregex_iterator(r.output.begin(), r.output.end(), data), std::sregex_iterator()) == 2);
  CHECK(count(r.output, "mpi_job: none: trained") == 2);  // then a fit they agree on trains
  CHECK_FALSE(std::filesystem::exists(dir.path / "checkpoint.h5"));  // refused before the first epoch
}

// Issue 37: the others waited in their next collective for its whole deadline (here 60 s).
TEST_CASE("multi-worker faults: when one worker throws in fit, the others end within seconds, naming it and its "
          "error") {
  Deadline deadline("60");
  TempDir dir("mw_throw");
  double seconds = 0;
  const auto r = run_job("throw", dir, &seconds);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(seconds < 15);
  CHECK(contains(r.output, "mpi_job: mpi_job: worker 1 throws at epoch 1 step 2"));  // its own error
  CHECK(std::regex_search(r.output, std::regex(R"(tower worker 0 of 2: worker 1 failed: mpi_job: worker 1 throws at )"
                                               R"(epoch 1 step 2; this worker \(rank 0\) ends in collective #[0-9]+ )"
                                               R"(\(all_reduce of gradients bucket 0)")));
  CHECK_FALSE(contains(r.output, "did not arrive"));
}

TEST_CASE("multi-worker faults: when one worker's program ends early, the others end within seconds, naming it") {
  Deadline deadline("60");
  TempDir dir("mw_exit");
  double seconds = 0;
  const auto r = run_job("exit_early", dir, &seconds);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(seconds < 15);
  CHECK(contains(r.output, "mpi_job: worker 1 returns before fit"));
  CHECK(std::regex_search(r.output, std::regex(R"(tower worker 0 of 2: worker 1's program ended while this worker )"
                                               R"(\(rank 0\) waits in collective #[0-9]+ \()")));
}

TEST_CASE("multi-worker faults: workers that issue different collectives get a named error on every rank") {
  Deadline deadline("30");
  TempDir dir("mw_order");
  const auto r = run_job("mismatch", dir);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(contains(r.output, "tower worker 0 of 2: the workers issued different collectives: this worker (rank 0) "
                           "issued #1 broadcast of shuffle seed"));
  CHECK(contains(r.output, "tower worker 1 of 2: the workers issued different collectives: this worker (rank 1) "
                           "issued #1 barrier of an extra one"));
}

TEST_CASE("multi-worker faults: SIGKILL of a worker mid-epoch stops the job; the same command resumes it to the "
          "uninterrupted run's weights, bit for bit") {
  Deadline deadline("30");
  TempDir whole("mw_whole"), killed("mw_killed");
  const auto uninterrupted = run_job("train", whole);
  INFO(uninterrupted.output);
  REQUIRE(uninterrupted.exit_code == 0);

  setenv("MPI_JOB_KILL_AT", "2:3:1", 1);  // worker 1, before step 3 of epoch 2
  double seconds = 0;
  const auto first = run_job("train", killed, &seconds);
  unsetenv("MPI_JOB_KILL_AT");
  INFO(first.output);
  CHECK(first.exit_code != 0);
  CHECK(seconds < 60);
  CHECK(contains(first.output, "mpi_job: worker 1 kills itself at epoch 2 step 3"));
  CHECK(std::regex_search(first.output, std::regex("process rank 1 .* exited on signal 9")));  // the launcher says who
  // The chief, if the launcher let it speak, says why it stops.
  if (contains(first.output, "tower worker 0 of 2:"))
    CHECK((contains(first.output, "stopped by the launcher (SIGTERM)") || contains(first.output, "did not arrive")));
  // What the chief had written is whole: the epoch-end checkpoint and the backup of epoch 1.
  check_loads(killed.path / "checkpoint.h5");
  CHECK(std::filesystem::exists(killed.path / "backup" / "backup.h5"));
  CHECK_FALSE(std::filesystem::exists(killed.path / "weights.bin"));

  const auto resumed = run_job("train", killed);  // the same command again
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(testing::read_bytes(killed.path / "weights.bin") == testing::read_bytes(whole.path / "weights.bin"));
}
