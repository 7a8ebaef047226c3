// The symbolic Graph: nodes {op, attrs, inputs, device} and SymbolicTensor, a reference to one
// node output with a static shape whose batch dimension may be unknown (-1).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tower/core/attrs.h"
#include "tower/core/shape.h"
#include "tower/core/tensor.h"
#include "tower/core/variable.h"

namespace tower {

class Graph;
class Node;
struct OpDef;

struct TensorSpec {
  Shape shape;
  DType dtype = DType::float32;
  std::string to_string() const;  // "(None, 784) float32"
};

class SymbolicTensor {
 public:
  SymbolicTensor() = default;
  SymbolicTensor(Node* node, int index) : node_(node), index_(index) {}

  bool defined() const { return node_ != nullptr; }
  Node* node() const { return node_; }
  int index() const { return index_; }
  Graph& graph() const;
  const TensorSpec& spec() const;
  const Shape& shape() const { return spec().shape; }
  DType dtype() const { return spec().dtype; }
  int rank() const { return shape().rank(); }
  std::string name() const;  // "matmul_3:0"

  bool operator==(const SymbolicTensor& o) const { return node_ == o.node_ && index_ == o.index_; }

 private:
  Node* node_ = nullptr;
  int index_ = 0;
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& op() const;
  const OpDef& def() const { return *def_; }
  const std::string& name() const { return name_; }
  const Attrs& attrs() const { return attrs_; }
  const std::vector<SymbolicTensor>& inputs() const { return inputs_; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  SymbolicTensor output(int i = 0) { return SymbolicTensor(this, i); }
  // The device this node was built for ("" = the plan's default device).
  const std::string& device() const { return device_; }
  Graph& graph() const { return *graph_; }

  // For op "variable": the variable read. For op "constant": its value.
  const VariablePtr& variable() const { return variable_; }
  const Tensor& constant_value() const { return constant_; }

  // Random ops draw from a counter-based generator keyed by (seed, this count): each run gets
  // fresh numbers, and a run of the same program with the same seed gets the same ones.
  std::uint64_t next_random_counter() const { return random_counter_.fetch_add(1); }
  // Where the count continues: the trainer sets it to the optimizer's step count before each step,
  // so step k draws the same numbers in a run resumed from a checkpoint as in an uninterrupted one.
  void set_random_counter(std::uint64_t value) const { random_counter_.store(value); }

  // "conv2d "conv2d_1" (inputs (None, 28, 28, 1) float32, (3, 3, 1, 32) float32)"
  std::string describe() const;

 private:
  friend class Graph;
  Node() = default;

  Graph* graph_ = nullptr;
  int id_ = 0;
  const OpDef* def_ = nullptr;
  std::string name_;
  Attrs attrs_;
  std::vector<SymbolicTensor> inputs_;
  std::vector<TensorSpec> outputs_;
  std::string device_;
  VariablePtr variable_;
  Tensor constant_;
  mutable std::atomic<std::uint64_t> random_counter_{0};
};

// A Graph only grows: a node's inputs always have smaller ids, so id order is topological.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // A value fed at run time. Dimensions may be unknown (-1), typically the batch.
  SymbolicTensor placeholder(Shape shape, DType dtype = DType::float32, const std::string& name = "");
  SymbolicTensor constant(Tensor value, const std::string& name = "");
  // A read of `variable`; repeated reads of the same variable share one node.
  SymbolicTensor variable(const VariablePtr& variable);

  // Adds a node running `op` (which must be registered) and returns its outputs. Checks the
  // inputs against the op's contract; on a mismatch throws the op's ShapeError or DTypeError
  // prefixed by the op, the node name and the input shapes.
  std::vector<SymbolicTensor> add(const std::string& op, const std::vector<SymbolicTensor>& inputs,
                                  Attrs attrs = {}, const std::string& name = "");
  // add() returning the node itself (for ops without outputs, such as variable updates).
  Node& add_node(const std::string& op, const std::vector<SymbolicTensor>& inputs, Attrs attrs = {},
                 const std::string& name = "");
  // add() for single-output ops.
  SymbolicTensor add1(const std::string& op, const std::vector<SymbolicTensor>& inputs, Attrs attrs = {},
                      const std::string& name = "");

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  Node& node(int id) const { return *nodes_.at(static_cast<std::size_t>(id)); }
  // Node::set_random_counter(value) on every node.
  void set_random_counters(std::uint64_t value) const;

  // Nodes added while a DeviceScope lives are placed on its device (like `with tf.device(...)`).
  class DeviceScope {
   public:
    DeviceScope(Graph& graph, std::string device);
    ~DeviceScope();
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

   private:
    Graph& graph_;
    std::string previous_;
  };
  const std::string& current_device() const { return current_device_; }

 private:
  Node& new_node(const OpDef& def, std::vector<SymbolicTensor> inputs, Attrs attrs, const std::string& name);
  std::string unique_name(const std::string& base);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, int> name_counts_;
  std::map<const Variable*, int> variable_nodes_;
  std::string current_device_;
};

}  // namespace tower
