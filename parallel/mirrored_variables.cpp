// Mirrored variables: the copies, and the training step's all-reduce and updates.
#include "tower/parallel/mirrored_variables.h"

#include "tower/core/autodiff.h"
#include "tower/core/device.h"
#include "tower/optimizers/optimizer.h"

namespace tower::parallel {

std::map<const Variable*, VariablePtr> MirrorSet::on(const std::string& device_name,
                                                     const std::vector<VariablePtr>& variables) {
  std::lock_guard lock(mutex_);
  Device& dev = device(device_name);
  std::map<const Variable*, VariablePtr> copies;
  for (const auto& v : variables) {
    if (&v->device() == &dev) continue;
    Entry& entry = entries_[v.get()];
    if (entry.primary.lock() != v) entry = {.primary = v, .by_device = {}};  // new, or another variable at that address
    VariablePtr& mirror = entry.by_device[dev.name()];
    if (!mirror) mirror = make_mirror(v, dev);
    copies[v.get()] = mirror;
  }
  return copies;
}

VariablePtr MirrorSet::find(const VariablePtr& variable, const std::string& device_name) const {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(variable.get());
  if (it == entries_.end() || it->second.primary.lock() != variable) return nullptr;
  const auto copy = it->second.by_device.find(device_name);
  return copy == it->second.by_device.end() ? nullptr : copy->second;
}

std::vector<Node*> apply_mirrored_gradients(Graph& graph, const std::vector<std::string>& replicas,
                                            const std::vector<std::vector<VariablePtr>>& copies,
                                            const SymbolicTensor& loss, optimizers::Optimizer& optimizer,
                                            const SymbolicTensor& learning_rate, const SymbolicTensor& iteration,
                                            CrossDeviceOps how, const AcrossWorkers& across) {
  const std::size_t n = copies.front().size();
  std::vector<SymbolicTensor> reads;
  for (const auto& replica : copies)
    for (const auto& copy : replica) reads.push_back(graph.variable(copy));
  const auto all = gradients(loss, reads);
  std::vector<std::vector<SymbolicTensor>> grads(replicas.size());
  for (std::size_t r = 0; r < replicas.size(); ++r)
    grads[r].assign(all.begin() + static_cast<std::ptrdiff_t>(r * n), all.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
  const auto sums = all_reduce_sum(graph, replicas, grads, how, kDefaultBucketBytes, across);

  std::vector<Node*> updates;
  for (std::size_t r = 0; r < replicas.size(); ++r) {
    Graph::DeviceScope on(graph, replicas[r]);
    for (Node* u : optimizer.apply_gradients(graph, sums[r], copies[r], learning_rate, iteration)) updates.push_back(u);
  }
  return updates;
}

}  // namespace tower::parallel
