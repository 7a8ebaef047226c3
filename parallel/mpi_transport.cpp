// The process group's MPI calls (see mpi_transport_internal.h): nonblocking MPI polled against each
// collective's deadline. Without MPI only unavailable() says anything: ProcessGroup::world() refuses
// before any other call.
#include "tower/parallel/mpi_transport_internal.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <utility>
#include <thread>

#include "tower/core/error.h"
#include "tower/parallel/process_group.h"

#if TOWER_WITH_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only
#include <mpi.h>
#endif

namespace tower::parallel::mpi {

#if TOWER_WITH_MPI

namespace {

constexpr int kHandshakeTag = 7201;
constexpr int kFailureTag = 7202;  // the text of a failure a worker announces (announce_failure)
constexpr std::size_t kFailureTextMax = 4000;

bool is(const Description& d, Kind kind) { return d.kind == static_cast<std::int32_t>(kind); }

// The text rank p sent with its failure (it follows its description), or a note when it does not come
// within a few seconds.
std::string failure_text(int p) {
  const auto until = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    int found = 0;
    MPI_Status status;
    MPI_Iprobe(p, kFailureTag, MPI_COMM_WORLD, &found, &status);
    if (found) {
      int n = 0;
      MPI_Get_count(&status, MPI_CHAR, &n);
      std::string text(static_cast<std::size_t>(std::max(n, 0)), '\0');
      MPI_Recv(text.data(), n, MPI_CHAR, p, kFailureTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      return text;
    }
    if (Clock::now() > until) return "(its error did not arrive: see its own output)";
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::string ranks_text(const std::vector<int>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ", "));
}

[[noreturn]] void deadline_passed(const Description& d, double timeout, const std::vector<int>& missing,
                                  const char* phase) {
  if (!missing.empty())
    throw CollectiveError(fmt::format(
        "collective #{} ({}) waited {} s for rank(s) {}, which did not arrive: a worker stopped, stalls or runs other "
        "code; the job ends (the deadline is CommunicationOptions::timeout_seconds or TOWER_COLLECTIVE_TIMEOUT)",
        d.seq, d.to_string(), timeout, ranks_text(missing)));
  throw CollectiveError(fmt::format(
      "collective #{} ({}): every worker arrived, but its {} did not finish within {} s; the job ends (the deadline "
      "is CommunicationOptions::timeout_seconds or TOWER_COLLECTIVE_TIMEOUT)",
      d.seq, d.to_string(), phase, timeout));
}

// Waits for every request, polling: MPI progresses its nonblocking calls only inside MPI_Test, so a
// transfer needs both sides polling. The handshake (`ranks` names the rank of each request) may wait
// long for a peer still computing: it pauses more and more between polls, leaving the cores to the
// lanes. The data phases follow a handshake, with every peer polling too: they only yield. On the
// deadline: the ranks whose handshake request is still open.
void wait_all(std::vector<MPI_Request>& requests, const Description& d, double timeout,
              const Clock::time_point& deadline, const char* phase, const std::vector<int>& ranks = {}) {
  const bool handshake = !ranks.empty();
  int polls = 0;
  auto pause = std::chrono::microseconds(5);
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    if (Clock::now() > deadline) {
      std::vector<int> missing;
      for (std::size_t i = 0; i < requests.size() && i < ranks.size(); ++i) {
        int finished = 0;
        MPI_Test(&requests[i], &finished, MPI_STATUS_IGNORE);
        if (!finished) missing.push_back(ranks[i]);
      }
      deadline_passed(d, timeout, missing, phase);
    }
    if (!handshake || ++polls <= 50) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(200));
    }
  }
}

int byte_count(std::int64_t bytes, const char* what) {
  if (bytes > INT_MAX)
    throw CollectiveError(fmt::format("{}: {} bytes is more than one MPI message of this build takes ({}); send it in "
                                      "smaller parts",
                                      what, bytes, INT_MAX));
  return static_cast<int>(bytes);
}

