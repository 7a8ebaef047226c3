// ThreadPool: workers sleep on a condition variable and take chunks of the current loop.
#include "tower/core/thread_pool.h"

#include <algorithm>

namespace tower {

namespace {
thread_local bool t_inside_pool = false;
}

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
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    n_ = n;
    chunk_ = (n + chunks - 1) / chunks;
    num_chunks_ = (n + chunk_ - 1) / chunk_;
    next_chunk_ = 0;
    chunks_done_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  t_inside_pool = true;
  run_chunks();
  t_inside_pool = false;
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return chunks_done_ == num_chunks_; });
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
    std::int64_t begin = c * chunk_, end = std::min(n_, begin + chunk_);
    (*fn_)(begin, end);
    bool last;
    {
      std::lock_guard lock(mutex_);
      last = ++chunks_done_ == num_chunks_;
    }
    if (last) done_.notify_all();
  }
}

void ThreadPool::worker_loop() {
  t_inside_pool = true;
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunks();
  }
}

}  // namespace tower
