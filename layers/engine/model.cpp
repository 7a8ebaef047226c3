// Model: the functional graph (ordering layer calls as Keras does), calling it, weights, layer lookup.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/model_internal.h"
#include "tower/layers/engine/replication.h"
#include "tower/optimizers/optimizer.h"

namespace tower {

namespace {

// Orders the calls between inputs and outputs as Keras's functional map_graph: nodes and layers by
// decreasing depth (distance from the outputs), ties by first visit in a depth-first walk from the
// outputs. Keras's model.layers, and hence the layer order in weight files, is this order.
struct GraphOrder {
  std::vector<std::shared_ptr<KerasNode>> nodes;  // execution order, input nodes included
  std::vector<LayerPtr> layers;
};

GraphOrder order_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs,
                       const std::string& model_name) {
  std::vector<std::shared_ptr<KerasNode>> finished;  // post-order = decreasing depth order
  std::set<const KerasNode*> done, in_progress;
  std::map<const void*, int> layer_index;  // layer id -> first visit
  std::map<const void*, LayerPtr> layer_of;
  auto is_model_input = [&](const KerasTensor& t) { return std::find(inputs.begin(), inputs.end(), t) != inputs.end(); };

  std::function<void(const KerasTensor&)> visit = [&](const KerasTensor& t) {
    const auto& node = t.node();
    if (done.count(node.get())) return;
    if (in_progress.count(node.get()))
      raise<ValueError>("Model \"{}\": the layer graph has a cycle through \"{}\"", model_name, node->layer->name());
    const void* id = node->layer->id();
    if (!layer_index.count(id)) {
      layer_index[id] = static_cast<int>(layer_index.size());
      layer_of[id] = node->layer;
    }
    in_progress.insert(node.get());
    bool is_input_node = dynamic_cast<const InputLayer*>(node->layer.get()) != nullptr;
    if (is_input_node && !is_model_input(t))
      raise<ValueError>("Model \"{}\": graph disconnected: output needs input \"{}\" {}, which is not among the "
                        "model's inputs; pass it in Model(inputs, outputs)",
                        model_name, node->layer->name(), t.shape().to_string());
    if (!is_input_node && !is_model_input(t))
      for (const auto& x : node->inputs) visit(x);
    in_progress.erase(node.get());
    done.insert(node.get());
    finished.push_back(node);
  };
  for (const auto& y : outputs) {
    if (!y.defined()) raise<ValueError>("Model \"{}\": an output KerasTensor is undefined", model_name);
    visit(y);
  }

  // Depths: outputs 0, a node's producers at least one deeper; a layer takes its deepest node's.
  std::map<const KerasNode*, int> node_depth;
  std::map<const void*, int> layer_depth;
  for (auto it = finished.rbegin(); it != finished.rend(); ++it) {
    const KerasNode* node = it->get();
    int depth = std::max(node_depth[node], layer_depth[node->layer->id()]);
    layer_depth[node->layer->id()] = depth;
    node_depth[node] = depth;
    for (const auto& x : node->inputs) {
      int& d = node_depth[x.node().get()];
      d = std::max(d, depth + 1);
    }
  }
  for (const auto& x : inputs) {  // inputs that no output uses still belong to the model
    const void* id = x.node()->layer->id();
    if (!layer_depth.count(id)) {
      layer_depth[id] = 0;
      layer_index[id] = -1;
      layer_of[id] = x.node()->layer;
      node_depth[x.node().get()] = 0;
    }
  }

  GraphOrder order;
  order.nodes = finished;
  std::stable_sort(order.nodes.begin(), order.nodes.end(),
                   [&](const auto& a, const auto& b) { return node_depth[a.get()] > node_depth[b.get()]; });
  std::vector<const void*> ids;
  for (const auto& [id, depth] : layer_depth) ids.push_back(id);
  std::sort(ids.begin(), ids.end(), [&](const void* a, const void* b) {
    if (layer_depth[a] != layer_depth[b]) return layer_depth[a] > layer_depth[b];
    return layer_index[a] < layer_index[b];
  });
  for (const void* id : ids) order.layers.push_back(layer_of[id]);
  return order;
}


}  // namespace

