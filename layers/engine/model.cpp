// Model: the functional graph (ordering layer calls as Keras does), calling it, weights, layer lookup.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/model_internal.h"

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


// A tower's update (BatchNormalization's moving statistics, made by one tower's call of the inner
// model): its index in CallContext::updates and the rows of that tower's share of the batch.
struct TowerUpdate {
  std::size_t index;
  SymbolicTensor rows;  // scalar, float
};

// Which of the towers runs on `device` (-1: none, or not a tower wrapper).
int tower_index(const TowerLayout& towers, const std::string& device) {
  if (device.empty() || !towers.ratios) return -1;
  const auto it = std::find(towers.devices.begin(), towers.devices.end(), device);
  return it == towers.devices.end() ? -1 : static_cast<int>(it - towers.devices.begin());
}

// The rows of x (batch, ...) as a float scalar, from the elements it has at run time.
SymbolicTensor rows_of(const SymbolicTensor& x) {
  std::int64_t per_row = 1;
  for (int d = 1; d < x.rank(); ++d) per_row *= x.shape()[d];
  const SymbolicTensor ones = ops::ones_like(is_floating(x.dtype()) ? x : ops::cast(x, DType::float32));
  return ops::scale(ops::reduce_sum(ones), 1.0 / static_cast<double>(std::max<std::int64_t>(per_row, 1)));
}

// Towers call the same layers once each, so a variable that a layer updates (the moving statistics)
// gets one assign per tower (of the variable, or of the tower's mirror of it), and the last would win.
// They become one assign of the towers' new values averaged by their shares' rows, given to every copy
// of the variable: the moving mean then follows the global batch's mean, whatever the ratios, and a
// tower with an empty share (whose statistics are 0 there) counts for nothing.
void merge_tower_updates(CallContext& ctx, const TowerLayout& towers, const std::vector<TowerUpdate>& tower_updates) {
  std::map<const Variable*, std::vector<const TowerUpdate*>> by_variable;  // primary -> its towers' assigns
  std::map<const Variable*, VariablePtr> primary_of;
  for (const auto& u : tower_updates) {
    Node* update = (*ctx.updates)[u.index];
    if (update->op() != "assign") continue;
    const VariablePtr& target = update->inputs()[0].node()->variable();
    if (!target) continue;
    const VariablePtr& primary = target->primary() ? target->primary() : target;
    by_variable[primary.get()].push_back(&u);
    primary_of[primary.get()] = primary;
  }
  std::set<std::size_t> replaced;
  std::vector<Node*> merged;
  for (const auto& [variable, updates] : by_variable) {
    const auto copies = towers.copies_of(primary_of.at(variable));
    if (updates.size() < 2 && copies.size() < 2) continue;
    SymbolicTensor average;
    {
      Graph::DeviceScope on_variable(ctx.graph, variable->device().name());
      SymbolicTensor weighted, rows;
      for (const TowerUpdate* u : updates) {
        const Node* update = (*ctx.updates)[u->index];
        const SymbolicTensor& value = update->inputs()[1];
        const SymbolicTensor share = value.dtype() == u->rows.dtype() ? u->rows : ops::cast(u->rows, value.dtype());
        const SymbolicTensor term = ops::multiply(value, share);
        weighted = weighted.defined() ? ops::add(weighted, term) : term;
        rows = rows.defined() ? ops::add(rows, share) : share;
        replaced.insert(u->index);
      }
      average = ops::divide(weighted, rows);
    }
    for (const auto& copy : copies) {
      Graph::DeviceScope on_copy(ctx.graph, copy->device().name());
      merged.push_back(ops::assign(ctx.graph.variable(copy), average));
    }
  }
  if (replaced.empty()) return;
  std::vector<Node*> kept;
  for (std::size_t k = 0; k < ctx.updates->size(); ++k)
    if (!replaced.count(k)) kept.push_back((*ctx.updates)[k]);
  kept.insert(kept.end(), merged.begin(), merged.end());
  *ctx.updates = std::move(kept);
}
}  // namespace

// ---- construction ------------------------------------------------------------------------------

Model::Model(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs, const std::string& name)
    : Layer(name, "functional"), data_(std::make_shared<Data>()) {
  set_graph(inputs, outputs);
}

Model::Model(const KerasTensor& input, const KerasTensor& output, const std::string& name)
    : Model(std::vector<KerasTensor>{input}, std::vector<KerasTensor>{output}, name) {}

Model::Model(const std::string& name, const std::string& default_base)
    : Layer(name, default_base), data_(std::make_shared<Data>()) {}

Model::~Model() = default;

void Model::set_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs) {
  if (inputs.empty() || outputs.empty())
    raise<ValueError>("Model \"{}\": needs at least one input and one output (got {} and {})", name(), inputs.size(),
                      outputs.size());
  for (const auto& x : inputs)
    if (!x.defined() || !dynamic_cast<const InputLayer*>(&x.layer()))
      raise<ValueError>("Model \"{}\": every input must come from layers::Input(...)", name());
  auto order = order_graph(inputs, outputs, name());
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
  return call_graph(ctx, inputs, nullptr);
}

