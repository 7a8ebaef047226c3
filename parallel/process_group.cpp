// ProcessGroup: a communication thread that runs the job's collectives in order, each first compared
// across the workers (a handshake), then moved by MPI's nonblocking calls polled against a deadline.
#include "tower/parallel/process_group.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "tower/core/device.h"

#if TOWER_WITH_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only
#include <mpi.h>
#endif

namespace tower::parallel {

namespace {

using Clock = std::chrono::steady_clock;

enum class Kind : std::int32_t { all_reduce, broadcast, all_gather, barrier };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::all_reduce: return "all_reduce";
    case Kind::broadcast: return "broadcast";
    case Kind::all_gather: return "all_gather";
    case Kind::barrier: return "barrier";
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

double timeout_from_environment() {
  const char* text = std::getenv("TOWER_COLLECTIVE_TIMEOUT");
  if (!text || !*text) return 300.0;
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text, &end);
  if (errno || end == text || *end || !std::isfinite(seconds) || seconds <= 0)
    raise<ValueError>("TOWER_COLLECTIVE_TIMEOUT=\"{}\" is not a number of seconds above 0; set it to e.g. 300, or "
                      "unset it",
                      text);
  return seconds;
}

// ---- what the SIGTERM handler says (the launcher stops the job this way when another worker ended) ----
std::atomic<int> g_rank{0}, g_size{1};
std::atomic<std::int64_t> g_seq{-1};  // the collective the communication thread is in; -1: none
void (*g_previous_sigterm)(int) = SIG_DFL;

// Async-signal-safe: decimal digits of v into buf, returns the length.
std::size_t format_int(char* buf, std::int64_t v) {
  char tmp[24];
  std::size_t n = 0;
  const bool negative = v < 0;
  std::uint64_t u = negative ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  do tmp[n++] = static_cast<char>('0' + u % 10); while ((u /= 10) != 0);
  std::size_t k = 0;
  if (negative) buf[k++] = '-';
  while (n) buf[k++] = tmp[--n];
  return k;
}

extern "C" void on_sigterm(int) {
  char msg[256];
  std::size_t n = 0;
  const auto put = [&](const char* s) {
    for (; *s && n < sizeof msg - 1; ++s) msg[n++] = *s;
  };
  const auto put_int = [&](std::int64_t v) {
    char digits[24];
    const std::size_t len = format_int(digits, v);
    for (std::size_t i = 0; i < len && n < sizeof msg - 1; ++i) msg[n++] = digits[i];
  };
  put("tower worker ");
  put_int(g_rank.load());
  put(" of ");
  put_int(g_size.load());
  put(": stopped by the launcher (SIGTERM)");
  if (const std::int64_t seq = g_seq.load(); seq >= 0) {
    put(" while waiting in collective #");
    put_int(seq);
  }
  put(": another worker ended first (its error, or the launcher's message, says why)\n");
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, msg, n);
  _exit(128 + SIGTERM);
}

// ---- the communication thread ---------------------------------------------------------------------

struct Job {
  using Move = std::function<void(Job& job, const std::chrono::steady_clock::time_point& deadline)>;
  Description description;
  Move move;  // the data movement (MPI), after the handshake; none for a barrier
  Tensor staging;  // what an all-reduce sums in place, or a broadcast fills (shares the caller's memory)
  bool done = false;
  std::exception_ptr error;
};

}  // namespace

class ProcessGroup::Impl {
 public:
  Impl(int rank, int size) : rank_(rank), size_(size), timeout_(timeout_from_environment()) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Impl() { stop(); }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Queues a collective; the description's seq is set here, in issue order.
  std::shared_ptr<Job> submit(Kind kind, CollectiveLabel label, std::int64_t bytes, int root, Job::Move move,
                              Tensor staging = {}) {
    auto job = std::make_shared<Job>();
    Description& d = job->description;
    d.kind = static_cast<std::int32_t>(kind);
    d.bucket = label.bucket;
    d.bytes = bytes;
    d.root = root;
    std::strncpy(d.what, label.what, sizeof d.what - 1);
    job->move = std::move(move);
    job->staging = std::move(staging);
    {
      std::lock_guard lock(mutex_);
      d.seq = next_seq_++;
      queue_.push_back(job);
    }
    changed_.notify_all();
    return job;
  }

