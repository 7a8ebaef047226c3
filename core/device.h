// Device: the interface every backend's device implements (memory, copies, synchronization),
// and the registry that names devices as Keras/TF do: "cpu:0", "cpu:1", "cuda:0".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tower {

enum class DeviceKind : std::uint8_t { cpu, cuda };
std::string_view device_kind_name(DeviceKind kind);

struct MemoryStats {
  std::size_t in_use = 0;    // bytes handed out and not yet returned
  std::size_t peak = 0;      // the most that was ever in use at once
  std::size_t reserved = 0;  // bytes held from the system (>= in_use with a caching allocator)
  std::size_t allocations = 0;
};

class Device {
 public:
  Device(DeviceKind kind, int index);
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
  // Waits until all work queued on this device has finished.
  virtual void synchronize() {}
  // Returns the memory a caching allocator keeps for reuse to the system (torch.cuda.empty_cache);
  // nothing on devices that do not cache.
  virtual void empty_cache() {}

 protected:
  // Bytes held from the system, for devices with a caching allocator (memory_stats().reserved);
  // nullopt: reserved is the peak of in_use.
  virtual std::optional<std::size_t> reserved_bytes() const { return std::nullopt; }
  virtual void* do_allocate(std::size_t bytes) = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes) = 0;

 private:
  DeviceKind kind_;
  int index_;
  std::string name_;
  mutable std::mutex stats_mutex_;
  MemoryStats stats_;
};

// Copies `bytes` from `src` on device `from` to `dst` on device `to`, whatever their kinds.
void copy_between(Device& to, void* dst, Device& from, const void* src, std::size_t bytes);

// --- registry --------------------------------------------------------------------------------

// Looks a device up by name: "cpu:0", "cpu:3", "cuda:1"; "cpu" and "cuda" mean index 0.
// CPU devices are created on first use; CUDA devices exist when the GPU is visible.
// Throws NotFoundError listing the visible devices otherwise.
Device& device(std::string_view name);
Device& cpu_device(int index = 0);
// The devices of one kind that exist now (CPU: those created so far; CUDA: all visible GPUs).
std::vector<Device*> list_devices(DeviceKind kind);
// How many devices of `kind` can exist (CPU: unbounded, reported as -1; CUDA: visible GPUs).
int device_count(DeviceKind kind);

// A backend registers how to make its devices: `count` returns how many can exist (-1: any),
// `make` builds device `index`. Called once per kind by the backends' registration function.
struct DeviceFactory {
  std::function<int()> count;
  std::function<std::unique_ptr<Device>(int index)> make;
};
void register_device_factory(DeviceKind kind, DeviceFactory factory);

// Defined by the backends (backends/backends.cpp): registers every compiled-in backend's device
// factory and kernels. The registries call it once, on first use; core includes no backend header.
void register_builtin_backends();

}  // namespace tower
