// ThreadPool: a fixed set of worker threads that split loops between them (one pool per CPU device).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tower {

class ThreadPool {
 public:
  // `threads` counts the calling thread: a pool of 1 runs everything inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Calls fn(begin, end) over disjoint chunks covering [0, n), each at least `grain` long
  // (except possibly the last), on up to size() threads; returns when all are done.
  // Nested calls from inside a chunk run inline.
  void parallel_for(std::int64_t n, std::int64_t grain,
                    const std::function<void(std::int64_t, std::int64_t)>& fn);

 private:
  void worker_loop();
  void run_chunks();

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::mutex run_mutex_;  // one parallel_for at a time per pool
  // The job being run: chunk c covers [c * chunk_, min(n_, (c + 1) * chunk_)).
  const std::function<void(std::int64_t, std::int64_t)>* fn_ = nullptr;
  // Written under mutex_; the atomics are also read without it by spinning threads.
  std::int64_t n_ = 0, chunk_ = 0, num_chunks_ = 0, next_chunk_ = 0;
  std::atomic<std::int64_t> chunks_done_ = 0;
  std::atomic<std::uint64_t> generation_ = 0;
  std::atomic<bool> stop_ = false;
};

}  // namespace tower
