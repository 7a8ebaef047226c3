// Device bookkeeping, cross-device copies and the device registry.
#include "tower/core/device.h"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "tower/core/error.h"
#include "tower/core/registry_init.h"

namespace tower {

std::string_view device_kind_name(DeviceKind kind) { return kind == DeviceKind::cpu ? "cpu" : "cuda"; }

Device::Device(DeviceKind kind, int index)
    : kind_(kind), index_(index), name_(fmt::format("{}:{}", device_kind_name(kind), index)) {}

Device::Device(DeviceKind kind, int index, std::string name) : kind_(kind), index_(index), name_(std::move(name)) {}

void Device::set_slowdown(double factor) {
  if (!(factor >= 1.0)) raise<ValueError>("{}: set_slowdown needs a factor >= 1, got {}", name_, factor);
  slowdown_ = factor;
}

void* Device::allocate(std::size_t bytes) {
  void* p = do_allocate(bytes);
  std::lock_guard lock(stats_mutex_);
  stats_.in_use += bytes;
  stats_.peak = std::max(stats_.peak, stats_.in_use);
  stats_.reserved = std::max(stats_.reserved, stats_.in_use);
  ++stats_.allocations;
  return p;
}

void Device::deallocate(void* ptr, std::size_t bytes) {
  if (!ptr) return;
  do_deallocate(ptr, bytes);
  std::lock_guard lock(stats_mutex_);
  stats_.in_use -= bytes;
}

MemoryStats Device::memory_stats() const {
  MemoryStats stats;
  {
    std::lock_guard lock(stats_mutex_);
    stats = stats_;
  }
  if (auto reserved = reserved_bytes()) stats.reserved = *reserved;
  return stats;
}

void copy_between(Device& to, void* dst, Device& from, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (&to == &from) return to.copy_within(dst, src, bytes);
  if (to.host_accessible()) return from.copy_to_host(dst, src, bytes);
  if (from.host_accessible()) return to.copy_from_host(dst, src, bytes);
  if (to.copy_from_peer(dst, from, src, bytes)) return;
  // Two accelerators without a direct path: stage through the host.
  std::vector<unsigned char> staging(bytes);
  from.copy_to_host(staging.data(), src, bytes);
  to.copy_from_host(dst, staging.data(), bytes);
}

void copy_between_ready(Device& to, void* dst, Device& from, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (&to == &from) return to.copy_within(dst, src, bytes);
  if (to.host_accessible()) return from.copy_to_host_ready(dst, src, bytes);
  if (from.host_accessible()) return to.copy_from_host(dst, src, bytes);
  if (to.copy_from_peer_ready(dst, from, src, bytes)) return;
  // Through the host: the caller ordered only `to`'s queue after src's producer, so the host waits for
  // `from` here (no backend has two kinds of accelerator without a path between them today).
  std::vector<unsigned char> staging(bytes);
  from.synchronize();
  from.copy_to_host_ready(staging.data(), src, bytes);
  to.copy_from_host(dst, staging.data(), bytes);
}

namespace {

// Devices the registry never destroys (see ~Registry): held here so that they stay reachable (not a
// leak to LeakSanitizer) until the process ends. A plain pointer, so no destructor of its own runs.
std::vector<std::unique_ptr<Device>>* g_never_destroyed = nullptr;

struct Registry {
  std::mutex mutex;
  std::map<DeviceKind, DeviceFactory> factories;
  std::map<std::pair<DeviceKind, int>, std::unique_ptr<Device>> devices;
  std::map<int, std::vector<LogicalDeviceConfiguration>> logical_gpus;  // physical GPU -> its split