template <typename T>
void rank_order_sum(T* buffer, std::int64_t n, int rank, int size, const Description& d, double timeout,
                    const Clock::time_point& deadline) {
  const auto begin = [&](int r) { return n * r / size; };
  const std::int64_t mine = begin(rank + 1) - begin(rank);
  // Kept by the communication thread between collectives: a step's buckets allocate nothing.
  thread_local std::vector<T> received;
  if (received.size() < static_cast<std::size_t>(mine * size)) received.resize(static_cast<std::size_t>(mine * size));
  std::vector<int> send_counts(size), send_offsets(size), recv_counts(size), recv_offsets(size);
  for (int p = 0; p < size; ++p) {
    send_counts[p] = byte_count((begin(p + 1) - begin(p)) * std::int64_t{sizeof(T)}, d.what);
    send_offsets[p] = byte_count(begin(p) * std::int64_t{sizeof(T)}, d.what);
    recv_counts[p] = byte_count(mine * std::int64_t{sizeof(T)}, d.what);
    recv_offsets[p] = byte_count(p * mine * std::int64_t{sizeof(T)}, d.what);
  }
  std::vector<MPI_Request> request(1);
  MPI_Ialltoallv(buffer, send_counts.data(), send_offsets.data(), MPI_BYTE, received.data(), recv_counts.data(),
                 recv_offsets.data(), MPI_BYTE, MPI_COMM_WORLD, request.data());
  wait_all(request, d, timeout, deadline, "reduce-scatter");
  T* out = buffer + begin(rank);
  for (std::int64_t e = 0; e < mine; ++e) {
    T s = received[static_cast<std::size_t>(e)];
    for (int p = 1; p < size; ++p) s += received[static_cast<std::size_t>(p * mine + e)];
    out[e] = s;
  }
  for (int p = 0; p < size; ++p) recv_counts[p] = send_counts[p];
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buffer, recv_counts.data(), send_offsets.data(), MPI_BYTE,
                  MPI_COMM_WORLD, request.data());
  wait_all(request, d, timeout, deadline, "all-gather");
}

}  // namespace

std::string unavailable() { return ""; }

void start(int& rank, int& size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED)
      raise<Error>("MPI gives thread level {}, but tower's communication thread needs MPI_THREAD_SERIALIZED ({})",
                   provided, MPI_THREAD_SERIALIZED);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
}

void end(bool failed) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (failed) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

void handshake(const Description& mine, int rank, int size, double timeout, const Clock::time_point& deadline) {
  if (size == 1) return;
  std::vector<Description> theirs(static_cast<std::size_t>(size));
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  for (int p = 0; p < size; ++p)
    if (p != rank) {
      requests.emplace_back();
      MPI_Irecv(&theirs[static_cast<std::size_t>(p)], sizeof(Description), MPI_BYTE, p, kHandshakeTag, MPI_COMM_WORLD,
                &requests.back());
      peers.push_back(p);
    }
  for (int p = 0; p < size; ++p)
    if (p != rank) {
      requests.emplace_back();
      MPI_Isend(&mine, sizeof(Description), MPI_BYTE, p, kHandshakeTag, MPI_COMM_WORLD, &requests.back());
    }
  wait_all(requests, mine, timeout, deadline, "handshake", peers);
  for (int p : peers) {
    const Description& other = theirs[static_cast<std::size_t>(p)];
    if (is(other, Kind::failure))
      throw CollectiveError(fmt::format("worker {} failed: {}; this worker (rank {}) ends in collective #{} ({}) "
                                        "instead of waiting for it; the job ends",
                                        p, failure_text(p), rank, mine.seq, mine.to_string()));
    if (is(other, Kind::end) && !is(mine, Kind::end))
      throw CollectiveError(fmt::format(
          "worker {}'s program ended while this worker (rank {}) waits in collective #{} ({}): worker {} stopped "
          "early (after an error of its own, which it printed, or running other code than this worker); the job ends",
          p, rank, mine.seq, mine.to_string(), p));
    if (is(mine, Kind::end) && !is(other, Kind::end))
      throw CollectiveError(fmt::format(
          "this worker's program ended while rank {} waits in collective #{} ({}): the workers ran different code "
          "(this one stopped early, after an error of its own or on another path); the job ends",
          p, other.seq, other.to_string()));
    if (!other.agrees_with(mine))
      throw CollectiveError(fmt::format(
          "the workers issued different collectives: this worker (rank {}) issued #{} {}, rank {} issued #{} {}; every "
          "worker must run the same model on the same data, making the same calls in the same order",
          rank, mine.seq, mine.to_string(), p, other.seq, other.to_string()));
  }
}

