// parallel::ProcessGroup: the worker processes of one job (started by mpirun, or srun under Slurm)
// and their collectives on host buffers: all-reduce (sum), broadcast, all-gather, barrier. MPI moves
// the bytes; tower adds what MPI lacks:
//   - one communication thread per process runs every collective in the order they were issued, so a
//     gradient bucket's all-reduce runs while the lane threads go on with the backward pass;
//   - before its data moves, each collective's description (sequence number, kind, bucket, bytes) is
//     compared across the workers: workers that issue collectives in different orders or sizes get a
//     CollectiveError naming both sides, never wrong numbers;
//   - every collective has a deadline (CommunicationOptions): when it passes, the worker prints which
//     collective it waited on and which ranks had not arrived, and the job ends (MPI_Abort) with a
//     non-zero exit instead of hanging;
//   - a worker that fails tells the others (announce_failure, which fit calls), and one whose program
//     ends says so (at exit): the others end at the collective they wait in, with an error naming it,
//     long before the deadline;
//   - sums are added in rank order (reduce-scatter and all-gather by hand, not MPI_SUM, whose order
//     MPI leaves open): the same bits on every worker and in every repeated run.
// A build without MPI compiles this file; world() then raises an Error saying MPI was not built in.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/core/tensor.h"

namespace tower::parallel {

// A collective that cannot complete: its deadline passed (a worker stopped, stalls or never started),
// or the workers issued different collectives (another order, another size). The job cannot go on:
// the process ends the MPI job when it exits (ProcessGroup::world()).
class CollectiveError : public Error {
 public:
  using Error::Error;
};

struct CommunicationOptions {
  // Seconds a collective waits for every worker before the job ends with a CollectiveError
  // (TensorFlow's CommunicationOptions.timeout_seconds). 0: the TOWER_COLLECTIVE_TIMEOUT environment
  // variable (seconds), or 300.
  double timeout_seconds = 0;
};

// What a collective is, as the workers compare it: what (a short static name: "gradients", "weights"),
// bucket (gradient buckets: their index; else -1) and its bytes.
struct CollectiveLabel {
  const char* what = "";
  int bucket = -1;
};

class ProcessGroup {
 public:
  // The job's world: every process the launcher started (one process alone when started without
  // one). Initializes MPI on first use and finalizes it at exit (MPI_Abort after a CollectiveError, so
  // that the launcher ends every worker). Error when tower was built without MPI.
  static ProcessGroup& world();
  // Whether world() can work: "" when tower was built with MPI, else what to do about it.
  static std::string unavailable();
  // How many processes the launcher started (mpirun's OMPI_COMM_WORLD_SIZE, PMI_SIZE, srun's
  // SLURM_NTASKS), read from the environment without starting MPI; 1 when not under a launcher.
  static int launched_size();

  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The deadline of every later collective.
  void set_timeout(double seconds);
  double timeout() const;

  // ---- blocking collectives on host tensors (any thread; each queues behind those issued before) ----
  // buffer (float32 or float64) becomes the sum over the ranks, added in rank order.
  void all_reduce_sum(Tensor& buffer, CollectiveLabel label);
  // buffer (any dtype) becomes root's.
  void broadcast(Tensor& buffer, int root, CollectiveLabel label);
  void broadcast(std::string& bytes, int root, CollectiveLabel label);
  // Every rank's `mine`, in rank order.
  std::vector<std::string> all_gather(const std::string& mine, CollectiveLabel label);
  void barrier(CollectiveLabel label);

  // This worker failed with `what` (an error of its own, say in fit): tells the others, which raise a
  // CollectiveError naming this worker and `what` at the collective they wait in (or their next one)
  // instead of waiting for its deadline; every later collective of this worker fails. When every
  // worker announces a failure at the same point (they raised the same error, from a check made alike
  // on every worker), the group stays usable. Waits at most 2 s for the others.
  void announce_failure(const std::string& what);

  // ---- the graph's asynchronous all-reduce (parallel/worker_ops.h) ----------------------------------
  // Queues the sum of `buffer` (float32 or float64, host), made in place, and returns at once; the
  // caller leaves the buffer alone until finish() has waited for the sum. Every start must be
  // finished, in any order.
  std::uint64_t start_all_reduce(const Tensor& buffer, CollectiveLabel label);
  // A collective of the caller's own (NCCL between the workers' GPUs, parallel/worker_ops.h): compared
  // across the workers as the others are, then `move` runs on the communication thread; it throws
  // CollectiveError when `deadline` passes (the collective's description is added to its message).
  using Move = std::function<void(const std::chrono::steady_clock::time_point& deadline)>;
  std::uint64_t start_collective(CollectiveLabel label, std::int64_t bytes, Move move);
  // Waits for a collective started above; rethrows its error.
  void finish(std::uint64_t ticket);

  class Impl;

 private:
  ProcessGroup();
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1;
};

}  // namespace tower::parallel
