// Plan phase 1, placement: the nodes the fetches need, their devices and concrete shapes, one step
// per node, and a copy step wherever a consumer sits on another device than its input.
#include <algorithm>
#include <climits>
#include <map>
#include <queue>
#include <utility>

#include "tower/core/plan_internal.h"

namespace tower {

namespace {

Device& resolve_device(const std::string& name, Device& fallback) { return name.empty() ? fallback : device(name); }

// The needed nodes in the order they become steps: id (= topological) order, except that `early` ops
// (OpDef::early) come as soon as they can. A node's key is the first early op (in id order) that needs
// it; among the nodes whose inputs are done, the smallest (key, id) goes next. So the nodes the first
// early op needs run first, then that op, then what the second one needs, and so on; the nodes no early
// op needs keep their id order after them. Without early ops this is id order.
std::vector<int> node_order(const Graph& graph, const std::vector<char>& needed) {
  const int n = graph.num_nodes();
  const auto at = [](int id) { return static_cast<std::size_t>(id); };
  std::vector<int> key(at(n), INT_MAX);
  int early = 0;
  for (int id = 0; id < n; ++id)
    if (needed[at(id)] && graph.node(id).def().early) key[at(id)] = early++;
  std::vector<int> order;
  if (early == 0) {
    for (int id = 0; id < n; ++id)
      if (needed[at(id)]) order.push_back(id);
    return order;
  }
  for (int id = n - 1; id >= 0; --id)  // inputs have smaller ids: every consumer's key is final here
    if (needed[at(id)] && key[at(id)] != INT_MAX)
      for (const auto& in : graph.node(id).inputs()) key[at(in.node()->id())] = std::min(key[at(in.node()->id())], key[at(id)]);
  std::vector<int> waiting(at(n), 0);  // inputs not yet in the order
  std::vector<std::vector<int>> consumers(at(n));
  using Entry = std::pair<int, int>;  // (key, id)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (int id = 0; id < n; ++id) {
    if (!needed[at(id)]) continue;
    for (const auto& in : graph.node(id).inputs()) {
      ++waiting[at(id)];
      consumers[at(in.node()->id())].push_back(id);
    }
    if (waiting[at(id)] == 0) ready.push({key[at(id)], id});
  }
  while (!ready.empty()) {
    const int id = ready.top().second;
    ready.pop();
    order.push_back(id);
    for (int c : consumers[at(id)])
      if (--waiting[at(c)] == 0) ready.push({key[at(c)], c});
  }
  return order;
}

}  // namespace

