// Layer: the base of every Keras layer and model; KerasTensor, the symbolic value layers are called on.
//
// A layer object is a cheap handle: copies share one layer (its name, weights and call history), as a
// Python variable holding a Keras layer does. So `layers::Dense(10)(x)` works on a temporary, and
// calling one Dense object on two inputs shares its weights. Layers build their weights on first call.
//
// Two graphs are involved:
//  - the Keras graph: KerasTensors and the layer calls ("nodes") that made them; Model replays it;
//  - the engine Graph (core/graph.h): call() adds ops to it. A model builds a fresh engine graph for
//    training (training = true) and one for inference, reading the same Variables.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tower/core/graph.h"
#include "tower/core/variable.h"
#include "tower/layers/dtype_policy.h"
#include "tower/layers/initializers.h"
#include "tower/layers/regularizers.h"

namespace tower {

class Layer;
struct KerasNode;
struct ReplicaContext;

// A symbolic value of the Keras graph: the output `index` of one layer call. Shapes keep the batch
// dimension unknown (-1), as Keras's (None, 784).
class KerasTensor {
 public:
  KerasTensor() = default;
  KerasTensor(std::shared_ptr<KerasNode> node, int index) : node_(std::move(node)), index_(index) {}

  bool defined() const { return node_ != nullptr; }
  const TensorSpec& spec() const;
  const Shape& shape() const { return spec().shape; }
  DType dtype() const { return spec().dtype; }
  int rank() const { return shape().rank(); }
  // The call that produced this tensor and which of its outputs it is.
  const std::shared_ptr<KerasNode>& node() const { return node_; }
  int index() const { return index_; }
  // The layer that produced it ("dense_1").
  Layer& layer() const;

  bool operator==(const KerasTensor& o) const { return node_ == o.node_ && index_ == o.index_; }

 private:
  std::shared_ptr<KerasNode> node_;
  int index_ = 0;
};

// One call of a layer on KerasTensors.
struct KerasNode {
  std::shared_ptr<Layer> layer;
  std::vector<KerasTensor> inputs;
  std::vector<TensorSpec> outputs;
  // The device this call's ops run on ("cpu:1", "cuda:0"; empty: where the model runs), as a layer
  // called under `with tf.device(...)` in Keras: parallel::multi_gpu_model places its towers so.
  std::string device;
};

// What a layer's call() sees besides its inputs.
struct CallContext {
  Graph& graph;
  bool training = false;
  // Ops to run with every training step besides the optimizer's (BatchNormalization's moving
  // statistics, only when training) and with every inference step too (a stateful recurrent layer's
  // states).
  std::vector<Node*>* updates = nullptr;
  // Scalar losses added by layers (regularizers), summed into the training loss.
  std::vector<SymbolicTensor>* losses = nullptr;
  // While a model calls the layer: its inputs' Keras masks, one entry per input (undefined: no mask),
  // each (batch, time) of 0 and 1 in float32 (Keras's boolean masks; Masking and Embedding(mask_zero)
  // make them). Null outside a model's call. Layer::input_mask reads it.
  const std::vector<SymbolicTensor>* masks = nullptr;
  // The replica this call is for, when the model runs replicated (layers/engine/replication.h): the
  // copies of the variables it reads, and where its rows sit in the global batch. Null otherwise.
  const ReplicaContext* replica = nullptr;
};

class Layer {
 public:
  virtual ~Layer();

  // ---- calling -------------------------------------------------------------------------------------
  // Builds the layer on first call, records the call in the Keras graph and returns its output(s).
  KerasTensor operator()(const KerasTensor& input) const;
  KerasTensor operator()(const std::vector<KerasTensor>& inputs) const;  // one output (merge layers)
  std::vector<KerasTensor> call_multi(const std::vector<KerasTensor>& inputs) const;

  // Adds this layer's computation to ctx.graph. inputs/outputs are engine tensors with batch first,
  // channels last (see data_format()).
  virtual std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) = 0;
  // call() in the layer's data_format: what models and wrappers run.
  std::vector<SymbolicTensor> apply(CallContext& ctx, const std::vector<SymbolicTensor>& inputs);

  // Keras's data_format argument of the convolution, pooling, padding, cropping, upsampling, spatial
  // dropout and Flatten layers: "channels_last" (the default, tower's layout) or "channels_first".
  // tower computes channels-last inside: apply() moves axis 1 of every input of rank >= 3 to the end
  // before call(), and the last axis of every output of rank >= 3 back to axis 1; build() sees the
  // channels-last shapes. Keras stores the same weights in both formats, so channels_first files load.
  const std::string& data_format() const { return state_->data_format; }