  void wait(Job& job) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return job.done; });
    if (job.error) std::rethrow_exception(job.error);
  }

  bool failed() const {
    std::lock_guard lock(mutex_);
    return failure_ != nullptr;
  }

  std::uint64_t remember(std::shared_ptr<Job> job) {
    std::lock_guard lock(mutex_);
    const auto ticket = static_cast<std::uint64_t>(job->description.seq);
    pending_[ticket] = std::move(job);
    return ticket;
  }
  std::shared_ptr<Job> forget(std::uint64_t ticket) {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(ticket);
    if (it == pending_.end()) raise<ValueError>("ProcessGroup: no all-reduce was started with ticket {}", ticket);
    auto job = std::move(it->second);
    pending_.erase(it);
    return job;
  }

  double timeout() const { return timeout_.load(); }
  void set_timeout(double seconds) {
    if (!(std::isfinite(seconds) && seconds > 0))
      raise<ValueError>("ProcessGroup: the collective timeout must be a number of seconds above 0, got {}", seconds);
    timeout_ = seconds;
  }

  const int rank_, size_;

 private:
  void loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = queue_.front();
        queue_.pop_front();
      }
      std::exception_ptr error;
      {
        std::lock_guard lock(mutex_);
        error = failure_;
      }
      if (!error) {
        g_seq = job->description.seq;
        try {
          const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(timeout_.load()));
          handshake(job->description, deadline);
          if (job->move) job->move(*job, deadline);
        } catch (const CollectiveError& e) {
          std::fprintf(stderr, "tower worker %d of %d: %s\n", rank_, size_, e.what());
          std::fflush(stderr);
          error = std::current_exception();
          std::lock_guard lock(mutex_);
          failure_ = error;
        } catch (...) {
          error = std::current_exception();
        }
        g_seq = -1;
      }
      {
        std::lock_guard lock(mutex_);
        job->error = error;
        job->done = true;
        // Let go of the job before the waiter can see it done: the waiter frees it, with the tensor it
        // holds, on its own thread (a storage freed here could outlive its device at the process's exit).
        job.reset();
      }
      changed_.notify_all();
    }
  }

  void handshake(const Description& mine, const Clock::time_point& deadline);

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::map<std::uint64_t, std::shared_ptr<Job>> pending_;  // started, not yet finished
  std::int64_t next_seq_ = 0;
  std::exception_ptr failure_;  // the first CollectiveError: every later collective fails with it
  bool stopping_ = false;
  std::atomic<double> timeout_;
  std::thread thread_;
};

namespace {

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

}  // namespace

#if TOWER_WITH_MPI

namespace {

constexpr int kHandshakeTag = 7201;

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

}  // namespace

void ProcessGroup::Impl::handshake(const Description& mine, const Clock::time_point& deadline) {
  if (size_ == 1) return;
  std::vector<Description> theirs(static_cast<std::size_t>(size_));
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  for (int p = 0; p < size_; ++p)
    if (p != rank_) {
      requests.emplace_back();
      MPI_Irecv(&theirs[static_cast<std::size_t>(p)], sizeof(Description), MPI_BYTE, p, kHandshakeTag, MPI_COMM_WORLD,
                &requests.back());
      peers.push_back(p);
    }
  for (int p = 0; p < size_; ++p)
    if (p != rank_) {
      requests.emplace_back();
      MPI_Isend(&mine, sizeof(Description), MPI_BYTE, p, kHandshakeTag, MPI_COMM_WORLD, &requests.back());
    }
  wait_all(requests, mine, timeout(), deadline, "handshake", peers);
  for (int p : peers)
    if (const Description& other = theirs[static_cast<std::size_t>(p)]; !other.agrees_with(mine))
      throw CollectiveError(fmt::format(
          "the workers issued different collectives: this worker (rank {}) issued #{} {}, rank {} issued #{} {}; every "
          "worker must run the same model on the same data, making the same calls in the same order",
          rank_, mine.seq, mine.to_string(), p, other.seq, other.to_string()));
}

