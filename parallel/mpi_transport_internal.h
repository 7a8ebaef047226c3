// The process group's MPI calls (parallel/mpi_transport.cpp, the only file that includes mpi.h): MPI's
// start and end, the handshake that compares a collective's description across the workers, and the
// data movements, each polled against a deadline (CollectiveError when it passes). Private to
// parallel/process_group.cpp: not installed.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tower::parallel::mpi {

using Clock = std::chrono::steady_clock;

// failure: a worker announces that it failed (ProcessGroup::announce_failure); end: its program ends
// (ProcessGroup's destructor at exit). Both meet whatever the others issue at the same point.
enum class Kind : std::int32_t { all_reduce, broadcast, all_gather, barrier, failure, end };

inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::all_reduce: return "all_reduce";
    case Kind::broadcast: return "broadcast";
    case Kind::all_gather: return "all_gather";
    case Kind::barrier: return "barrier";
    case Kind::failure: return "failure";
    case Kind::end: return "end";
  }
  return "?";
}

// What the workers compare before a collective's data moves (sent as plain bytes).
struct Description {
  std::int64_t seq = 0;
  std::int64_t bytes = 0;  // -1: each rank's own (all_gather, a string broadcast)
  std::int32_t kind = 0;
  std::int32_t bucket = -1;
  std::int32_t root = -1;
  char what[28] = {};

  std::string to_string() const {
    std::string s = fmt::format("{} of {}", kind_name(static_cast<Kind>(kind)), what);
    if (bucket >= 0) s += fmt::format(" bucket {}", bucket);
    if (bytes >= 0) s += fmt::format(" ({} bytes)", bytes);
    if (root >= 0) s += fmt::format(" from rank {}", root);
    return s;
  }
  bool agrees_with(const Description& o) const {
    return seq == o.seq && kind == o.kind && bucket == o.bucket && root == o.root &&
           std::strncmp(what, o.what, sizeof what) == 0 && (bytes < 0 || o.bytes < 0 || bytes == o.bytes);
  }
};
static_assert(sizeof(Description) == 56);

// "" when tower was built with MPI, else what to do about it.
std::string unavailable();
// Starts MPI (thread level MPI_THREAD_SERIALIZED) unless it runs; this process's rank and the size.
void start(int& rank, int& size);
// Ends MPI, unless it has ended: MPI_Abort after a failure (the launcher ends the others, which may wait in
// a collective), else MPI_Finalize.
void end(bool failed);

// Sends `mine` to every other rank and compares theirs: CollectiveError naming both sides when they
// differ, or the ranks that did not arrive by the deadline; a rank that announced its failure instead
// (announce_failure) is named with its error, one whose program ended while this one waits likewise.
void handshake(const Description& mine, int rank, int size, double timeout, const Clock::time_point& deadline);
// buffer (n elements) becomes the sum over the ranks, added in rank order: rank r adds elements
// [n r / W, n (r + 1) / W) of every rank's buffer (an all-to-all), then every rank gathers the sums.
void sum_in_rank_order(float* buffer, std::int64_t n, int rank, int size, const Description& d, double timeout,
                       const Clock::time_point& deadline);
void sum_in_rank_order(double* buffer, std::int64_t n, int rank, int size, const Description& d, double timeout,
                       const Clock::time_point& deadline);
// This worker failed with `text`: sends `mine` (Kind::failure) and the text to every other rank, where
// their handshake meets it, then waits until `grace_end` for their descriptions. True when every other
// rank announced a failure at the same sequence number (every worker raised the same error, as checks
// made alike on every worker do): the group stays in step. False otherwise: the others, at their next
// collective, raise a CollectiveError naming this worker and its text.
bool announce_failure(const Description& mine, const std::string& text, int rank, int size,
                      const Clock::time_point& grace_end);
// root's `bytes` bytes at `data` to every rank.
void broadcast_bytes(void* data, std::int64_t bytes, int root, const Description& d, double timeout,
                     const Clock::time_point& deadline);
// Every rank's `mine`, in rank order.
std::vector<std::string> gather_strings(const std::string& mine, int size, const Description& d, double timeout,
                                        const Clock::time_point& deadline);

}  // namespace tower::parallel::mpi
