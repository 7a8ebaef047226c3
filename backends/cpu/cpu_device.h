// CpuDevice: host memory (64-byte aligned) and a thread pool per device ("cpu:0", "cpu:1", ...).
#pragma once

#include <atomic>
#include <memory>

#include "tower/core/device.h"
#include "tower/core/op_registry.h"
#include "tower/core/thread_pool.h"

namespace tower {

class CpuDevice final : public Device {
 public:
  CpuDevice(int index, int threads);

  bool host_accessible() const override { return true; }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_within(void* dst, const void* src, std::size_t bytes) override;

  ThreadPool& pool() { return pool_; }
  // The most bytes this device holds at once (0: no limit): set_cpu_device_memory_limit.
  void set_memory_limit(std::size_t bytes) { limit_ = bytes; }
  std::size_t memory_limit() const { return limit_; }

 protected:
  void* do_allocate(std::size_t bytes) override;
  void do_deallocate(void* ptr, std::size_t bytes) override;

 private:
  ThreadPool pool_;
  std::atomic<std::size_t> limit_{0};
  std::atomic<std::size_t> held_{0};  // bytes allocated (rounded), counted before the allocation
};

// Threads for CPU devices created from now on: cpu:0 defaults to every hardware thread, cpu:N
// (N >= 1) to 1 each, so that N extra devices model N single-threaded workers. The environment
// variable TOWER_CPU_THREADS overrides the cpu:0 default.
void set_cpu_device_threads(int index, int threads);

// The pool of the CPU device a kernel runs on.
inline ThreadPool& cpu_pool(KernelContext& ctx) { return static_cast<CpuDevice&>(ctx.device).pool(); }

void register_cpu_backend();

}  // namespace tower
