// CpuDevice and the CPU backend's registration (device factory and every CPU kernel group).
#include "tower/backends/cpu/cpu_device.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <thread>

#include "tower/backends/cpu/kernels.h"
#include "tower/core/caching_allocator.h"
#include "tower/core/error.h"

namespace tower {

namespace {
std::mutex threads_mutex;
std::map<int, int>& configured_threads() {
  static std::map<int, int> m;
  return m;
}

int default_threads(int index) {
  std::lock_guard lock(threads_mutex);
  if (auto it = configured_threads().find(index); it != configured_threads().end()) return it->second;
  if (index > 0) return 1;
  if (const char* env = std::getenv("TOWER_CPU_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}
}  // namespace

void set_cpu_device_threads(int index, int threads) {
  std::lock_guard lock(threads_mutex);
  configured_threads()[index] = threads;
}

CpuDevice::CpuDevice(int index, int threads) : Device(DeviceKind::cpu, index), pool_(threads) {}

void set_cpu_device_memory_limit(int index, std::size_t bytes) {
  static_cast<CpuDevice&>(cpu_device(index)).set_memory_limit(bytes);
}

namespace {
std::size_t rounded_bytes(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64; }
}  // namespace

void* CpuDevice::do_allocate(std::size_t bytes) {
  const std::size_t rounded = rounded_bytes(bytes);
  const std::size_t held = held_.fetch_add(rounded) + rounded;
  if (const std::size_t limit = limit_; limit > 0 && held > limit) {
    held_ -= rounded;
    raise<OutOfMemoryError>("{}: out of memory allocating {} ({} in use of its memory limit of {}, "
                            "set_cpu_device_memory_limit){}",
                            name(), format_bytes(bytes), format_bytes(held - rounded), format_bytes(limit),
                            kSmallerBatchAdvice);
  }
  void* p = std::aligned_alloc(64, rounded);
  if (!p) {
    held_ -= rounded;
    raise<OutOfMemoryError>("{}: out of memory allocating {} ({} in use){}", name(), format_bytes(bytes),
                            format_bytes(memory_stats().in_use), kSmallerBatchAdvice);
  }
  return p;
}

void CpuDevice::do_deallocate(void* ptr, std::size_t bytes) {
  std::free(ptr);
  held_ -= rounded_bytes(bytes);
}

void CpuDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuDevice::copy_within(void* dst, const void* src, std::size_t bytes) { std::memmove(dst, src, bytes); }

void register_cpu_backend() {
  register_device_factory(DeviceKind::cpu, DeviceFactory{
                                               [] { return -1; },
                                               [](int index) -> std::unique_ptr<Device> {
                                                 return std::make_unique<CpuDevice>(index, default_threads(index));
                                               },
                                           });
  cpu::register_basic_kernels();
  cpu::register_math_kernels();
  cpu::register_activation_kernels();
  cpu::register_reduce_kernels();
  cpu::register_nn_kernels();
  cpu::register_array_kernels();
  cpu::register_loss_kernels();
  cpu::register_optimizer_kernels();
  cpu::register_collective_kernels();
  cpu::register_recurrent_kernels();
  cpu::register_attention_kernels();
  cpu::register_half_support();
}

}  // namespace tower