  // Keras's layer dtype policy (the global policy when the layer was made: floatx()'s unless
  // mixed_precision::set_global_policy). dtype() is Keras's layer.dtype, the variables' dtype;
  // compute_dtype() what call() computes in: apply() casts floating inputs to it and read() casts the
  // weights to it (Keras's autocast), so under "mixed_float16" a Dense keeps a float32 kernel and
  // multiplies in float16. Set it before the layer is built.
  DType dtype() const { return state_->policy.variable_dtype(); }
  DType compute_dtype() const { return state_->policy.compute_dtype(); }
  const DTypePolicy& dtype_policy() const { return state_->policy; }
  void set_dtype_policy(const DTypePolicy& policy);
  void set_dtype(DType dtype) { set_dtype_policy(DTypePolicy(dtype)); }

  // A new handle sharing this layer (each subclass: `return std::make_shared<Dense>(*this);`).
  virtual std::shared_ptr<Layer> share() const = 0;

  // Keras's class name ("Dense"), used by summary() and for default names.
  virtual std::string class_name() const = 0;

  // Keras's layer.get_config(): what rebuilds this layer through the registry (layers/registry.h),
  // in tf.keras 2's spelling ({"name": "dense_1", "trainable": true, "dtype": "float32", "units": 10,
  // ...}). The base holds name, trainable and dtype; each layer adds its own arguments.
  virtual nlohmann::json get_config() const;

  // ---- building ------------------------------------------------------------------------------------
  // Creates the weights for inputs of these shapes (batch dimension -1). Called once, on first call.
  virtual void build(const std::vector<Shape>& input_shapes) {}
  bool built() const { return state_->built; }
  // Builds from input shapes without recording a call (used by models and tests).
  void ensure_built(const std::vector<Shape>& input_shapes);

  // ---- identity and weights ----------------------------------------------------------------------
  const std::string& name() const { return state_->name; }
  bool trainable() const { return state_->trainable; }
  virtual void set_trainable(bool trainable) { state_->trainable = trainable; }
  bool same_layer(const Layer& other) const { return state_ == other.state_; }
  // Identifies the layer behind this handle (equal for every handle sharing it).
  const void* id() const { return state_.get(); }

  // Keras order: trainable weights, then non-trainable ones. A frozen layer's weights are all
  // non-trainable. Models override these to collect their layers' weights.
  virtual std::vector<VariablePtr> trainable_weights() const;
  virtual std::vector<VariablePtr> non_trainable_weights() const;
  std::vector<VariablePtr> weights() const;
  std::int64_t count_params() const;
  // Weight values in weights() order; set_weights checks count and shapes and names the layer.
  std::vector<Tensor> get_weights() const;
  void set_weights(const std::vector<Tensor>& values);

