// Device: the interface every backend's device implements (memory, copies, synchronization),
// and the registry that names devices as Keras/TF do: "cpu:0", "cpu:1", "cuda:0".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tower {

enum class DeviceKind : std::uint8_t { cpu, cuda };
std::string_view device_kind_name(DeviceKind kind);

// A mark in a device's queue of work (a CUDA event on a GPU's stream), for ordering work across
// devices whose steps are issued by threads of their own (the executor's lanes).
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  // The host waits until the work queued before the mark is done.
  virtual void synchronize() const = 0;
};

struct MemoryStats {
  std::size_t in_use = 0;    // bytes handed out and not yet returned
  std::size_t peak = 0;      // the most that was ever in use at once
  std::size_t reserved = 0;  // bytes held from the system (>= in_use with a caching allocator)
  std::size_t allocations = 0;
};

class Device {
 public:
  Device(DeviceKind kind, int index);
  // A device outside the registry with a name of its own ("pinned host memory").
  Device(DeviceKind kind, int index, std::string name);
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceKind kind() const { return kind_; }
  int index() const { return index_; }
  const std::string& name() const { return name_; }

  // Memory. allocate never returns null: it throws OutOfMemoryError naming the device and request.
  void* allocate(std::size_t bytes);
  void deallocate(void* ptr, std::size_t bytes);
  MemoryStats memory_stats() const;

  // True when the host can read this device's memory directly (CPU devices).
  virtual bool host_accessible() const = 0;
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_within(void* dst, const void* src, std::size_t bytes) = 0;
  // Copies from another device of the same kind without going through the host (GPU to GPU, or
  // between logical GPUs of one GPU); false when there is no such path (copy_between then stages
  // through the host).
  virtual bool copy_from_peer(void* dst, Device& from, const void* src, std::size_t bytes) { return false; }
  // Waits until all work queued on this device has finished.
  virtual void synchronize() {}

  // Ordering across devices without waiting on the host (the executor's lanes). A device that queues
  // its work (a GPU) makes events; one whose work is done when a kernel returns (a CPU device)
  // returns null and needs none.
  virtual std::unique_ptr<DeviceEvent> create_event() { return nullptr; }
  // Marks what is queued on this device now.
  virtual void record_event(DeviceEvent& event) {}
  // Work queued on this device from now on starts after `event`'s mark, which may be on another
  // device; the host does not wait.
  virtual void wait_event(const DeviceEvent& event) {}
  // Copies whose source is ready: the caller has ordered them after the work that wrote src (on the
  // host, or by wait_event), so they need not wait for the rest of the source's queue. The host
  // waits for copy_to_host_ready; copy_from_peer_ready is queued on this device like a kernel.
  virtual void copy_to_host_ready(void* dst, const void* src, std::size_t bytes) { copy_to_host(dst, src, bytes); }
  virtual bool copy_from_peer_ready(void* dst, Device& from, const void* src, std::size_t bytes) {
    return copy_from_peer(dst, from, src, bytes);
  }
  // Returns the memory a caching allocator keeps for reuse to the system (torch.cuda.empty_cache);
  // nothing on devices that do not cache.
  virtual void empty_cache() {}

  // For tests and benchmarks of uneven devices: make this device `factor` times slower than it is
  // (after each kernel the executor waits factor - 1 times the kernel's time). 1: full speed.
  void set_slowdown(double factor);
  double slowdown() const { return slowdown_; }

 protected:
  // Bytes held from the system, for devices with a caching allocator (memory_stats().reserved);
  // nullopt: reserved is the peak of in_use.
  virtual std::optional<std::size_t> reserved_bytes() const { return std::nullopt; }
  virtual void* do_allocate(std::size_t bytes) = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes) = 0;

 private:
  DeviceKind kind_;
  int index_;
  double slowdown_ = 1.0;
  std::string name_;
  mutable std::mutex stats_mutex_;
  MemoryStats stats_;
};

// Copies `bytes` from `src` on device `from` to `dst` on device `to`, whatever their kinds.
void copy_between(Device& to, void* dst, Device& from, const void* src, std::size_t bytes);
// The same for a source that is ready (Device::copy_to_host_ready): the executor's copies between lanes.
void copy_between_ready(Device& to, void* dst, Device& from, const void* src, std::size_t bytes);

// --- registry --------------------------------------------------------------------------------

// Looks a device up by name: "cpu:0", "cpu:3", "cuda:1"; "cpu" and "cuda" mean index 0.
// CPU devices are created on first use, cpu:0 to cpu:<max_cpu_devices() - 1>; CUDA devices exist
// when the GPU is visible. Throws NotFoundError naming the visible devices (and, for cpu:N beyond
// the limit, the limit and how to raise it) otherwise.
Device& device(std::string_view name);
Device& cpu_device(int index = 0);

// How many cpu:N devices may be created on demand: kDefaultMaxCpuDevices, or the environment
// variable TOWER_MAX_CPU_DEVICES (read at each call), a number from 1 to kMaxCpuDevicesCeiling;
// ValueError naming the variable and the range for anything else.
inline constexpr int kDefaultMaxCpuDevices = 64;
// What a machine runs in reasonable time and memory: each CPU device is a thread of its own in every
// plan that runs on it (its lane; fit compiles two or three plans) and holds its tower's copy of the
// weights, gradients and slots. train_mnist's MLP, an epoch of 8 batches of 128 on 2 cores
// (docs/benchmarks.md, "Many CPU devices"): 256 devices 10 s and 3.7 GB; 512 29 s and 7.3 GB; 1024
// 165 s and 14.5 GB, most of a 23 GB machine, so the ceiling is 256.
inline constexpr int kMaxCpuDevicesCeiling = 256;
int max_cpu_devices();