namespace {

// Where a layer's call runs when nothing else places it: the one device its weights live on; for a
// layer without weights (or a nested model, whose own layers place themselves), its first input's
// device; "" for none. A layer whose weights live on two devices cannot run in one place: ValueError.
// Where a weight is computed with: where it lives, or where its first piece does (a weight split into
// pieces by tower::distribution is kept whole in host memory, and its pieces meet on that device).
const Device& home_of(const VariablePtr& w) {
  const auto pieces = w->pieces();
  return pieces.empty() ? w->device() : pieces.front()->device();
}

std::string placement_of(const Layer& layer, const std::vector<SymbolicTensor>& args) {
  if (dynamic_cast<const Model*>(&layer) == nullptr) {
    const auto weights = layer.weights();
    for (const auto& w : weights)
      if (&home_of(w) != &home_of(weights.front()))
        raise<ValueError>("layer \"{}\": its weights live on two devices (\"{}\" on {}, \"{}\" on {}), so it cannot "
                          "run in one place; create all of a layer's weights under one DefaultDeviceScope",
                          layer.name(), weights.front()->name(), home_of(weights.front()).name(), w->name(),
                          home_of(w).name());
    if (!weights.empty()) return home_of(weights.front()).name();
  }
  return args.empty() || !args.front().defined() ? std::string() : args.front().node()->device();
}

}  // namespace

// ---- construction ------------------------------------------------------------------------------

Model::Model(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs, const std::string& name)
    : Layer(name, "functional"), data_(std::make_shared<Data>()) {
  data_->replication = current_strategy();  // made under a strategy's scope: it runs replicated
  set_autocast_inputs(false);  // as Keras's Functional: each layer casts its own inputs
  set_graph(inputs, outputs);
}

Model::Model(const KerasTensor& input, const KerasTensor& output, const std::string& name)
    : Model(std::vector<KerasTensor>{input}, std::vector<KerasTensor>{output}, name) {}

Model::Model(const std::string& name, const std::string& default_base)
    : Layer(name, default_base), data_(std::make_shared<Data>()) {
  data_->replication = current_strategy();
  set_autocast_inputs(false);
}

Model::~Model() = default;

void Model::set_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs) {
  if (inputs.empty() || outputs.empty())
    raise<ValueError>("Model \"{}\": needs at least one input and one output (got {} and {})", name(), inputs.size(),
                      outputs.size());
  for (const auto& x : inputs)
    if (!x.defined() || !dynamic_cast<const InputLayer*>(&x.layer()))
      raise<ValueError>("Model \"{}\": every input must come from layers::Input(...)", name());
  auto order = order_graph(inputs, outputs, name());
  // Models nested in models: bounded, so that building, copying, saving and describing a model (all
  // recursive) cannot overflow the stack; checked level by level, so no deep recursion happens here.
  int nesting = 1;
  for (const auto& layer : order.layers)
    if (const auto* inner = dynamic_cast<const Model*>(layer.get()))
      nesting = std::max(nesting, inner->data_->nesting + 1);
  if (nesting > kMaxModelNesting)
    raise<ValueError>("Model \"{}\": it would nest models {} deep (a model in a model in ...); tower allows at most {} "
                      "(Keras's own files nest a few levels): flatten the inner models into one",
                      name(), nesting, kMaxModelNesting);
  data_->nesting = nesting;
  data_->inputs = inputs;
  data_->outputs = outputs;
  data_->nodes.clear();
  for (auto& node : order.nodes)
    if (!dynamic_cast<const InputLayer*>(node->layer.get())) data_->nodes.push_back(node);
  data_->layers = std::move(order.layers);
  mark_built();
  reset_functions();
}

bool Model::has_graph() const { return !data_->outputs.empty(); }

