// Mirrored variables: creating the copies and the training step's all-reduce and updates.
#include "tower/parallel/mirrored_variables.h"

#include <algorithm>

#include "tower/core/autodiff.h"
#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/parallel/all_reduce.h"

namespace tower::parallel {

std::map<std::string, std::map<const Variable*, VariablePtr>> make_mirrors(const Model& model,
                                                                           const std::vector<std::string>& devices) {
  std::map<std::string, std::map<const Variable*, VariablePtr>> mirrors;
  for (const auto& name : devices) {
    Device& dev = device(name);
    for (const auto& w : model.weights())
      if (&w->device() != &dev) mirrors[name][w.get()] = make_mirror(w, dev);
  }
  return mirrors;
}

std::vector<Node*> apply_mirrored_gradients(Graph& graph, const TowerLayout& towers, const SymbolicTensor& loss,
                                            const std::vector<VariablePtr>& variables, optimizers::Optimizer& optimizer,
                                            const SymbolicTensor& learning_rate, const SymbolicTensor& iteration,
                                            CrossDeviceOps how) {
  std::vector<std::string> replicas = towers.devices;
  const std::string home = variables.front()->device().name();  // Model refuses weights on several devices
  if (std::find(replicas.begin(), replicas.end(), home) == replicas.end()) replicas.push_back(home);

  // copies[r][i]: replica r's copy of variables[i].
  std::vector<std::vector<VariablePtr>> copies(replicas.size());
  std::vector<SymbolicTensor> reads;
  for (std::size_t r = 0; r < replicas.size(); ++r)
    for (const auto& v : variables) {
      VariablePtr copy = v;
      if (v->device().name() != replicas[r]) {
        const auto on = towers.mirrors.find(replicas[r]);
        if (on == towers.mirrors.end() || !on->second.count(v.get()))
          raise<ValueError>("towers: variable \"{}\" has no mirror on {}; wrap the model again after adding layers",
                            v->name(), replicas[r]);
        copy = on->second.at(v.get());
      }
      copies[r].push_back(copy);
      reads.push_back(graph.variable(copy));
    }
  const auto all = gradients(loss, reads);
  std::vector<std::vector<SymbolicTensor>> grads(replicas.size());
  for (std::size_t r = 0; r < replicas.size(); ++r)
    grads[r].assign(all.begin() + static_cast<std::ptrdiff_t>(r * variables.size()),
                    all.begin() + static_cast<std::ptrdiff_t>((r + 1) * variables.size()));
  const auto sums = all_reduce_sum(graph, replicas, grads, how);

  std::vector<Node*> updates;
  for (std::size_t r = 0; r < replicas.size(); ++r) {
    Graph::DeviceScope on(graph, replicas[r]);
    for (Node* u : optimizer.apply_gradients(graph, sums[r], copies[r], learning_rate, iteration)) updates.push_back(u);
  }
  return updates;
}

decltype(TowerLayout::apply_gradients) mirrored_gradients(CrossDeviceOps how) {
  return [how](Graph& graph, const TowerLayout& towers, const SymbolicTensor& loss,
               const std::vector<VariablePtr>& variables, optimizers::Optimizer& optimizer,
               const SymbolicTensor& learning_rate, const SymbolicTensor& iteration) {
    return apply_mirrored_gradients(graph, towers, loss, variables, optimizer, learning_rate, iteration, how);
  };
}

}  // namespace tower::parallel