// The device new layer weights, and the computations of Keras models built from them, go to (as
// `with tf.device("/gpu:0"):` in Keras): cpu:0 unless a DefaultDeviceScope on this thread says otherwise.
Device& default_device();

// Makes `device` the default device of this thread while it lives (scopes nest):
//   { DefaultDeviceScope gpu("cuda:0"); model = make_model(); }  // weights on the GPU
//   model.fit(...);                                             // runs there
class DefaultDeviceScope {
 public:
  explicit DefaultDeviceScope(Device& device);
  explicit DefaultDeviceScope(std::string_view name) : DefaultDeviceScope(tower::device(name)) {}
  ~DefaultDeviceScope();
  DefaultDeviceScope(const DefaultDeviceScope&) = delete;
  DefaultDeviceScope& operator=(const DefaultDeviceScope&) = delete;

 private:
  Device* previous_;
};
// The devices of one kind that exist now (CPU: those created so far; CUDA: all visible GPUs).
std::vector<Device*> list_devices(DeviceKind kind);
// How many devices of `kind` can exist (CPU: created on demand up to max_cpu_devices(), reported as
// -1; CUDA: logical GPUs, which
// are the visible GPUs unless set_logical_device_configuration split them).
int device_count(DeviceKind kind);

// Gives cpu:<index> a memory limit as a logical GPU has one (LogicalDeviceConfiguration::memory_limit):
// an allocation that would take it past `bytes` throws OutOfMemoryError naming the device and the limit,
// as a full GPU would, so that tests and benchmarks of model parallelism can show a model that does not
// fit one device training on several. 0 lifts the limit. Defined by the CPU backend.
void set_cpu_device_memory_limit(int index, std::size_t bytes);

// --- logical GPUs ------------------------------------------------------------------------------

// One logical GPU carved out of a physical one (tf.config.LogicalDeviceConfiguration).
struct LogicalDeviceConfiguration {
  std::size_t memory_limit = 0;  // the most bytes it may hold; 0: no limit of its own
};

// Splits physical GPU `gpu` into logical GPUs, each with its own stream, handles and memory limit
// (tf.config.set_logical_device_configuration), to test several towers on one GPU. cuda:0, cuda:1, ...
// then number the logical GPUs, those of physical GPU 0 first. Call it before any GPU is used:
// afterwards it throws, as TensorFlow does. An unknown GPU throws NotFoundError.
void set_logical_device_configuration(int gpu, std::vector<LogicalDeviceConfiguration> logical);

// Where a logical GPU lives: its physical GPU and its memory limit (0: none).
struct LogicalGpu {
  int physical = 0;
  std::size_t memory_limit = 0;
};
// The cuda:N layout of `physical_count` GPUs split as `split` says (GPUs not in it stay whole):
// element i is cuda:i.
std::vector<LogicalGpu> logical_gpu_layout(int physical_count,
                                           const std::map<int, std::vector<LogicalDeviceConfiguration>>& split);

// A backend registers how to make its devices: `count` returns how many physical devices can exist
// (-1: any), `make` builds device `index`. A kind that can be split into logical devices (CUDA) gives
// make_logical instead of make: logical device `index` on physical device `physical`.
struct DeviceFactory {
  std::function<int()> count;
  std::function<std::unique_ptr<Device>(int index)> make;
  std::function<std::unique_ptr<Device>(int index, LogicalGpu where)> make_logical = nullptr;
  // Page-locked host memory for this kind's copies (CUDA), or null: see pinned_host_device.
  std::function<Device*()> pinned_host = nullptr;
  // Why the all_reduce op cannot have a replica on each of `devices` (all of this kind, all different),
  // or "" when it can. Null: it always can.
  std::function<std::string(const std::vector<Device*>& devices)> all_reduce_unsupported = nullptr;
  // Why count() is 0 ("" when devices are visible or the question does not arise): CUDA's error name and
  // text (an old driver, a missing library) or that no device exists. Null: nothing to say.
  std::function<std::string()> unavailable = nullptr;
  // The replicas of all_reduce group `group` will not all come (a lane failed): end what this kind's
  // collectives queued or run for it (NCCL: abort and evict its communicators), and refuse the group
  // until reset_collective (a new run). Null: the host rendezvous (core/collective.h) is all there is.
  std::function<void(const std::string& group)> abort_collective = nullptr;
  std::function<void(const std::string& group)> reset_collective = nullptr;
};
void register_device_factory(DeviceKind kind, DeviceFactory factory);

// Every backend's abort_collective / reset_collective hook for `group` (core/collective.cpp calls them
// from abort_collective and reset_collective).
void abort_backend_collectives(const std::string& group);
void reset_backend_collectives(const std::string& group);

// Why no device of `kind` is visible, from its backend ("" when some are, or when it has nothing to
// say; "tower was built without ..." when no backend of that kind is compiled in). The GPU test suites
// print it when they skip.
std::string devices_unavailable_reason(DeviceKind kind);

// Host memory that a GPU copies from and to by DMA, without staging (cudaHostAlloc): a host-accessible
// device whose tensors go to a GPU faster and while the GPU computes. Null when no backend of `kind`
// offers it or no such device is visible (then ordinary host memory is the fallback).
Device* pinned_host_device(DeviceKind kind = DeviceKind::cuda);

// Why the all_reduce op (core/ops.h) cannot have one replica on each of `devices`, or "" when it can:
// CPU devices meet on the host; GPUs need NCCL and a physical GPU each.
std::string all_reduce_unsupported(const std::vector<Device*>& devices);

// Defined by the backends (backends/backends.cpp): registers every compiled-in backend's device
// factory and kernels. The registries call it once, on first use; core includes no backend header.
void register_builtin_backends();

}  // namespace tower