  // ---- masks (Keras's mask propagation) -----------------------------------------------------------
  // Keras's compute_mask: the masks of call(inputs)'s outputs, given the inputs' masks (undefined
  // entries: none), one entry per output (missing entries: none). The default passes the first
  // input's mask on when supports_masking(), and drops it otherwise (as Keras 3 does).
  virtual std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                                   const std::vector<SymbolicTensor>& masks) const;
  // Whether the default compute_mask passes the mask on (Dense, Activation, Dropout, ...).
  virtual bool supports_masking() const { return false; }

  // ---- calls in model configs (Keras's inbound nodes) ----------------------------------------------
  // Keras's keyword arguments of this handle's calls besides tensors (MultiHeadAttention's
  // use_causal_mask, ...): a model config writes them into each call's inbound node. Empty for most.
  virtual nlohmann::json call_kwargs() const;
  // The keywords of the inputs after the first, for a layer Keras calls as f(x, value=..., key=...)
  // (MultiHeadAttention: value, key, attention_mask): a config writes such a call as one entry, the
  // first input with the others among its keyword arguments. Empty (most layers): each input is an
  // entry of its own (Keras's call on a list).
  virtual std::vector<std::string> input_keywords() const { return {}; }
  // The call an inbound node of a config describes: its positional input tensors, those it passes by
  // one of input_keywords(), and its other keyword arguments. The default is call_multi(inputs),
  // kwargs unread.
  virtual std::vector<KerasTensor> call_from_config(const std::vector<KerasTensor>& inputs,
                                                    const std::map<std::string, KerasTensor>& keyword_inputs,
                                                    const nlohmann::json& kwargs) const;

  // Keras's reset_states(): a stateful layer (LSTM(stateful=True)) forgets its states; models reset
  // every layer. Nothing for other layers.
  virtual void reset_states() {}

  // Regularization terms of this layer's weights (scalars in ctx.graph); models collect their layers'.
  virtual std::vector<SymbolicTensor> regularization_losses(Graph& graph) const;

  // Keras's activity_regularizer (every layer has one; default none): for each floating output of
  // each call, regularizer(output) / the global batch's rows joins the loss of fit and evaluate, as
  // Keras 3's Layer.__call__ adds it (tf.keras 2 divided by the batch too). Configs read and write it
  // for every layer (ConfigReader::finish, layer_config).
  const Regularizer& activity_regularizer() const { return state_->activity_regularizer; }
  void set_activity_regularizer(const Regularizer& regularizer) { state_->activity_regularizer = regularizer; }
  // Adds the activity penalties of `outputs` (this layer's call's) to ctx.losses, if both exist. Model
  // calls it after each layer's call.
  void add_activity_losses(CallContext& ctx, const std::vector<SymbolicTensor>& outputs) const;

  // Calls recorded on this layer (in order); output_shape() of the first one, as Keras shows it.
  const std::vector<std::weak_ptr<KerasNode>>& inbound_nodes() const { return state_->nodes; }
  std::string output_shape_string() const;

  // Input specs of the first call (what build() saw), e.g. for summary().
  const std::vector<TensorSpec>& build_input_specs() const { return state_->input_specs; }

 protected:
  // name: the user's name, or "" for a unique default from the class name ("dense", "dense_1", ...).
  explicit Layer(const std::string& name, const std::string& default_base);
  // For the layers that take Keras's data_format (from their constructors); refuses other values.
  void set_data_format(const std::string& data_format);

  // Creates a weight named "<layer>/<name>:0", initialised now.
  VariablePtr add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                         const Regularizer& regularizer = {}, bool trainable = true,
                         DType dtype = DType::float32);
  // The weight add_weight(name, ...) made, or null. Every handle of the layer sees it, whereas a member
  // set in build() lives only in the handle that was built: call() should look weights up here.
  VariablePtr weight(const std::string& name) const;
  // Reads a weight in the graph being built (for a replica, the copy that replica reads). With autocast
  // (Keras's default for a weight), a float32 weight read inside a layer of a mixed policy is cast to its
  // compute dtype; BatchNormalization reads its weights as they are (Keras's autocast=False).
  static SymbolicTensor read(CallContext& ctx, const VariablePtr& weight, bool autocast = true);
  // The mask of input i in this call (ctx.masks), or undefined.
  static SymbolicTensor input_mask(const CallContext& ctx, std::size_t i);
  void mark_built() { state_->built = true; }
  // Whether apply() casts floating inputs to the compute dtype (true; a Model passes its inputs on as
  // they are, as Keras's Functional does, and lets each layer cast).
  void set_autocast_inputs(bool autocast) { state_->autocast_inputs = autocast; }

 private:
  struct State {
    std::string name;
    std::string data_format = "channels_last";
    DTypePolicy policy;
    bool autocast_inputs = true;
    bool trainable = true;
    bool built = false;
    std::vector<VariablePtr> weights;                 // creation order
    std::vector<std::string> weight_names;            // add_weight's names ("kernel"), one per weight
    std::vector<Regularizer> regularizers;            // one per weight
    Regularizer activity_regularizer;                 // on the outputs (Keras's activity_regularizer)
    std::vector<std::weak_ptr<KerasNode>> nodes;      // calls, for summary()
    std::vector<TensorSpec> input_specs;              // of the first call
  };
  std::shared_ptr<State> state_;
};

using LayerPtr = std::shared_ptr<Layer>;

// While it lives, the weights layers create on this thread are named "<scope>/<weight>:0" instead of
// "<layer>/<weight>:0": Keras's names for the weights of a layer a wrapper builds (TimeDistributed's
// Dense: "time_distributed/kernel:0").
class WeightNameScope {
 public:
  explicit WeightNameScope(std::string scope);
  ~WeightNameScope();
  WeightNameScope(const WeightNameScope&) = delete;
  WeightNameScope& operator=(const WeightNameScope&) = delete;
  static const std::string& current();

 private:
  std::string previous_;
};

// An entry of a Sequential's layer list: any layer, or an Input (its InputLayer).
class LayerRef {
 public:
  LayerRef(const Layer& layer) : layer_(layer.share()) {}  // NOLINT: implicit by design
  LayerRef(const KerasTensor& input);                      // NOLINT: keras.Input(...) in a list
  LayerRef(LayerPtr layer) : layer_(std::move(layer)) {}   // NOLINT
  const LayerPtr& get() const { return layer_; }
  const KerasTensor& input() const { return input_; }  // set when made from an Input

 private:
  LayerPtr layer_;
  KerasTensor input_;
};

// A unique default layer name per base ("dense", "dense_1", ...), as Keras's backend.get_uid.
std::string unique_layer_name(const std::string& base);
// Restarts the counters (Keras's clear_session()).
void clear_session();

// Keras's floatx (keras.config.set_floatx, keras.backend.set_floatx): the dtype of the layers made
// after it (their weights and what they compute in) and the default of Input. float32 (the default)
// or float64; per thread.
void set_floatx(DType dtype);
DType floatx();
// "BatchNormalization" -> "batch_normalization".
std::string to_snake_case(const std::string& class_name);

}  // namespace tower