std::vector<SymbolicTensor> Model::call_graph(CallContext& ctx, const std::vector<SymbolicTensor>& inputs,
                                              std::vector<std::vector<SymbolicTensor>>* tower_outputs) {
  if (!has_graph()) raise<ValueError>("Model \"{}\": called before its input shape is known", name());
  if (inputs.size() != data_->inputs.size())
    raise<ValueError>("Model \"{}\": expects {} inputs, got {}", name(), data_->inputs.size(), inputs.size());
  std::map<std::pair<const KerasNode*, int>, SymbolicTensor> values;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& expected = data_->inputs[i].shape();
    if (!inputs[i].shape().compatible_with(expected))
      raise<ShapeError>("Model \"{}\": input {} (\"{}\") expects shape {}, got {}", name(), i,
                        data_->inputs[i].layer().name(), expected.to_string(), inputs[i].shape().to_string());
    values[{data_->inputs[i].node().get(), data_->inputs[i].index()}] = inputs[i];
  }
  // Each tower's first row in the global batch (Dropout's masks), made where the batch is before any
  // tower's ops: lanes run their steps in graph order, so a tower would otherwise wait for the towers
  // before it to finish their forward pass before learning its offset.
  std::vector<SymbolicTensor> row_offsets;
  if (ctx.training && !inputs.empty() && data_->towers.ratios)
    for (std::size_t t = 0; t < data_->towers.devices.size(); ++t)
      row_offsets.push_back(ops::batch_share_start(inputs[0], *data_->towers.ratios, static_cast<int>(t)));
  std::vector<TowerUpdate> tower_updates;
  for (const auto& node : data_->nodes) {
    std::vector<SymbolicTensor> args;
    for (const auto& x : node->inputs) args.push_back(values.at({x.node().get(), x.index()}));
    const auto* copies_before = ctx.tower_copies;  // a tower reads its device's mirrors
    const SymbolicTensor offset_before = ctx.row_offset;
    if (const int tower = tower_index(data_->towers, node->device); tower >= 0) {
      if (auto it = data_->towers.mirrors.find(node->device); it != data_->towers.mirrors.end())
        ctx.tower_copies = &it->second;
      if (!row_offsets.empty()) ctx.row_offset = row_offsets[static_cast<std::size_t>(tower)];
    }
    std::optional<Graph::DeviceScope> on_device;  // the call's own device (a tower), if any
    if (!node->device.empty()) on_device.emplace(ctx.graph, node->device);
    const std::size_t updates_before = ctx.updates ? ctx.updates->size() : 0;
    auto results = node->layer->call(ctx, args);
    ctx.tower_copies = copies_before;
    ctx.row_offset = offset_before;
    for (int i = 0; i < static_cast<int>(results.size()); ++i) values[{node.get(), i}] = results[static_cast<std::size_t>(i)];
    if (!node->device.empty() && ctx.updates && ctx.updates->size() > updates_before && !args.empty())
      for (std::size_t k = updates_before; k < ctx.updates->size(); ++k) tower_updates.push_back({k, rows_of(args[0])});
  }
  if (!tower_updates.empty()) merge_tower_updates(ctx, data_->towers, tower_updates);
  std::vector<SymbolicTensor> outputs;
  for (const auto& y : data_->outputs) outputs.push_back(values.at({y.node().get(), y.index()}));
  // A tower wrapper's outputs are Concatenates of one output per tower.
  if (tower_outputs && !data_->towers.devices.empty())
    for (const auto& y : data_->outputs) {
      if (y.node()->inputs.size() != data_->towers.devices.size())
        raise<ValueError>("Model \"{}\": output \"{}\" does not join one output per tower", name(), y.layer().name());
      tower_outputs->emplace_back();
      for (const auto& part : y.node()->inputs) tower_outputs->back().push_back(values.at({part.node().get(), part.index()}));
    }
  return outputs;
}

std::shared_ptr<const Model> Model::wrapped_model() const { return data_->wrapped; }

void Model::set_wrapped_model(std::shared_ptr<const Model> inner, TowerLayout towers) {
  if (inner && inner->wrapped_model()) inner = inner->wrapped_model();  // a wrapper of a wrapper unwraps
  data_->wrapped = std::move(inner);
  data_->towers = std::move(towers);
}

namespace {
thread_local std::shared_ptr<const DistributionStrategy> this_thread_strategy;
}  // namespace

const std::shared_ptr<const DistributionStrategy>& current_strategy() { return this_thread_strategy; }

std::shared_ptr<const DistributionStrategy> set_current_strategy(std::shared_ptr<const DistributionStrategy> strategy) {
  return std::exchange(this_thread_strategy, std::move(strategy));
}

std::vector<VariablePtr> TowerLayout::copies_of(const VariablePtr& variable) const {
  const VariablePtr& primary = variable->primary() ? variable->primary() : variable;
  std::vector<VariablePtr> copies{primary};
  for (const auto& device : devices)
    if (auto on = mirrors.find(device); on != mirrors.end())
      if (auto it = on->second.find(primary.get()); it != on->second.end()) copies.push_back(it->second);
  return copies;
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
