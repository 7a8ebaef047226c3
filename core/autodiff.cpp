// Reverse-mode autodiff over the Graph: walks the nodes between xs and y backwards, calling each
// op's gradient function and summing the contributions that reach every node output.
#include "tower/core/autodiff.h"

#include <map>

#include "tower/core/op_registry.h"
#include "tower/core/ops.h"

namespace tower {

std::vector<SymbolicTensor> gradients(const SymbolicTensor& y, const std::vector<SymbolicTensor>& xs,
                                      const SymbolicTensor& grad_y) {
  if (!y.defined()) raise<ValueError>("gradients: y is undefined");
  if (!is_floating(y.dtype())) raise<DTypeError>("gradients: y ({}) must be a float tensor", y.name());
  Graph& graph = y.graph();
  const int top = y.node()->id();
  const auto count = static_cast<std::size_t>(top + 1);

  // Nodes that depend on some x, and nodes y depends on: gradients flow through both.
  std::vector<char> from_x(count, 0), to_y(count, 0);
  for (const auto& x : xs)
    if (x.node()->id() <= top) from_x[static_cast<std::size_t>(x.node()->id())] = 1;
  for (int id = 0; id <= top; ++id)
    for (const auto& in : graph.node(id).inputs())
      if (from_x[static_cast<std::size_t>(in.node()->id())]) from_x[static_cast<std::size_t>(id)] = 1;
  to_y[static_cast<std::size_t>(top)] = 1;
  for (int id = top; id >= 0; --id)
    if (to_y[static_cast<std::size_t>(id)])
      for (const auto& in : graph.node(id).inputs()) to_y[static_cast<std::size_t>(in.node()->id())] = 1;
  auto relevant = [&](int id) { return from_x[static_cast<std::size_t>(id)] && to_y[static_cast<std::size_t>(id)]; };

  // (node id, output) -> the sum of the contributions so far. Each is added as it comes (on the
  // producer's device, in the order they come), so that one contribution at a time is alive beside the
  // sum: a variable that M micro-batches (or towers sharing it) read gets M contributions, which summed
  // only at the end would all be held until the backward pass is over.
  std::map<std::pair<int, int>, SymbolicTensor> grads;
  {
    Graph::DeviceScope scope(graph, y.node()->device());
    grads[{top, y.index()}] = grad_y.defined() ? grad_y : ops::ones_like(y);
  }

  for (int id = top; id >= 0; --id) {
    if (!relevant(id)) continue;
    Node& node = graph.node(id);
    if (node.inputs().empty() || !node.def().grad) continue;
    Graph::DeviceScope scope(graph, node.device());
    std::vector<SymbolicTensor> output_grads(static_cast<std::size_t>(node.num_outputs()));
    bool any = false;
    for (int k = 0; k < node.num_outputs(); ++k) {
      auto it = grads.find({id, k});
      if (it == grads.end()) continue;
      output_grads[static_cast<std::size_t>(k)] = it->second;
      any = true;
    }
    if (!any) continue;
    std::vector<SymbolicTensor> input_grads = node.def().grad(node, output_grads);
    if (input_grads.size() != node.inputs().size())
      raise<Error>("gradient of {} returned {} values for {} inputs", node.describe(), input_grads.size(),
                   node.inputs().size());
    for (std::size_t i = 0; i < input_grads.size(); ++i) {
      const auto& in = node.inputs()[i];
      if (!input_grads[i].defined() || !relevant(in.node()->id()) || !is_floating(in.dtype())) continue;
      if (input_grads[i].shape().rank() != in.shape().rank())
        raise<ShapeError>("gradient of {} for input {} has shape {}, expected {}", node.describe(), i,
                          input_grads[i].shape().to_string(), in.shape().to_string());
      SymbolicTensor& sum = grads[{in.node()->id(), in.index()}];
      if (!sum.defined()) {
        sum = input_grads[i];
      } else {
        Graph::DeviceScope on_producer(graph, in.node()->device());
        sum = ops::add(sum, input_grads[i]);
      }
    }
  }

  std::vector<SymbolicTensor> out;
  for (const auto& x : xs) {
    auto it = grads.find({x.node()->id(), x.index()});
    out.push_back(it == grads.end() ? SymbolicTensor() : it->second);
  }
  return out;
}

}  // namespace tower
