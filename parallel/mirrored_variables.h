// Mirrored variables for parallel towers: one copy of each variable per device, made from it
// (Variable::primary), the per-replica gradients summed by an all-reduce, the same optimizer update
// on every copy. The variable itself is the primary copy: it is what the model saves, loads and shows.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tower/core/graph.h"
#include "tower/core/variable.h"
#include "tower/parallel/all_reduce.h"

namespace tower::optimizers {
class Optimizer;
}

namespace tower::parallel {

// The mirrors of variables, per device: made from a variable the first time a tower on that device
// needs it, kept while the variable lives (every engine graph of a model reads the same copies).
class MirrorSet {
 public:
  // For each of `variables` that does not live on `device`, its mirror there (made now if missing),
  // keyed by the variable.
  std::map<const Variable*, VariablePtr> on(const std::string& device, const std::vector<VariablePtr>& variables);
  // The mirror of `variable` on `device`, or null.
  VariablePtr find(const VariablePtr& variable, const std::string& device) const;

 private:
  struct Entry {
    std::weak_ptr<Variable> primary;               // the entry is stale once it is gone
    std::map<std::string, VariablePtr> by_device;  // its mirrors
  };
  mutable std::mutex mutex_;
  std::map<const Variable*, Entry> entries_;
};

// A training step's updates with mirrored variables. copies[r][i]: replica r's copy of variable i
// (the variable itself where it lives on replicas[r]). Each replica's gradients are the loss's
// gradients of its copies; all_reduce_sum adds them (fixed-order buckets, `how`), and each replica
// applies `optimizer` to its copies with the sums, on its own device, with its own slots. `across`:
// each bucket's sum is also summed across the worker processes (all_reduce_sum).
std::vector<Node*> apply_mirrored_gradients(Graph& graph, const std::vector<std::string>& replicas,
                                            const std::vector<std::vector<VariablePtr>>& copies,
                                            const SymbolicTensor& loss, optimizers::Optimizer& optimizer,
                                            const SymbolicTensor& learning_rate, const SymbolicTensor& iteration,
                                            CrossDeviceOps how, const AcrossWorkers& across = {});

}  // namespace tower::parallel