  // The registry is a function static made before the first CUDA call, so it is destroyed after the
  // CUDA runtime's own atexit teardown: a CudaDevice's destructor would then destroy cuBLAS/cuDNN
  // handles and streams and cudaFree its cache in a torn-down runtime (an exit-time crash or hang that
  // turns a passing program into a failing exit code). So, as PyTorch does with its CUDA handles and
  // caching allocator, devices other than the CPU's are never destroyed: the driver reclaims their
  // memory when the process ends. CPU devices (thread pools) are destroyed as usual.
  ~Registry() {
    for (auto& [key, device] : devices)
      if (key.first != DeviceKind::cpu && device) {
        if (!g_never_destroyed) g_never_destroyed = new std::vector<std::unique_ptr<Device>>();
        g_never_destroyed->push_back(std::move(device));
      }
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string visible_devices_text() {
  std::string s;
  for (auto kind : {DeviceKind::cpu, DeviceKind::cuda}) {
    int n = device_count(kind);
    if (!s.empty()) s += ", ";
    if (n < 0)
      s += fmt::format("{}:0 to {}:{} (created on first use)", device_kind_name(kind), device_kind_name(kind),
                       max_cpu_devices() - 1);
    else if (n == 0) {
      const std::string why = devices_unavailable_reason(kind);
      s += why.empty() ? fmt::format("no {} devices", device_kind_name(kind))
                       : fmt::format("no {} devices ({})", device_kind_name(kind), why);
    }
    else
      s += fmt::format("{}:0 to {}:{}", device_kind_name(kind), device_kind_name(kind), n - 1);
  }
  return s;
}

}  // namespace

void register_device_factory(DeviceKind kind, DeviceFactory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[kind] = std::move(factory);
}

namespace {

// Under r.mutex: the devices `kind` can have, logical ones counted.
int count_locked(Registry& r, DeviceKind kind) {
  auto it = r.factories.find(kind);
  if (it == r.factories.end()) return 0;
  const int physical = it->second.count();
  if (!it->second.make_logical || physical < 0) return physical;
  return static_cast<int>(logical_gpu_layout(physical, r.logical_gpus).size());
}

}  // namespace

namespace {
// The hooks `member` of every registered factory, copied out of the lock before they run.
std::vector<std::function<void(const std::string&)>> collective_hooks(
    std::function<void(const std::string&)> DeviceFactory::*member) {
  ensure_backends_registered();
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::function<void(const std::string&)>> hooks;
  for (const auto& [kind, factory] : r.factories)
    if (factory.*member) hooks.push_back(factory.*member);
  return hooks;
}
}  // namespace

void abort_backend_collectives(const std::string& group) {
  for (const auto& hook : collective_hooks(&DeviceFactory::abort_collective)) hook(group);
}

void reset_backend_collectives(const std::string& group) {
  for (const auto& hook : collective_hooks(&DeviceFactory::reset_collective)) hook(group);
}

std::string devices_unavailable_reason(DeviceKind kind) {
  ensure_backends_registered();
  std::function<std::string()> why;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.factories.find(kind);
    if (it == r.factories.end()) return fmt::format("tower was built without the {} backend", device_kind_name(kind));
    if (count_locked(r, kind) != 0) return "";
    why = it->second.unavailable;
  }
  return why ? why() : std::string();
}

int device_count(DeviceKind kind) {
  ensure_backends_registered();
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return count_locked(r, kind);
}

std::vector<LogicalGpu> logical_gpu_layout(int physical_count,
                                           const std::map<int, std::vector<LogicalDeviceConfiguration>>& split) {
  std::vector<LogicalGpu> layout;
  for (int gpu = 0; gpu < physical_count; ++gpu) {
    auto it = split.find(gpu);
    if (it == split.end()) {
      layout.push_back({gpu, 0});
      continue;
    }
    for (const auto& logical : it->second) layout.push_back({gpu, logical.memory_limit});
  }
  return layout;
}

void set_logical_device_configuration(int gpu, std::vector<LogicalDeviceConfiguration> logical) {
  ensure_backends_registered();
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.factories.find(DeviceKind::cuda);
  const int physical = it == r.factories.end() ? 0 : it->second.count();
  if (gpu < 0 || gpu >= physical)
    raise<NotFoundError>("set_logical_device_configuration: GPU {} does not exist; {}", gpu,
                         it == r.factories.end() ? "tower was built without CUDA"
                         : physical == 0         ? "no GPU is visible"
                                                 : fmt::format("GPUs 0 to {} are visible", physical - 1));
  if (logical.empty())
    raise<ValueError>("set_logical_device_configuration(GPU {}): give at least one LogicalDeviceConfiguration", gpu);
  for (const auto& [key, dev] : r.devices)
    if (key.first == DeviceKind::cuda)
      raise<Error>("set_logical_device_configuration(GPU {}): {} is in use already, and GPUs cannot be split once "
                   "used; call it at the start of the program, before any GPU work",
                   gpu, dev->name());
  r.logical_gpus[gpu] = std::move(logical);
}

int max_cpu_devices() {
  const char* env = std::getenv("TOWER_MAX_CPU_DEVICES");
  if (!env || !*env) return kDefaultMaxCpuDevices;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(env, &end, 10);
  if (end == env || *end != '\0' || errno == ERANGE || n < 1 || n > kMaxCpuDevicesCeiling)
    raise<ValueError>("environment variable TOWER_MAX_CPU_DEVICES=\"{}\" is not a CPU device count this machine can "
                      "run: set a number from 1 to {} (each CPU device is a thread of its own in every plan that "
                      "runs on it: more devices pass common per-user thread limits), or unset it for {}",
                      env, kMaxCpuDevicesCeiling, kDefaultMaxCpuDevices);
  return static_cast<int>(n);
}

static Device& get_device(DeviceKind kind, int index) {
  ensure_backends_registered();
  auto& r = registry();
  std::unique_lock lock(r.mutex);
  auto key = std::make_pair(kind, index);
  if (auto it = r.devices.find(key); it != r.devices.end()) return *it->second;
  auto f = r.factories.find(kind);
  const int count = count_locked(r, kind);
  if (index < 0 || (count >= 0 && index >= count)) {
    lock.unlock();
    raise<NotFoundError>("device {}:{} does not exist; visible: {}", device_kind_name(kind), index,
                         visible_devices_text());
  }
  // Devices made on demand (CPU) stop at a limit, so that a typo such as cpu:99 is refused rather
  // than creating a hundredth device with its own thread pool.
  if (count < 0 && index > 0 && index >= max_cpu_devices()) {  // cpu:0 always exists
    lock.unlock();
    raise<NotFoundError>("device {}:{} does not exist: {} devices are created on demand from {}:0 to {}:{}; set the "
                         "environment variable TOWER_MAX_CPU_DEVICES (now {}, at most {}) to allow more",
                         device_kind_name(kind), index, device_kind_name(kind), device_kind_name(kind),
                         device_kind_name(kind), max_cpu_devices() - 1, max_cpu_devices(), kMaxCpuDevicesCeiling);
  }
  auto& slot = r.devices[key];
  if (f->second.make_logical)
    slot = f->second.make_logical(index, logical_gpu_layout(f->second.count(), r.logical_gpus).at(index));
  else
    slot = f->second.make(index);
  return *slot;
}

Device& cpu_device(int index) { return get_device(DeviceKind::cpu, index); }

namespace {
thread_local Device* scoped_default = nullptr;  // the innermost DefaultDeviceScope's device
}  // namespace

Device& default_device() { return scoped_default ? *scoped_default : cpu_device(); }

DefaultDeviceScope::DefaultDeviceScope(Device& device) : previous_(scoped_default) { scoped_default = &device; }

DefaultDeviceScope::~DefaultDeviceScope() { scoped_default = previous_; }

Device* pinned_host_device(DeviceKind kind) {
  ensure_backends_registered();
  std::function<Device*()> make;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.factories.find(kind);
    if (it == r.factories.end() || !it->second.pinned_host || count_locked(r, kind) <= 0) return nullptr;
    make = it->second.pinned_host;
  }
  return make();
}

std::string all_reduce_unsupported(const std::vector<Device*>& devices) {
  if (devices.size() < 2) return "it needs at least two replicas";
  std::set<Device*> distinct(devices.begin(), devices.end());
  if (distinct.size() != devices.size()) return "two replicas are on one device";
  for (Device* d : devices)
    if (d->kind() != devices.front()->kind())
      return fmt::format("the replicas are on {} and {}, and a collective runs on devices of one kind", devices.front()->name(),
                         d->name());
  ensure_backends_registered();
  std::function<std::string(const std::vector<Device*>&)> check;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    if (auto it = r.factories.find(devices.front()->kind()); it != r.factories.end())
      check = it->second.all_reduce_unsupported;
  }
  return check ? check(devices) : std::string();
}