void Model::build_from_data(const std::vector<Tensor>&) {}

void Model::reset_functions() {
  data_->train_fn.reset();
  data_->test_fn.reset();
  data_->predict_fn.reset();
}

// ---- structure ---------------------------------------------------------------------------------

std::vector<LayerPtr> Model::layers() const {
  if (!data_->sequential) return data_->layers;
  std::vector<LayerPtr> out;
  for (const auto& layer : data_->layers)
    if (!dynamic_cast<const InputLayer*>(layer.get())) out.push_back(layer);
  return out;
}

void Model::reset_states() {
  for (const auto& layer : layers()) layer->reset_states();
}

std::string Model::class_name() const { return data_->sequential ? "Sequential" : "Functional"; }

void Model::mark_sequential() { data_->sequential = true; }

LayerPtr Model::get_layer(const std::string& layer_name) const {
  std::string names;
  for (const auto& layer : layers()) {
    if (layer->name() == layer_name) return layer;
    names += (names.empty() ? "" : ", ") + layer->name();
  }
  raise<NotFoundError>("Model \"{}\": no layer named \"{}\"; its layers are: {}", name(), layer_name, names);
}

const std::vector<KerasTensor>& Model::inputs() const { return data_->inputs; }
const std::vector<KerasTensor>& Model::outputs() const { return data_->outputs; }

std::vector<std::string> Model::output_names() const {
  std::vector<std::string> names;
  for (const auto& y : data_->outputs) names.push_back(y.layer().name());
  return names;
}

// ---- Layer -------------------------------------------------------------------------------------

std::vector<SymbolicTensor> Model::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  if (!has_graph()) raise<ValueError>("Model \"{}\": called before its input shape is known", name());
  if (inputs.size() != data_->inputs.size())
    raise<ValueError>("Model \"{}\": expects {} inputs, got {}", name(), data_->inputs.size(), inputs.size());
  // Every tensor's value and Keras mask, by (call, output index).
  std::map<std::pair<const KerasNode*, int>, SymbolicTensor> values, masks;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& expected = data_->inputs[i].shape();
    if (!inputs[i].shape().compatible_with(expected))
      raise<ShapeError>("Model \"{}\": input {} (\"{}\") expects shape {}, got {}", name(), i,
                        data_->inputs[i].layer().name(), expected.to_string(), inputs[i].shape().to_string());
    values[{data_->inputs[i].node().get(), data_->inputs[i].index()}] = inputs[i];
    if (SymbolicTensor mask = input_mask(ctx, i); mask.defined())
      masks[{data_->inputs[i].node().get(), data_->inputs[i].index()}] = mask;
  }
  // A layer's call sees its own inputs' masks; the caller's come back after it.
  struct MasksScope {
    CallContext& ctx;
    const std::vector<SymbolicTensor>* outer;
    MasksScope(CallContext& c, const std::vector<SymbolicTensor>* masks) : ctx(c), outer(c.masks) { c.masks = masks; }
    ~MasksScope() { ctx.masks = outer; }
  };
  for (const auto& node : data_->nodes) {
    std::vector<SymbolicTensor> args, arg_masks;
    for (const auto& x : node->inputs) {
      args.push_back(values.at({x.node().get(), x.index()}));
      auto mask = masks.find({x.node().get(), x.index()});
      arg_masks.push_back(mask == masks.end() ? SymbolicTensor() : mask->second);
    }
    // The call's own device (a tower), if any; else, outside any device scope (a tower's, a strategy's),
    // where the layer's weights live (placement by DefaultDeviceScope, docs/parallel.md), or, for a
    // layer without weights, where its first input was computed.
    std::optional<Graph::DeviceScope> on_device;
    if (!node->device.empty()) {
      on_device.emplace(ctx.graph, node->device);
    } else if (ctx.graph.current_device().empty()) {
      if (std::string home = placement_of(*node->layer, args); !home.empty()) on_device.emplace(ctx.graph, home);
    }
    std::vector<SymbolicTensor> results;
    {
      MasksScope scope(ctx, &arg_masks);
      results = node->layer->apply(ctx, args);
    }
    node->layer->add_activity_losses(ctx, results);
    const auto result_masks = node->layer->compute_mask(args, arg_masks);
    for (std::size_t i = 0; i < results.size(); ++i) {
      values[{node.get(), static_cast<int>(i)}] = results[i];
      if (i < result_masks.size() && result_masks[i].defined()) masks[{node.get(), static_cast<int>(i)}] = result_masks[i];
    }
  }
  std::vector<SymbolicTensor> outputs;
  data_->output_masks.clear();
  for (const auto& y : data_->outputs) {
    outputs.push_back(values.at({y.node().get(), y.index()}));
    auto mask = masks.find({y.node().get(), y.index()});
    data_->output_masks.push_back(mask == masks.end() ? SymbolicTensor() : mask->second);
    if (mask != masks.end()) data_->masks_of_outputs[{outputs.back().node(), outputs.back().index()}] = mask->second;
  }
  return outputs;
}

