// parallel::ProcessGroup and MultiWorkerMirroredStrategy without a launcher (label unit; the mpi suites
// run them under mpirun): how a process learns that it is one of several, and the error of a build
// without MPI.
#include <doctest/doctest.h>

#include <cstdlib>

#include "tower/parallel/multi_worker_mirrored_strategy.h"
#include "tower/parallel/process_group.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

TEST_CASE("ProcessGroup::launched_size reads the launcher's environment without starting MPI") {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"}) unsetenv(name);
  CHECK(parallel::ProcessGroup::launched_size() == 1);
  setenv("SLURM_NTASKS", "4", 1);
  CHECK(parallel::ProcessGroup::launched_size() == 4);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);  // mpirun's comes first
  CHECK(parallel::ProcessGroup::launched_size() == 2);
  setenv("OMPI_COMM_WORLD_SIZE", "two", 1);  // not a count: the next variable
  CHECK(parallel::ProcessGroup::launched_size() == 4);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("SLURM_NTASKS");
}

TEST_CASE("MultiWorkerMirroredStrategy in a build without MPI says so and how to fix it") {
  if (parallel::ProcessGroup::unavailable().empty()) {
    MESSAGE("built with MPI: tests/parallel/test_multi_worker.cpp runs the strategy under mpirun");
    return;
  }
  const auto message = message_of<Error>([] { parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"}); });
  CHECK(contains(message, "built without MPI"));
  CHECK(contains(message, "libopenmpi-dev"));
}