Device& device(std::string_view name) {
  // Accept TF's spellings too: "/gpu:1", "GPU:1", "/device:CPU:0".
  std::string text;
  for (char c : name) text += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view prefix : {"/device:", "/"})
    if (text.rfind(prefix, 0) == 0) text = text.substr(prefix.size());
  std::string kind_text = text, index_text = "0";
  if (auto colon = text.find(':'); colon != std::string::npos) {
    kind_text = text.substr(0, colon);
    index_text = text.substr(colon + 1);
  }
  DeviceKind kind;
  if (kind_text == "cpu")
    kind = DeviceKind::cpu;
  else if (kind_text == "cuda" || kind_text == "gpu")
    kind = DeviceKind::cuda;
  else
    raise<NotFoundError>("unknown device \"{}\": expected a name like cpu:0 or cuda:1", name);
  int index = 0;
  try {
    std::size_t used = 0;
    index = std::stoi(index_text, &used);
    if (used != index_text.size()) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    raise<NotFoundError>("unknown device \"{}\": the index after ':' must be a number", name);
  }
  return get_device(kind, index);
}

std::vector<Device*> list_devices(DeviceKind kind) {
  std::vector<Device*> out;
  int n = device_count(kind);
  if (n >= 0) {
    for (int i = 0; i < n; ++i) out.push_back(&get_device(kind, i));
    return out;
  }
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto& [key, dev] : r.devices)
    if (key.first == kind) out.push_back(dev.get());
  return out;
}

}  // namespace tower
