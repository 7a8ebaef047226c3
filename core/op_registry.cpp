// The op table and the kernel table.
#include "tower/core/op_registry.h"

#include <map>
#include <mutex>

#include "tower/core/ops/register_ops.h"
#include "tower/core/registry_init.h"

namespace tower {

namespace {

struct Tables {
  std::mutex mutex;
  std::map<std::string, OpDef, std::less<>> ops;
  std::map<std::pair<std::string, DeviceKind>, KernelFn, std::less<>> kernels;
  std::map<std::pair<std::string, DeviceKind>, GroupKernelFn, std::less<>> group_kernels;
  std::map<DeviceKind, HalfKernelAdapter> half_adapters;
};

Tables& tables() {
  static Tables t;
  return t;
}

void ensure_ops_registered() {
  static std::once_flag once;
  std::call_once(once, [] { register_all_ops(); });
}

}  // namespace

void register_op(OpDef def) {
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  std::string name = def.name;
  t.ops[name] = std::move(def);
}

const OpDef& op_def(std::string_view name) {
  ensure_ops_registered();
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  auto it = t.ops.find(name);
  if (it == t.ops.end()) raise<NotFoundError>("no op named \"{}\" is registered", name);
  return it->second;
}

void register_kernel(std::string_view op, DeviceKind kind, KernelFn fn) {
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  t.kernels[{std::string(op), kind}] = fn;
}

bool has_kernel(std::string_view op, DeviceKind kind) {
  ensure_backends_registered();
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  return t.kernels.count({std::string(op), kind}) != 0;
}

std::vector<std::string> ops_with_kernel(DeviceKind kind) {
  ensure_backends_registered();
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  std::vector<std::string> names;
  for (const auto& [key, fn] : t.kernels)
    if (key.second == kind) names.push_back(key.first);
  return names;  // the map's order: sorted by name
}

void register_half_kernel_adapter(DeviceKind kind, HalfKernelAdapter adapter) {
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  t.half_adapters[kind] = adapter;
}

HalfKernelAdapter find_half_kernel_adapter(DeviceKind kind) {
  ensure_backends_registered();
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  auto it = t.half_adapters.find(kind);
  return it == t.half_adapters.end() ? nullptr : it->second;
}

KernelFn find_kernel(std::string_view op, DeviceKind kind) {
  ensure_backends_registered();
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  auto it = t.kernels.find({std::string(op), kind});
  if (it == t.kernels.end())
    raise<NotFoundError>("no {} kernel for op \"{}\": place the op on a device that has one", device_kind_name(kind), op);
  return it->second;
}

void register_group_kernel(std::string_view op, DeviceKind kind, GroupKernelFn fn) {
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  t.group_kernels[{std::string(op), kind}] = fn;
}

GroupKernelFn find_group_kernel(std::string_view op, DeviceKind kind) {
  ensure_backends_registered();
  auto& t = tables();
  std::lock_guard lock(t.mutex);
  auto it = t.group_kernels.find({std::string(op), kind});
  return it == t.group_kernels.end() ? nullptr : it->second;
}

}  // namespace tower
