// ThreadPool: workers take chunks of the current loop; between loops they spin a short while, then
// sleep on a condition variable.
#include "tower/core/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tower {

namespace {
thread_local bool t_inside_pool = false;

// About 40 µs of pauses on a current x86 core: longer than the gap between two loops of one step,
// short enough that idle workers soon stop taking a core from other pools (towers on CPU devices).
constexpr int kSpinRounds = 1000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins a short while (kSpinRounds pauses) until done() holds; false if it still does not. A training
// step runs hundreds of loops back to back: a worker that slept between two of them costs a futex
// wake-up each time, more than many of the loops themselves.
template <typename Done>
bool spin_until(Done done) {
  for (int i = 0; i < kSpinRounds; ++i) {
    if (done()) return true;
    cpu_relax();
  }
  return done();
}
}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::int64_t n, std::int64_t grain,
                              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<std::int64_t>(1, grain);
  std::int64_t chunks = std::min<std::int64_t>(threads_, (n + grain - 1) / grain);
  if (chunks <= 1 || t_inside_pool) {
    fn(0, n);
    return;
  }
  std::lock_guard run_lock(run_mutex_);
  std::int64_t num_chunks;
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    n_ = n;
    chunk_ = (n + chunks - 1) / chunks;
    num_chunks = num_chunks_ = (n + chunk_ - 1) / chunk_;
    next_chunk_ = 0;
    chunks_done_ = 0;
    ++generation_;
  }
  wake_.notify_all();  // no system call when every worker is still spinning
  t_inside_pool = true;
  run_chunks();
  t_inside_pool = false;
  if (!spin_until([&] { return chunks_done_.load(std::memory_order_acquire) == num_chunks; })) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return chunks_done_ == num_chunks; });
  }
  std::lock_guard lock(mutex_);
  fn_ = nullptr;
}

void ThreadPool::run_chunks() {
  for (;;) {
    std::int64_t c;
    {
      std::lock_guard lock(mutex_);
      if (next_chunk_ >= num_chunks_) return;
      c = next_chunk_++;
    }
    // The loop cannot finish, nor another start, before this chunk is counted: its fields hold.
    std::int64_t begin = c * chunk_, end = std::min(n_, begin + chunk_);
    (*fn_)(begin, end);
    bool last;
    {
      std::lock_guard lock(mutex_);
      last = chunks_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == num_chunks_;
    }
    if (last) done_.notify_all();
  }
}

void ThreadPool::worker_loop() {
  t_inside_pool = true;
  std::uint64_t seen = 0;
  for (;;) {
    const auto changed = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(changed)) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, changed);
    }
    if (stop_) return;
    seen = generation_;
    run_chunks();
  }
}

}  // namespace tower