bool announce_failure(const Description& mine, const std::string& text, int rank, int size,
                      const Clock::time_point& grace_end) {
  if (size == 1) return true;
  // What is sent, kept (leaked) when a send is still open at the end: MPI may read it later.
  auto sent = std::make_unique<std::pair<Description, std::string>>(mine, text.substr(0, kFailureTextMax));
  std::vector<Description> theirs(static_cast<std::size_t>(size));
  std::vector<MPI_Request> receives, sends;
  std::vector<int> peers;
  for (int p = 0; p < size; ++p)
    if (p != rank) {
      receives.emplace_back();
      MPI_Irecv(&theirs[static_cast<std::size_t>(p)], sizeof(Description), MPI_BYTE, p, kHandshakeTag, MPI_COMM_WORLD,
                &receives.back());
      peers.push_back(p);
      sends.emplace_back();
      MPI_Isend(&sent->first, sizeof(Description), MPI_BYTE, p, kHandshakeTag, MPI_COMM_WORLD, &sends.back());
      sends.emplace_back();
      MPI_Isend(sent->second.data(), static_cast<int>(sent->second.size()), MPI_CHAR, p, kFailureTag, MPI_COMM_WORLD,
                &sends.back());
    }
  // The others' descriptions, for a short while: a worker still computing learns of this failure at its
  // next collective, from the messages sent above.
  std::vector<int> arrived(peers.size(), 0);
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (!arrived[i]) MPI_Test(&receives[i], &arrived[i], MPI_STATUS_IGNORE);
      all = all && arrived[i];
    }
    if (all || Clock::now() > grace_end) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  bool agreed = true;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    if (!arrived[i]) {
      MPI_Cancel(&receives[i]);
      MPI_Status status;
      MPI_Wait(&receives[i], &status);
      int cancelled = 0;
      MPI_Test_cancelled(&status, &cancelled);
      arrived[i] = !cancelled;
    }
    const Description& other = theirs[static_cast<std::size_t>(peers[i])];
    if (!arrived[i] || !is(other, Kind::failure) || other.seq != mine.seq) agreed = false;
    if (arrived[i] && is(other, Kind::failure)) failure_text(peers[i]);  // taken, so that no later receive meets it
  }
  // The messages are small (sent at once); a peer that never receives them is ended by the launcher.
  const auto sent_by = std::max(grace_end, Clock::now() + std::chrono::seconds(1));
  for (int done = 0;;) {
    MPI_Testall(static_cast<int>(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE);
    if (done) break;
    if (Clock::now() > sent_by) {
      for (auto& request : sends)
        if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
      static_cast<void>(sent.release());
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return agreed;
}

void sum_in_rank_order(float* buffer, std::int64_t n, int rank, int size, const Description& d, double timeout,
                       const Clock::time_point& deadline) {
  rank_order_sum(buffer, n, rank, size, d, timeout, deadline);
}
void sum_in_rank_order(double* buffer, std::int64_t n, int rank, int size, const Description& d, double timeout,
                       const Clock::time_point& deadline) {
  rank_order_sum(buffer, n, rank, size, d, timeout, deadline);
}

void broadcast_bytes(void* data, std::int64_t bytes, int root, const Description& d, double timeout,
                     const Clock::time_point& deadline) {
  std::vector<MPI_Request> request(1);
  MPI_Ibcast(data, byte_count(bytes, d.what), MPI_BYTE, root, MPI_COMM_WORLD, request.data());
  wait_all(request, d, timeout, deadline, "broadcast");
}

// Their sizes first, then the bytes.
std::vector<std::string> gather_strings(const std::string& mine, int size, const Description& d, double timeout,
                                        const Clock::time_point& deadline) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(size));
  std::int64_t my_size = static_cast<std::int64_t>(mine.size());
  std::vector<MPI_Request> request(1);
  MPI_Iallgather(&my_size, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, MPI_COMM_WORLD, request.data());
  wait_all(request, d, timeout, deadline, "all-gather of the sizes");
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  std::int64_t total = 0;
  for (int p = 0; p < size; ++p) {
    counts[p] = byte_count(sizes[p], d.what);
    offsets[p] = byte_count(total, d.what);
    total += sizes[p];
  }
  std::string joined(static_cast<std::size_t>(byte_count(total, d.what)), '\0');
  MPI_Iallgatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, joined.data(), counts.data(), offsets.data(),
                  MPI_BYTE, MPI_COMM_WORLD, request.data());
  wait_all(request, d, timeout, deadline, "all-gather");
  std::vector<std::string> all;
  for (int p = 0; p < size; ++p) all.push_back(joined.substr(offsets[p], counts[p]));
  return all;
}

#else  // without MPI

std::string unavailable() {
  return "tower was built without MPI, so it cannot run as several workers: install OpenMPI (scripts/install_deps.sh "
         "installs openmpi-bin and libopenmpi-dev) and rebuild";
}

namespace {
[[noreturn]] void no_mpi() { raise<Error>("{}", unavailable()); }
}  // namespace

void start(int&, int&) { no_mpi(); }
void end(bool) {}
void handshake(const Description&, int, int size, double, const Clock::time_point&) {
  if (size > 1) no_mpi();
}
bool announce_failure(const Description&, const std::string&, int, int size, const Clock::time_point&) {
  if (size > 1) no_mpi();
  return true;
}
void sum_in_rank_order(float*, std::int64_t, int, int, const Description&, double, const Clock::time_point&) { no_mpi(); }
void sum_in_rank_order(double*, std::int64_t, int, int, const Description&, double, const Clock::time_point&) { no_mpi(); }
void broadcast_bytes(void*, std::int64_t, int, const Description&, double, const Clock::time_point&) { no_mpi(); }
std::vector<std::string> gather_strings(const std::string&, int, const Description&, double, const Clock::time_point&) {
  no_mpi();
}

#endif

}  // namespace tower::parallel::mpi