std::vector<SymbolicTensor> Model::compute_mask(const std::vector<SymbolicTensor>&,
                                                const std::vector<SymbolicTensor>&) const {
  return data_->output_masks;
}

void Model::move_weights(const Layer& layer, const std::string& device_name) {
  Device& to = device(device_name);  // unknown names: NotFoundError listing the visible devices
  const auto& optimizer = data_->compile_args.optimizer;
  for (const auto& w : layer.weights()) {
    if (optimizer)
      for (const auto& slot : optimizer->slots_of(*w)) slot->relocate(to);
    w->relocate(to);
  }
  reset_functions();  // their plans read the old storage
}

std::shared_ptr<const Model> Model::wrapped_model() const { return data_->wrapped; }

void Model::set_wrapped_model(std::shared_ptr<const Model> inner) {
  if (inner && inner->wrapped_model()) inner = inner->wrapped_model();  // a wrapper of a wrapper unwraps
  data_->wrapped = std::move(inner);
}

const std::shared_ptr<const Replication>& Model::replication() const { return data_->replication; }

void Model::set_replication(std::shared_ptr<const Replication> replication) {
  reset_functions();  // first: the engine graphs' replicated calls refer to the replication they were built by
  data_->replication = std::move(replication);
}

const Model::CompileArgs& Model::compile_args() const { return data_->compile_args; }

const Plan* Model::last_plan(Mode mode) const {
  const auto& f = data_->slot(mode);
  return f && f->executor ? f->executor->last_plan() : nullptr;
}

std::int64_t Model::last_batch_size(Mode mode) const {
  const auto& f = data_->slot(mode);
  return f ? f->last_batch_size : 0;
}

std::vector<VariablePtr> Model::trainable_weights() const {
  std::vector<VariablePtr> out;
  if (!trainable()) return out;
  for (const auto& layer : layers())
    for (auto& w : layer->trainable_weights()) out.push_back(std::move(w));
  return out;
}

std::vector<VariablePtr> Model::non_trainable_weights() const {
  std::vector<VariablePtr> out;
  for (const auto& layer : layers()) {
    auto ws = trainable() ? layer->non_trainable_weights() : layer->weights();
    for (auto& w : ws) out.push_back(std::move(w));
  }
  return out;
}

std::vector<SymbolicTensor> Model::regularization_losses(Graph& graph) const {
  std::vector<SymbolicTensor> out;
  for (const auto& layer : layers())
    for (auto& loss : layer->regularization_losses(graph)) out.push_back(std::move(loss));
  return out;
}

void Model::set_trainable(bool trainable) {
  Layer::set_trainable(trainable);
  for (const auto& layer : layers()) layer->set_trainable(trainable);
  reset_functions();
}

bool Model::stop_training() const { return data_->stop_training; }
void Model::set_stop_training(bool stop) { data_->stop_training = stop; }

}  // namespace tower
