// Graph construction: placeholders, constants, variable reads and op nodes checked against their contract.
#include "tower/core/graph.h"

#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"

namespace tower {

std::string TensorSpec::to_string() const { return shape.to_string() + " " + std::string(dtype_name(dtype)); }

Graph& SymbolicTensor::graph() const { return node_->graph(); }

const TensorSpec& SymbolicTensor::spec() const {
  if (!node_) raise<ValueError>("use of an undefined SymbolicTensor");
  return node_->outputs().at(static_cast<std::size_t>(index_));
}

std::string SymbolicTensor::name() const { return fmt::format("{}:{}", node_->name(), index_); }

const std::string& Node::op() const { return def_->name; }

std::string Node::describe() const {
  std::string s = fmt::format("{} \"{}\"", op(), name_);
  if (!inputs_.empty()) {
    s += " (inputs ";
    for (std::size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", " : "") + inputs_[i].spec().to_string();
    s += ")";
  }
  return s;
}

std::string Graph::unique_name(const std::string& base) {
  int n = name_counts_[base]++;
  return n == 0 ? base : fmt::format("{}_{}", base, n);
}

Node& Graph::new_node(const OpDef& def, std::vector<SymbolicTensor> inputs, Attrs attrs, const std::string& name) {
  auto node = std::unique_ptr<Node>(new Node());
  node->graph_ = this;
  node->id_ = num_nodes();
  node->def_ = &def;
  node->name_ = unique_name(name.empty() ? def.name : name);
  node->attrs_ = std::move(attrs);
  node->inputs_ = std::move(inputs);
  node->device_ = current_device_;
  nodes_.push_back(std::move(node));
  return *nodes_.back();
}

void Graph::set_random_counters(std::uint64_t value) const {
  for (const auto& node : nodes_) node->set_random_counter(value);
}

SymbolicTensor Graph::placeholder(Shape shape, DType dtype, const std::string& name) {
  Node& n = new_node(op_def(op_names::placeholder), {}, {}, name.empty() ? "input" : name);
  n.outputs_ = {TensorSpec{std::move(shape), dtype}};
  return n.output(0);
}

SymbolicTensor Graph::constant(Tensor value, const std::string& name) {
  Node& n = new_node(op_def(op_names::constant), {}, {}, name.empty() ? "constant" : name);
  n.outputs_ = {TensorSpec{value.shape(), value.dtype()}};
  n.device_ = value.device().name();
  n.constant_ = std::move(value);
  return n.output(0);
}

SymbolicTensor Graph::variable(const VariablePtr& variable) {
  if (auto it = variable_nodes_.find(variable.get()); it != variable_nodes_.end()) return node(it->second).output(0);
  Node& n = new_node(op_def(op_names::variable), {}, {}, variable->name());
  n.outputs_ = {TensorSpec{variable->shape(), variable->dtype()}};
  n.device_ = variable->device().name();
  n.variable_ = variable;
  variable_nodes_[variable.get()] = n.id();
  return n.output(0);
}

std::vector<SymbolicTensor> Graph::add(const std::string& op, const std::vector<SymbolicTensor>& inputs, Attrs attrs,
                                       const std::string& name) {
  Node& n = add_node(op, inputs, std::move(attrs), name);
  std::vector<SymbolicTensor> out;
  for (int i = 0; i < n.num_outputs(); ++i) out.push_back(n.output(i));
  return out;
}

Node& Graph::add_node(const std::string& op, const std::vector<SymbolicTensor>& inputs, Attrs attrs,
                      const std::string& name) {
  const OpDef& def = op_def(op);
  std::vector<TensorSpec> specs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) raise<ValueError>("{}: input {} is undefined", op, i);
    if (&inputs[i].graph() != this)
      raise<ValueError>("{}: input {} ({}) belongs to another graph", op, i, inputs[i].name());
    specs.push_back(inputs[i].spec());
  }
  std::vector<TensorSpec> outputs;
  try {
    outputs = def.shape(specs, attrs);
  } catch (const Error& e) {
    std::string shapes;
    for (std::size_t i = 0; i < specs.size(); ++i) shapes += (i ? ", " : "") + specs[i].to_string();
    std::string who = fmt::format("{} \"{}\"", op, name.empty() ? op : name);
    std::string msg = fmt::format("{}: {} (inputs {}; attrs {})", who, e.what(), shapes, attrs.to_string());
    if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(msg);
    if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(msg);
    if (dynamic_cast<const ValueError*>(&e)) throw ValueError(msg);
    throw Error(msg);
  }
  for (int index : def.mutated_inputs) {
    if (index >= static_cast<int>(inputs.size())) continue;
    if (inputs[static_cast<std::size_t>(index)].node()->def().source != OpSource::variable)
      raise<ValueError>("{}: input {} ({}) is written in place and must be a variable", op, index,
                        inputs[static_cast<std::size_t>(index)].name());
  }
  Node& n = new_node(def, inputs, std::move(attrs), name);
  // Nodes that write a variable run where the variable lives.
  if (!def.mutated_inputs.empty()) n.device_ = inputs[static_cast<std::size_t>(def.mutated_inputs[0])].node()->device();
  n.outputs_ = std::move(outputs);
  return n;
}

SymbolicTensor Graph::add1(const std::string& op, const std::vector<SymbolicTensor>& inputs, Attrs attrs,
                           const std::string& name) {
  auto out = add(op, inputs, std::move(attrs), name);
  if (out.empty()) raise<ValueError>("{} has no outputs", op);
  return out[0];
}

Graph::DeviceScope::DeviceScope(Graph& graph, std::string device) : graph_(graph), previous_(graph.current_device_) {
  graph_.current_device_ = std::move(device);
}

Graph::DeviceScope::~DeviceScope() { graph_.current_device_ = previous_; }

}  // namespace tower
