// Mirrored variables for parallel towers: one copy of each variable per device, initialised from it
// (Variable::primary), the per-tower gradients summed by an all-reduce, the same optimizer update on
// every copy. The variable itself is the primary copy: it is what the model saves, loads and shows.
#pragma once

#include <string>
#include <vector>

#include "tower/layers/engine/model.h"
#include "tower/parallel/all_reduce.h"

namespace tower::parallel {

// For each of `devices`, a mirror of every weight of `model` that does not live there
// (TowerLayout::mirrors).
std::map<std::string, std::map<const Variable*, VariablePtr>> make_mirrors(const Model& model,
                                                                           const std::vector<std::string>& devices);

// TowerLayout::apply_gradients for mirrored towers. The replicas are the towers' devices, then the
// variables' own device when no tower runs there (its copy gets the same update, so the model's
// weights are current whenever a callback or the user reads them). Each replica's gradients are the
// loss's gradients of its copies; all_reduce_sum adds them (fixed-order buckets), and each replica
// applies `optimizer` to its copies with the sums, on its own device, with its own slots.
std::vector<Node*> apply_mirrored_gradients(Graph& graph, const TowerLayout& towers, const SymbolicTensor& loss,
                                            const std::vector<VariablePtr>& variables, optimizers::Optimizer& optimizer,
                                            const SymbolicTensor& learning_rate, const SymbolicTensor& iteration,
                                            CrossDeviceOps how);

// apply_mirrored_gradients with `how`, as TowerLayout::apply_gradients holds it.
decltype(TowerLayout::apply_gradients) mirrored_gradients(CrossDeviceOps how);

}  // namespace tower::parallel
