// ProcessGroup: a communication thread that runs the job's collectives in order, each first compared
// across the workers (a handshake), then moved by MPI (parallel/mpi_transport.cpp, the only file that
// sees mpi.h) against a deadline.
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
#include "tower/parallel/mpi_transport_internal.h"

namespace tower::parallel {

namespace {

using mpi::Clock;
using mpi::Description;
using mpi::Kind;

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
  std::string text;  // a failure's error (Kind::failure)
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
                              Tensor staging = {}, std::string text = {}) {
    auto job = std::make_shared<Job>();
    Description& d = job->description;
    d.kind = static_cast<std::int32_t>(kind);
    d.bucket = label.bucket;
    d.bytes = bytes;
    d.root = root;
    std::strncpy(d.what, label.what, sizeof d.what - 1);
    job->move = std::move(move);
    job->staging = std::move(staging);
    job->text = std::move(text);
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
          // The program's end waits as long as the others take to end theirs (as MPI_Finalize would): a
          // chief may save or evaluate alone for long after fit. A worker waiting in a collective meets it at once.
          const auto deadline = job->description.kind == static_cast<std::int32_t>(Kind::end)
                                    ? Clock::time_point::max()
                                    : Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                         std::chrono::duration<double>(timeout_.load()));
          if (job->description.kind == static_cast<std::int32_t>(Kind::failure)) {
            announce(*job);
          } else {
            mpi::handshake(job->description, rank_, size_, timeout_.load(), deadline);
            if (job->move) job->move(*job, deadline);
          }
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

  // This worker's failure, told to the others (a short wait for theirs: they may have failed alike). Unless
  // every worker announced the same failure, every later collective fails: the others end at theirs.
  void announce(Job& job) {
    const auto grace = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::min(2.0, timeout_.load())));
    if (mpi::announce_failure(job.description, job.text, rank_, size_, Clock::now() + grace)) return;
    std::lock_guard lock(mutex_);
    if (!failure_)
      failure_ = std::make_exception_ptr(CollectiveError(fmt::format(
          "this worker failed ({}) and told the others, which end at their next collective; the job ends", job.text)));
  }

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

// ---- ProcessGroup --------------------------------------------------------------------------------------

namespace {
ProcessGroup* g_world = nullptr;

// At exit: stops the communication thread, then MPI ends (finalized, or aborted after a failure).
void end_world() {
  delete g_world;
  g_world = nullptr;
}
}  // namespace

std::string ProcessGroup::unavailable() { return mpi::unavailable(); }

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
  mpi::start(rank_, size_);
  g_rank = rank_;
  g_size = size_;
  if (size_ > 1) {
    struct sigaction current {};
    sigaction(SIGTERM, nullptr, &current);
    if (current.sa_handler == SIG_DFL) g_previous_sigterm = std::signal(SIGTERM, on_sigterm);
  }
  impl_ = std::make_unique<Impl>(rank_, size_);
}

ProcessGroup::~ProcessGroup() {
  if (!impl_) return;
  // The program ends: a worker still waiting in a collective learns it there (an error naming this
  // worker) instead of at the collective's deadline; after a normal end every worker meets it here.
  if (size_ > 1 && !impl_->failed()) {
    try {
      impl_->wait(*impl_->submit(Kind::end, {.what = "the program's end"}, 0, -1, nullptr));
    } catch (const std::exception&) {  // said on stderr; failed() is now true
    }
  }
  const bool failed = impl_->failed();
  impl_->stop();
  impl_.reset();
  std::signal(SIGTERM, g_previous_sigterm);  // from here on a SIGTERM is the launcher ending what this one asked
  // After a failure the others may wait in a collective, and MPI_Abort makes the launcher end them. First
  // a moment for those that found the same failure (a mismatch is seen by both sides) to say so themselves.
  if (failed) std::this_thread::sleep_for(std::chrono::seconds(2));
  mpi::end(failed);
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
      mpi::sum_in_rank_order(t.data<double>(), t.num_elements(), impl.rank_, impl.size_, job.description, impl.timeout(), deadline);
    else
      mpi::sum_in_rank_order(t.data<float>(), t.num_elements(), impl.rank_, impl.size_, job.description, impl.timeout(), deadline);
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
                               mpi::broadcast_bytes(job.staging.raw_data(), job.description.bytes, root, job.description,
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
    mpi::broadcast_bytes(&n, sizeof n, root, job.description, impl.timeout(), deadline);
    bytes.resize(static_cast<std::size_t>(n));
    mpi::broadcast_bytes(bytes.data(), n, root, job.description, impl.timeout(), deadline);
  });
  impl_->wait(*job);
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& mine, CollectiveLabel label) {
  std::vector<std::string> all{mine};
  const Impl& impl = *impl_;
  auto job = impl_->submit(Kind::all_gather, label, -1, -1, [&impl, &mine, &all](Job& job, const Clock::time_point& deadline) {
    if (impl.size_ > 1) all = mpi::gather_strings(mine, impl.size_, job.description, impl.timeout(), deadline);
  });
  impl_->wait(*job);
  return all;
}

void ProcessGroup::announce_failure(const std::string& what) {
  if (size_ == 1) return;
  try {
    impl_->wait(*impl_->submit(Kind::failure, {.what = "failure"}, -1, -1, nullptr, {}, what));
  } catch (const CollectiveError&) {  // the group had failed already: the others know
  }
}

void ProcessGroup::barrier(CollectiveLabel label) {
  impl_->wait(*impl_->submit(Kind::barrier, label, 0, -1, nullptr));
}

}  // namespace tower::parallel