void Plan::place(const std::vector<SymbolicTensor>& fetches, const std::vector<Node*>& targets, const FeedMap& feeds,
                 Device& default_device) {
  if (fetches.empty() && targets.empty()) raise<ValueError>("a plan needs at least one fetch or target");
  Graph& graph = fetches.empty() ? targets[0]->graph() : fetches[0].graph();

  // 1. The nodes the fetches and targets need, in id (= topological) order.
  std::vector<char> needed(static_cast<std::size_t>(graph.num_nodes()), 0);
  std::vector<int> stack;
  for (const auto& f : fetches) stack.push_back(f.node()->id());
  for (Node* t : targets) stack.push_back(t->id());
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (needed[static_cast<std::size_t>(id)]) continue;
    needed[static_cast<std::size_t>(id)] = 1;
    for (const auto& in : graph.node(id).inputs()) stack.push_back(in.node()->id());
  }
  std::map<int, const Tensor*> fed;
  for (const auto& [sym, tensor] : feeds) {
    if (sym.node()->def().source != OpSource::placeholder)
      raise<ValueError>("only placeholders can be fed; {} is a {} node", sym.name(), sym.node()->op());
    fed[sym.node()->id()] = &tensor;
  }

  // 2. Values and steps, node by node (node_order), with copies where a consumer sits on another device.
  std::map<std::pair<int, int>, Value*> value_of;  // (node id, output) -> value
  std::map<std::pair<Value*, Device*>, Value*> copies;
  auto new_value = [&](TensorSpec spec, Device* dev, Value::Kind kind, std::string name) {
    auto v = std::make_unique<Value>();
    v->spec = std::move(spec);
    v->device = dev;
    v->kind = kind;
    v->name = std::move(name);
    values_.push_back(std::move(v));
    return values_.back().get();
  };
  std::vector<Step> mutating;  // variable updates run after every other step (they read old values)
  for (const int id : node_order(graph, needed)) {
    const Node& node = graph.node(id);
    const OpSource source = node.def().source;
    Device* dev = &resolve_device(node.device(), default_device);
    if (source == OpSource::placeholder) {
      auto it = fed.find(id);
      if (it == fed.end())
        raise<ValueError>("placeholder \"{}\" {} must be fed: pass it in the feeds", node.name(),
                          node.outputs()[0].to_string());
      const Tensor& t = *it->second;
      if (t.dtype() != node.outputs()[0].dtype || !t.shape().compatible_with(node.outputs()[0].shape))
        raise<ShapeError>("placeholder \"{}\" expects {}, was fed {} {}", node.name(), node.outputs()[0].to_string(),
                          t.shape().to_string(), dtype_name(t.dtype()));
      Value* v = new_value({t.shape(), t.dtype()}, dev, Value::Kind::feed, node.name());
      value_of[{id, 0}] = v;
      feed_values_[id] = v;
      continue;
    }
    if (source != OpSource::none) {  // a constant or a variable
      const Tensor& t = source == OpSource::constant ? node.constant_value() : node.variable()->value();
      Value* v = new_value({t.shape(), t.dtype()}, &t.device(), Value::Kind::persistent, node.name());
      v->tensor = t;
      value_of[{id, 0}] = v;
      continue;
    }
    Step step;
    step.node = &node;
    step.device = dev;
    std::vector<TensorSpec> specs;
    for (std::size_t i = 0; i < node.inputs().size(); ++i) {
      const auto& in = node.inputs()[i];
      Value* v = value_of.at({in.node()->id(), in.index()});
      if (v->device != dev) {
        auto key = std::make_pair(v, dev);
        if (!copies.count(key) && in.node()->def().source == OpSource::constant) {
          // A constant (a loss's epsilon, made on the host) never changes: it crosses to `dev` once, now,
          // not in every step (and a recorded step, plan_graphs.cpp, then copies nothing from the host).
          Value* c = new_value(v->spec, dev, Value::Kind::persistent, v->name + "/on_" + dev->name());
          c->tensor = v->tensor.to(*dev);
          copies[key] = c;
        }
        if (!copies.count(key)) {
          Value* c = new_value(v->spec, dev, Value::Kind::arena, v->name + "/copy_to_" + dev->name());
          Step copy;
          copy.device = dev;
          copy.inputs = {v};
          copy.outputs = {c};
          steps_.push_back(std::move(copy));
          copies[key] = c;
          ++num_copies_;
        }
        v = copies[key];
      }
      step.inputs.push_back(v);
      specs.push_back(v->spec);
    }
    std::vector<TensorSpec> out_specs;
    try {
      out_specs = node.def().shape(specs, node.attrs());
    } catch (const Error& e) {
      detail::rethrow_with_node(e, node);
    }
    for (int m : node.def().mutated_inputs) {
      if (m >= static_cast<int>(step.inputs.size())) continue;
      if (step.inputs[static_cast<std::size_t>(m)]->kind != Value::Kind::persistent)
        raise<ValueError>("{}: input {} is written in place but is not a variable on {}", node.describe(), m,
                          dev->name());
      step.mutates = true;
      if (const auto& written = node.inputs()[static_cast<std::size_t>(m)].node()->variable()) written_.push_back(written);
    }
    const int alias_input = node.def().alias_input >= 0 ? node.def().alias_input
                            : node.def().alias_when_unchanged && out_specs.at(0).shape == specs.at(0).shape ? 0
                                                                                                : -1;
    step.alias = alias_input >= 0;
    for (std::size_t k = 0; k < out_specs.size(); ++k) {
      bool alias = k == 0 && step.alias;
      Value* v = new_value(out_specs[k], dev, alias ? Value::Kind::alias : Value::Kind::arena,
                           fmt::format("{}:{}", node.name(), k));
      if (alias) {
        Value* src = step.inputs.at(static_cast<std::size_t>(alias_input));
        v->alias_of = src->alias_of ? src->alias_of : src;
      }
      step.outputs.push_back(v);
      value_of[{id, static_cast<int>(k)}] = v;
    }
    if (!step.alias || node.def().alias_runs_kernel) step.kernel = find_kernel(node.op(), dev->kind());
    // A view's output shares its input's bytes, which a widened copy would break: views of half
    // tensors run no kernel, and the in-place cross-worker sums refuse them.
    const auto is_half_value = [](const Value* v) { return is_half(v->spec.dtype); };
    if (step.kernel && !step.alias &&
        (std::any_of(step.inputs.begin(), step.inputs.end(), is_half_value) ||
         std::any_of(step.outputs.begin(), step.outputs.end(), is_half_value)))
      step.half_adapter = find_half_kernel_adapter(dev->kind());
    (step.mutates ? mutating : steps_).push_back(std::move(step));
  }
  for (auto& s : mutating) steps_.push_back(std::move(s));
  for (const auto& f : fetches) fetch_values_.push_back(value_of.at({f.node()->id(), f.index()}));
}

}  // namespace tower
