// Layer base: calling on KerasTensors, weights, naming.
#include "tower/layers/layer.h"

#include <cctype>
#include <map>
#include <mutex>
#include <new>
#include <regex>

#include <nlohmann/json.hpp>

#include "tower/core/checked.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/replication.h"

namespace tower {

namespace {
std::mutex uid_mutex;
std::map<std::string, int>& uid_counts() {
  static std::map<std::string, int> counts;
  return counts;
}
}  // namespace

std::string unique_layer_name(const std::string& base) {
  std::lock_guard lock(uid_mutex);
  int n = uid_counts()[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

void clear_session() {
  std::lock_guard lock(uid_mutex);
  uid_counts().clear();
}

namespace {
thread_local DType t_floatx = DType::float32;
void check_float_dtype(DType dtype, const std::string& what) {
  if (dtype != DType::float32 && dtype != DType::float64)
    raise<ValueError>("{}: must be float32 or float64, got {}", what, dtype_name(dtype));
}
}  // namespace

void set_floatx(DType dtype) {
  check_float_dtype(dtype, "set_floatx");
  t_floatx = dtype;
}

DType floatx() { return t_floatx; }

std::string to_snake_case(const std::string& class_name) {
  // Keras's three substitutions, verbatim: drop non-word characters, split before a capitalized word,
  // split a lowercase letter from a capital ("MaxPooling2D" -> "max_pooling2d", "ReLU" -> "re_lu").
  static const std::regex non_word(R"(\W+)"), word("(.)([A-Z][a-z]+)"), lower_upper("([a-z])([A-Z])");
  std::string s = std::regex_replace(class_name, non_word, "");
  s = std::regex_replace(s, word, "$1_$2");
  s = std::regex_replace(s, lower_upper, "$1_$2");
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ---- KerasTensor -----------------------------------------------------------------------------------

const TensorSpec& KerasTensor::spec() const {
  if (!node_) raise<ValueError>("KerasTensor: used before being defined (an empty KerasTensor)");
  return node_->outputs.at(static_cast<std::size_t>(index_));
}

Layer& KerasTensor::layer() const {
  if (!node_) raise<ValueError>("KerasTensor: used before being defined (an empty KerasTensor)");
  return *node_->layer;
}

LayerRef::LayerRef(const KerasTensor& input) : layer_(input.node()->layer), input_(input) {
  if (!dynamic_cast<InputLayer*>(layer_.get()))
    raise<ValueError>("Sequential: a KerasTensor in the layer list must come from layers::Input(...), got the output "
                      "of \"{}\"",
                      layer_->name());
}

// ---- Layer -----------------------------------------------------------------------------------------

Layer::Layer(const std::string& name, const std::string& default_base) : state_(std::make_shared<State>()) {
  state_->name = name.empty() ? unique_layer_name(default_base) : name;
  state_->policy = mixed_precision::global_policy();
}

Layer::~Layer() = default;

namespace {
// A channels_first layer moves the channels of its tensors of rank >= 3 (not of (batch, features)).
bool moves_channels(const Layer& layer, std::int64_t rank) { return layer.data_format() == "channels_first" && rank >= 3; }

// (batch, channels, d1, ..., dn) <-> (batch, d1, ..., dn, channels): the axis permutations.
std::vector<std::int64_t> channels_to_last(std::int64_t rank) {
  std::vector<std::int64_t> perm{0};
  for (std::int64_t a = 2; a < rank; ++a) perm.push_back(a);
  perm.push_back(1);
  return perm;
}
std::vector<std::int64_t> channels_to_first(std::int64_t rank) {
  std::vector<std::int64_t> perm{0, rank - 1};
  for (std::int64_t a = 1; a < rank - 1; ++a) perm.push_back(a);
  return perm;
}
}  // namespace

void Layer::set_dtype_policy(const DTypePolicy& policy) {
  if (state_->built && !(policy == state_->policy))
    raise<ValueError>("{} \"{}\": its dtype policy cannot change after it was built (it is \"{}\", got \"{}\"); "
                      "set it when making the layer", class_name(), name(), state_->policy.name(), policy.name());
  state_->policy = policy;
}

namespace {
// Keras's AutocastScope: the compute dtype of the layer whose call() is running on this thread, to
// which read() casts float32 weights (float32 itself: nothing to cast).
thread_local DType t_autocast = DType::float32;

class AutocastScope {
 public:
  explicit AutocastScope(DType dtype) : previous_(t_autocast) { t_autocast = dtype; }
  ~AutocastScope() { t_autocast = previous_; }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  DType previous_;
};
}  // namespace

void Layer::set_data_format(const std::string& data_format) {
  if (data_format != "channels_last" && data_format != "channels_first")
    raise<ValueError>("{} \"{}\": data_format must be \"channels_last\" or \"channels_first\", got \"{}\"",
                      class_name(), name(), data_format);
  state_->data_format = data_format;
}

void Layer::ensure_built(const std::vector<Shape>& input_shapes) {
  if (state_->built) return;
  std::vector<Shape> shapes = input_shapes;
  for (Shape& shape : shapes)
    if (moves_channels(*this, shape.rank())) {
      std::vector<std::int64_t> dims;
      for (std::int64_t a : channels_to_last(shape.rank())) dims.push_back(shape.dim(a));
      shape = Shape(dims);
    }
  build(shapes);
  state_->built = true;
}

std::vector<SymbolicTensor> Layer::apply(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  std::vector<SymbolicTensor> moved;
  for (SymbolicTensor x : inputs) {
    // Keras's autocast: a floating input of another float dtype is cast to the compute dtype.
    if (state_->autocast_inputs && x.defined() && is_floating(x.dtype()) && x.dtype() != compute_dtype())
      x = ops::cast(x, compute_dtype());
    if (x.defined() && moves_channels(*this, x.rank())) x = ops::transpose(x, channels_to_last(x.rank()));
    moved.push_back(x);
  }
  std::vector<SymbolicTensor> outputs;
  {
    AutocastScope autocast(compute_dtype());
    outputs = call(ctx, moved);
  }
  for (SymbolicTensor& y : outputs)
    if (y.defined() && moves_channels(*this, y.rank())) y = ops::transpose(y, channels_to_first(y.rank()));
  return outputs;
}

KerasTensor Layer::operator()(const KerasTensor& input) const {
  auto outputs = call_multi({input});
  if (outputs.size() != 1)
    raise<ValueError>("{} \"{}\": returns {} outputs; use call_multi() to get them all", class_name(), name(),
                      outputs.size());
  return outputs[0];
}

KerasTensor Layer::operator()(const std::vector<KerasTensor>& inputs) const {
  auto outputs = call_multi(inputs);
  if (outputs.size() != 1)
    raise<ValueError>("{} \"{}\": returns {} outputs; use call_multi() to get them all", class_name(), name(),
                      outputs.size());
  return outputs[0];
}

std::vector<KerasTensor> Layer::call_multi(const std::vector<KerasTensor>& inputs) const {
  auto self = share();
  std::vector<Shape> shapes;
  for (const auto& x : inputs) {
    if (!x.defined()) raise<ValueError>("{} \"{}\": called on an undefined KerasTensor", class_name(), name());
    shapes.push_back(x.shape());
  }
  if (!state_->built) {
    state_->input_specs.clear();
    for (const auto& x : inputs) state_->input_specs.push_back(x.spec());
  }
  self->ensure_built(shapes);

  // Output specs: run call() on placeholders in a scratch graph (every op has a shape function).
  Graph scratch;
  std::vector<SymbolicTensor> placeholders;
  for (const auto& x : inputs) placeholders.push_back(scratch.placeholder(x.shape(), x.dtype()));
  std::vector<Node*> updates;
  std::vector<SymbolicTensor> losses;
  CallContext ctx{.graph = scratch, .training = false, .updates = &updates, .losses = &losses};
  std::vector<SymbolicTensor> outputs;
  // An op's error gets the layer's name in front, unless the layer already said it.
  const std::string where = class_name() + " \"" + name() + "\": ";
  auto prefixed = [&](const std::exception& e) {
    std::string what = e.what();
    return what.find("\"" + name() + "\"") == std::string::npos ? where + what : what;
  };
  try {
    outputs = self->apply(ctx, placeholders);
  } catch (const ShapeError& e) {
    throw ShapeError(prefixed(e));
  } catch (const DTypeError& e) {
    throw DTypeError(prefixed(e));
  } catch (const ValueError& e) {
    throw ValueError(prefixed(e));
  }

  auto node = std::make_shared<KerasNode>();
  node->layer = self;
  node->inputs = inputs;
  for (const auto& y : outputs) node->outputs.push_back(y.spec());
  state_->nodes.push_back(node);
  std::vector<KerasTensor> result;
  for (int i = 0; i < static_cast<int>(outputs.size()); ++i) result.emplace_back(node, i);
  return result;
}

namespace {
thread_local std::string t_weight_scope;
}  // namespace

WeightNameScope::WeightNameScope(std::string scope) : previous_(std::move(t_weight_scope)) {
  t_weight_scope = std::move(scope);
}

WeightNameScope::~WeightNameScope() { t_weight_scope = std::move(previous_); }

const std::string& WeightNameScope::current() { return t_weight_scope; }

VariablePtr Layer::add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                              const Regularizer& regularizer, bool trainable, DType dtype) {
  // A weight too large to count or to hold is refused before anything is drawn or allocated: unchecked,
  // Dense(1 << 32) on 2^32 features counted 2^64 = 0 elements (it built with 0 parameters and saved),
  // and a byte size past 2^64 wrapped into a small allocation that the initializer overran.
  if (dtype == DType::float32) dtype = this->dtype();  // float weights take the variable dtype
  const std::string what = fmt::format("{} \"{}\": weight \"{}\" of shape {}", class_name(), state_->name, name,
                                       shape.to_string());
  const char* fix = "use fewer units or filters, or a smaller input";
  const std::int64_t elements = checked_product(shape.dims(), what + ", its number of elements", fix);
  (void)checked_bytes(elements, dtype_size(dtype), what + ", its bytes", fix);
  const std::string& scope = WeightNameScope::current();
  const std::string full_name = (scope.empty() ? state_->name : scope) + "/" + name + ":0";
  Tensor value;
  try {
    value = initializer(shape, dtype);  // drawn on the host, the same numbers on every device
    if (&value.device() != &default_device()) value = value.to(default_device());
  } catch (const OutOfMemoryError& e) {
    raise_variable_out_of_memory(full_name, shape, dtype, &e);
  } catch (const std::bad_alloc&) {
    raise_variable_out_of_memory(full_name, shape, dtype, nullptr);
  }
  auto variable = make_variable(full_name, value, trainable);
  state_->weights.push_back(variable);
  state_->weight_names.push_back(name);
  state_->regularizers.push_back(regularizer);
  return variable;
}

namespace {

// Pieces (or mirrors of pieces, a mesh row's copies) joined on the current device, along their axis
// (their all-gather; the gradient goes back to each piece where it lives).
SymbolicTensor joined(Graph& graph, const std::vector<VariablePtr>& pieces) {
  std::vector<SymbolicTensor> parts;
  for (const auto& piece : pieces) parts.push_back(graph.variable(piece));
  const int axis = pieces.front()->is_piece() ? pieces.front()->slice().axis : pieces.front()->primary()->slice().axis;
  return parts.size() == 1 ? parts.front() : ops::concat(parts, axis);
}

// A weight as the graph reads it: the variable, or, when it is split into pieces (tower::distribution's
// sharded layouts), its pieces joined.
SymbolicTensor read_whole(Graph& graph, const VariablePtr& weight) {
  const auto pieces = weight->pieces();
  if (pieces.empty()) return graph.variable(weight);
  return joined(graph, pieces);
}

}  // namespace

SymbolicTensor Layer::read(CallContext& ctx, const VariablePtr& weight, bool autocast) {
  SymbolicTensor value;
  if (ctx.replica && ctx.replica->local_variables)
    if (auto it = ctx.replica->local_variables->find(weight.get()); it != ctx.replica->local_variables->end())
      value = ctx.graph.variable(it->second);
  if (!value.defined() && ctx.replica && ctx.replica->local_pieces)
    if (auto it = ctx.replica->local_pieces->find(weight.get()); it != ctx.replica->local_pieces->end())
      value = joined(ctx.graph, it->second);
  if (!value.defined()) value = read_whole(ctx.graph, weight);
  // Keras casts only float32 variables to a half compute dtype (its autocast never touches float64).
  if (autocast && is_half(t_autocast) && value.dtype() == DType::float32) value = ops::cast(value, t_autocast);
  return value;
}

std::vector<SymbolicTensor> Layer::compute_mask(const std::vector<SymbolicTensor>&,
                                                const std::vector<SymbolicTensor>& masks) const {
  if (!supports_masking() || masks.empty() || !masks[0].defined()) return {};
  return {masks[0]};
}

nlohmann::json Layer::call_kwargs() const { return nlohmann::json::object(); }

std::vector<KerasTensor> Layer::call_from_config(const std::vector<KerasTensor>& inputs,
                                                 const std::map<std::string, KerasTensor>&,
                                                 const nlohmann::json&) const {
  return call_multi(inputs);
}

SymbolicTensor Layer::input_mask(const CallContext& ctx, std::size_t i) {
  return ctx.masks && i < ctx.masks->size() ? (*ctx.masks)[i] : SymbolicTensor();
}

VariablePtr Layer::weight(const std::string& name) const {
  for (std::size_t i = 0; i < state_->weights.size(); ++i)
    if (state_->weight_names[i] == name) return state_->weights[i];
  return nullptr;
}

std::vector<VariablePtr> Layer::trainable_weights() const {
  std::vector<VariablePtr> out;
  if (!state_->trainable) return out;
  for (const auto& w : state_->weights)
    if (w->trainable()) out.push_back(w);
  return out;
}

std::vector<VariablePtr> Layer::non_trainable_weights() const {
  std::vector<VariablePtr> out;
  for (const auto& w : state_->weights)
    if (!state_->trainable || !w->trainable()) out.push_back(w);
  return out;
}

std::vector<VariablePtr> Layer::weights() const {
  auto out = trainable_weights();
  for (auto& w : non_trainable_weights()) out.push_back(std::move(w));
  return out;
}

std::int64_t Layer::count_params() const {
  std::int64_t n = 0;
  for (const auto& w : weights()) n += w->shape().num_elements();
  return n;
}

std::vector<Tensor> Layer::get_weights() const {
  std::vector<Tensor> out;
  for (const auto& w : weights()) out.push_back(w->value().to(cpu_device()));
  return out;
}

void Layer::set_weights(const std::vector<Tensor>& values) {
  auto ws = weights();
  if (values.size() != ws.size())
    raise<ValueError>("{} \"{}\": set_weights got {} arrays but the layer has {} weights", class_name(), name(),
                      values.size(), ws.size());
  for (std::size_t i = 0; i < ws.size(); ++i)
    if (values[i].shape() != ws[i]->shape() || values[i].dtype() != ws[i]->dtype())
      raise<ShapeError>("{} \"{}\": weight {} (\"{}\") has shape {} {}, got an array of shape {} {}", class_name(),
                        name(), i, ws[i]->name(), ws[i]->shape().to_string(), dtype_name(ws[i]->dtype()),
                        values[i].shape().to_string(), dtype_name(values[i].dtype()));
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i]->assign(values[i]);
}

std::vector<SymbolicTensor> Layer::regularization_losses(Graph& graph) const {
  std::vector<SymbolicTensor> out;
  for (std::size_t i = 0; i < state_->weights.size(); ++i)
    if (state_->regularizers[i].defined()) out.push_back(state_->regularizers[i](read_whole(graph, state_->weights[i])));
  return out;
}

std::string Layer::output_shape_string() const {
  for (const auto& weak : state_->nodes) {
    auto node = weak.lock();
    if (!node) continue;
    if (node->outputs.size() == 1) return node->outputs[0].shape.to_string();
    std::string s = "[";
    for (std::size_t i = 0; i < node->outputs.size(); ++i) s += (i ? ", " : "") + node->outputs[i].shape.to_string();
    return s + "]";
  }
  return "?";
}

// ---- Regularizer -----------------------------------------------------------------------------------

void Layer::add_activity_losses(CallContext& ctx, const std::vector<SymbolicTensor>& outputs) const {
  const Regularizer& regularizer = state_->activity_regularizer;
  if (!regularizer.defined() || !ctx.losses) return;
  for (const SymbolicTensor& y : outputs) {
    if (!y.defined() || !is_floating(y.dtype())) continue;
    SymbolicTensor loss = regularizer(y);
    if (y.rank() > 0) {
      // Keras 3 divides by the batch (divide_no_nan: an empty batch adds 0). A replica divides its
      // rows' penalty by the global batch, so the replicas' terms add up to one device's.
      SymbolicTensor rows = ctx.replica ? ctx.replica->global_rows : SymbolicTensor();
      if (!rows.defined()) {
        std::vector<std::int64_t> size(static_cast<std::size_t>(y.rank()), 1);
        size[0] = -1;
        rows = ops::reduce_sum(ops::ones_like(ops::slice(y, std::vector<std::int64_t>(size.size(), 0), size)));
      }
      if (rows.dtype() != loss.dtype()) rows = ops::cast(rows, loss.dtype());
      loss = ops::divide(loss, ops::maximum(rows, ops::ones_like(rows)));
    }
    ctx.losses->push_back(loss);
  }
}

SymbolicTensor Regularizer::operator()(const SymbolicTensor& weight) const {
  SymbolicTensor total;
  if (l1 != 0.0) total = ops::scale(ops::reduce_sum(ops::abs(weight)), l1);
  if (l2 != 0.0) {
    auto term = ops::scale(ops::reduce_sum(ops::square(weight)), l2);
    total = total.defined() ? ops::add(total, term) : term;
  }
  return total;
}

nlohmann::json Layer::get_config() const {
  return {{"name", name()}, {"trainable", trainable()}, {"dtype", dtype_policy().to_config()}};
}

}  // namespace tower