namespace {

// The sum over the ranks of `buffer` (n elements of T), added in rank order: rank r adds elements
// [n r / W, n (r + 1) / W) of every rank's buffer (an all-to-all), then every rank gathers the sums.
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

// root's `bytes` bytes at `data` to every rank.
void broadcast_bytes(void* data, std::int64_t bytes, int root, const Description& d, double timeout,
                     const Clock::time_point& deadline) {
  std::vector<MPI_Request> request(1);
  MPI_Ibcast(data, byte_count(bytes, d.what), MPI_BYTE, root, MPI_COMM_WORLD, request.data());
  wait_all(request, d, timeout, deadline, "broadcast");
}

// Every rank's `mine`, in rank order (their sizes first, then the bytes).
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

}  // namespace

#else  // without MPI: world() refuses before an Impl exists, so none of these runs

void ProcessGroup::Impl::handshake(const Description&, const Clock::time_point&) {}

namespace {
[[noreturn]] void no_mpi() { raise<Error>("{}", ProcessGroup::unavailable()); }
template <typename T>
void rank_order_sum(T*, std::int64_t, int, int, const Description&, double, const Clock::time_point&) { no_mpi(); }
void broadcast_bytes(void*, std::int64_t, int, const Description&, double, const Clock::time_point&) { no_mpi(); }
std::vector<std::string> gather_strings(const std::string&, int, const Description&, double, const Clock::time_point&) {
  no_mpi();
}
}  // namespace

#endif

// ---- ProcessGroup --------------------------------------------------------------------------------------

namespace {
ProcessGroup* g_world = nullptr;

// At exit: stops the communication thread, then MPI ends (finalized, or aborted after a failure).
void end_world() {
  delete g_world;
  g_world = nullptr;
}
}  // namespace

std::string ProcessGroup::unavailable() {
#if TOWER_WITH_MPI
  return "";
#else
  return "tower was built without MPI, so it cannot run as several workers: install OpenMPI (scripts/install_deps.sh "
         "installs openmpi-bin and libopenmpi-dev) and rebuild";
#endif
}

int ProcessGroup::launched_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"})
    if (const char* text = std::getenv(name)) {
      char* end = nullptr;
      const long n = std::strtol(text, &end, 10);
      if (end != text && *end == '\0' && n >= 1 && n <= INT_MAX) return static_cast<int>(n);
    }
  return 1;
}

ProcessGroup& ProcessGroup::world() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const std::string why = unavailable(); !why.empty()) raise<Error>("{}", why);
    g_world = new ProcessGroup();
    std::atexit(end_world);
  });
  if (!g_world)
    raise<Error>("{}", unavailable().empty() ? "ProcessGroup::world: the job's MPI has ended (the program is exiting)"
                                             : unavailable());
  return *g_world;
}

ProcessGroup::ProcessGroup() {
#if TOWER_WITH_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (provided < MPI_THREAD_SERIALIZED)
      raise<Error>("MPI gives thread level {}, but tower's communication thread needs MPI_THREAD_SERIALIZED ({})",
                   provided, MPI_THREAD_SERIALIZED);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  g_rank = rank_;
  g_size = size_;
  if (size_ > 1) {
    struct sigaction current {};
    sigaction(SIGTERM, nullptr, &current);
    if (current.sa_handler == SIG_DFL) g_previous_sigterm = std::signal(SIGTERM, on_sigterm);
  }
#endif
  impl_ = std::make_unique<Impl>(rank_, size_);
}

ProcessGroup::~ProcessGroup() {
  if (!impl_) return;
  [[maybe_unused]] const bool failed = impl_->failed();
  impl_->stop();
  impl_.reset();
#if TOWER_WITH_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  std::signal(SIGTERM, g_previous_sigterm);  // from here on a SIGTERM is the launcher ending what this one asked
  if (failed) {
    // The others may wait in a collective: the launcher ends them. First a moment for those that found
    // the same failure (a mismatch is seen by both sides) to say so themselves.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
#endif
}

double ProcessGroup::timeout() const { return impl_->timeout(); }
void ProcessGroup::set_timeout(double seconds) { impl_->set_timeout(seconds); }

namespace {
void check_host(const Tensor& t, const char* where) {
  if (!t.defined() || !t.device().host_accessible())
    raise<ValueError>("ProcessGroup::{}: the buffer must be a host tensor (copy it to cpu:0 first)", where);
}
void check_floating(const Tensor& t, const char* where) {
  check_host(t, where);
  if (t.dtype() != DType::float32 && t.dtype() != DType::float64)
    raise<DTypeError>("ProcessGroup::{}: sums float32 or float64, not {}", where, dtype_name(t.dtype()));
}
}  // namespace

namespace {
// The movement of an all-reduce: the job's staging tensor becomes the sum, in place.
Job::Move sum_staging(const ProcessGroup::Impl& impl) {
  return [&impl](Job& job, const Clock::time_point& deadline) {
    if (impl.size_ == 1) return;
    Tensor& t = job.staging;
    if (t.dtype() == DType::float64)
      rank_order_sum(t.data<double>(), t.num_elements(), impl.rank_, impl.size_, job.description, impl.timeout(), deadline);
    else
      rank_order_sum(t.data<float>(), t.num_elements(), impl.rank_, impl.size_, job.description, impl.timeout(), deadline);
  };
}

void check_root(int root, int size) {
  if (root < 0 || root >= size)
    raise<ValueError>("ProcessGroup::broadcast: root {} is not a rank of this job (0 to {})", root, size - 1);
}
}  // namespace

// Each collective: its description, then the data movement the communication thread runs after the
// handshake (Job::move; none for a barrier, which the handshake is).

void ProcessGroup::all_reduce_sum(Tensor& buffer, CollectiveLabel label) { finish(start_all_reduce(buffer, label)); }

std::uint64_t ProcessGroup::start_all_reduce(const Tensor& buffer, CollectiveLabel label) {
  check_floating(buffer, "start_all_reduce");
  // The job's staging tensor shares the buffer's memory: summed in place.
  return impl_->remember(
      impl_->submit(Kind::all_reduce, label, static_cast<std::int64_t>(buffer.nbytes()), -1, sum_staging(*impl_), buffer));
}

std::uint64_t ProcessGroup::start_collective(CollectiveLabel label, std::int64_t bytes, Move move) {
  return impl_->remember(impl_->submit(Kind::all_reduce, label, bytes, -1,
                                       [move = std::move(move)](Job& job, const Clock::time_point& deadline) {
                                         try {
                                           move(deadline);
                                         } catch (const CollectiveError& e) {
                                           throw CollectiveError(fmt::format("collective #{} ({}): {}", job.description.seq,
                                                                             job.description.to_string(), e.what()));
                                         }
                                       }));
}

void ProcessGroup::finish(std::uint64_t ticket) { impl_->wait(*impl_->forget(ticket)); }

void ProcessGroup::broadcast(Tensor& buffer, int root, CollectiveLabel label) {
  check_host(buffer, "broadcast");
  check_root(root, size_);
  const Impl& impl = *impl_;
  auto job = impl_->submit(Kind::broadcast, label, static_cast<std::int64_t>(buffer.nbytes()), root,
                           [&impl, root](Job& job, const Clock::time_point& deadline) {
                             if (impl.size_ > 1)
                               broadcast_bytes(job.staging.raw_data(), job.description.bytes, root, job.description,
                                               impl.timeout(), deadline);
                           },
                           buffer);
  impl_->wait(*job);
}

void ProcessGroup::broadcast(std::string& bytes, int root, CollectiveLabel label) {
  check_root(root, size_);
  const Impl& impl = *impl_;
  auto job = impl_->submit(Kind::broadcast, label, -1, root, [&impl, root, &bytes](Job& job, const Clock::time_point& deadline) {
    if (impl.size_ == 1) return;
    std::int64_t n = static_cast<std::int64_t>(bytes.size());
    broadcast_bytes(&n, sizeof n, root, job.description, impl.timeout(), deadline);
    bytes.resize(static_cast<std::size_t>(n));
    broadcast_bytes(bytes.data(), n, root, job.description, impl.timeout(), deadline);
  });
  impl_->wait(*job);
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& mine, CollectiveLabel label) {
  std::vector<std::string> all{mine};
  const Impl& impl = *impl_;
  auto job = impl_->submit(Kind::all_gather, label, -1, -1, [&impl, &mine, &all](Job& job, const Clock::time_point& deadline) {
    if (impl.size_ > 1) all = gather_strings(mine, impl.size_, job.description, impl.timeout(), deadline);
  });
  impl_->wait(*job);
  return all;
}

void ProcessGroup::barrier(CollectiveLabel label) {
  impl_->wait(*impl_->submit(Kind::barrier, label, 0, -1, nullptr));
}

}  // namespace tower::parallel
