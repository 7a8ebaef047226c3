// tower::distribution: DeviceMesh, TensorLayout, LayoutMap, DataParallel, ModelParallel.
#include "tower/parallel/distribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <regex>

#include "tower/core/autodiff.h"
#include "tower/core/checked.h"
#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/engine/model.h"
#include "tower/optimizers/optimizer.h"
#include "tower/parallel/all_reduce.h"
#include "tower/parallel/batch_parts.h"
#include "tower/parallel/mirrored_strategy.h"
#include "tower/parallel/mirrored_variables.h"
#include "tower/parallel/towers.h"

namespace tower::distribution {

namespace {

std::string python_list(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const auto& n : names) quoted.push_back("'" + n + "'");
  return "[" + fmt::format("{}", fmt::join(quoted, ", ")) + "]";
}

std::string python_tuple(const std::vector<std::int64_t>& shape) {
  return shape.size() == 1 ? fmt::format("({},)", shape[0]) : fmt::format("({})", fmt::join(shape, ", "));
}

// The towers of a distribution: the batch over `devices`, the variables mirrored.
std::shared_ptr<const parallel::Towers> towers_on(const std::vector<std::string>& devices, const std::string& who) {
  return std::make_shared<const parallel::Towers>(devices, parallel::MultiGpuOptions{.mirrored = true}, who);
}

// One weight's layout under ModelParallel: split along `dim` over the devices of mesh axis `axis`.
struct Split {
  VariablePtr weight;
  std::size_t dim;
  std::string axis;
};

// The copies of a model's weights on a mesh of B rows (the batch axis) by M columns (the axis its weights
// are sharded over): row b's device in column c is devices[b][c]. Row 0 reads the weights themselves
// (an unsharded one moved to devices[0][0], a sharded one as its pieces, piece m on devices[0][m]);
// row b > 0 reads mirrors of them on its own devices.
struct MeshCopies {
  std::vector<std::vector<std::string>> devices;                            // [row][column]
  std::vector<std::map<const Variable*, VariablePtr>> mirrors;              // [row]: weight -> its copy there
  std::vector<std::map<const Variable*, std::vector<VariablePtr>>> pieces;  // [row]: sharded weight -> its pieces
  std::map<const Variable*, std::vector<VariablePtr>> copies_of;            // weight -> every row's copy
};

// ModelParallel's call: a tower per row, each on its row's first device with its share of the batch,
// reading its row's copies (a sharded weight: its row's pieces joined there). The gradients of each
// group of copies that live in one column are summed across the rows, and each row updates its copies
// on their devices (the pieces with their own optimizer slots).
class MeshCall : public parallel::PartsCall {
 public:
  MeshCall(Graph& graph, const MeshCopies& copies)
      : PartsCall(std::vector<std::int64_t>(copies.devices.size(), 1)), graph_(graph), copies_(copies) {}

  void build(Model& model, CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
    std::vector<std::string> row_devices;  // each row's tower on its first device
    for (const auto& row : copies_.devices) row_devices.push_back(row.front());
    call_parts(
        model, ctx, inputs, row_devices,
        [this](std::size_t b) {
          return ReplicaContext{.local_variables = &copies_.mirrors[b], .local_pieces = &copies_.pieces[b]};
        },
        [this](const VariablePtr& v) {
          const auto it = copies_.copies_of.find(v.get());
          return it == copies_.copies_of.end() ? std::vector<VariablePtr>{v} : it->second;
        });
  }

  std::vector<Node*> apply_gradients(const SymbolicTensor& loss, const std::vector<VariablePtr>& variables,
                                     optimizers::Optimizer& optimizer, const SymbolicTensor& learning_rate,
                                     const SymbolicTensor& iteration) override {
    const std::size_t rows = copies_.devices.size();
    // Groups of copies summed across the rows: [column][row] copies, in the order of `variables`.
    const std::size_t columns = copies_.devices.front().size();
    std::vector<std::vector<std::vector<VariablePtr>>> groups(columns, std::vector<std::vector<VariablePtr>>(rows));
    for (const auto& v : variables)
      for (std::size_t b = 0; b < rows; ++b) {
        if (const auto it = copies_.pieces[b].find(v.get()); it != copies_.pieces[b].end()) {
          for (std::size_t m = 0; m < it->second.size(); ++m) groups[m][b].push_back(it->second[m]);
        } else {
          const auto mirror = copies_.mirrors[b].find(v.get());
          groups[0][b].push_back(mirror == copies_.mirrors[b].end() ? v : mirror->second);
        }
      }
    std::vector<SymbolicTensor> reads;
    for (const auto& group : groups)
      for (const auto& row : group)
        for (const auto& copy : row) reads.push_back(graph_.variable(copy));
    const auto all = gradients(loss, reads);
    std::vector<Node*> out;
    std::size_t at = 0;
    for (std::size_t c = 0; c < columns; ++c) {
      if (groups[c].front().empty()) continue;
      std::vector<std::string> replicas;
      std::vector<std::vector<SymbolicTensor>> grads(rows);
      for (std::size_t b = 0; b < rows; ++b) {
        replicas.push_back(copies_.devices[b][c]);
        for (std::size_t i = 0; i < groups[c][b].size(); ++i) grads[b].push_back(all[at++]);
      }
      const auto sums = parallel::all_reduce_sum(graph_, replicas, grads);
      for (std::size_t b = 0; b < rows; ++b) {
        Graph::DeviceScope on(graph_, replicas[b]);
        for (Node* u : optimizer.apply_gradients(graph_, sums[b], groups[c][b], learning_rate, iteration)) out.push_back(u);
      }
    }
    return out;
  }

  // What was written outside the graph reaches the copies before a step: the pieces from their wholes
  // first, then the mirrors from what they mirror. After it, every row's copies had the same update.
  void before_step() override {
    if (!listed_) {
      for (int id = 0; id < graph_.num_nodes(); ++id)
        if (const auto& v = graph_.node(id).variable(); v && v->primary()) (v->is_piece() ? pieces_ : mirrors_).push_back(v);
      listed_ = true;
    }
    for (const auto& piece : pieces_) piece->sync_from_primary();
    for (const auto& mirror : mirrors_) mirror->sync_from_primary();
  }
  void after_step() override {
    for (const auto& mirror : mirrors_) mirror->mark_in_sync();
  }

 private:
  Graph& graph_;
  const MeshCopies copies_;  // a copy: the replication may make new ones for later graphs
  std::vector<VariablePtr> pieces_, mirrors_;
  bool listed_ = false;
};

// ModelParallel's replication. Layouts that shard nothing: towers over the batch axis (data
// parallelism). Layouts that shard weights: each such weight is split into pieces along its sharded
// dimension, one per device of that mesh axis (the whole stays in host memory for get_weights and
// files, gathered when read), the other weights move to the first of those devices, and the model runs
// as a tower per device of the batch axis, each with its row of the mesh (MeshCall).
class MeshReplication : public Replication {
 public:
  MeshReplication(std::shared_ptr<const parallel::Towers> towers, const LayoutMap& layouts, std::string batch_axis)
      : towers_(std::move(towers)), layouts_(layouts), batch_axis_(std::move(batch_axis)) {}
  // The pieces' latest values go back to their wholes before the pieces go.
  ~MeshReplication() override {
    for (const auto& [whole, pieces] : pieces_)
      if (const auto w = whole.lock()) (void)w->value();
  }

  std::unique_ptr<ReplicatedCall> call(Model& model, CallContext& ctx,
                                       const std::vector<SymbolicTensor>& inputs) const override {
    Model replicated = model.wrapped_model() ? *model.wrapped_model() : model;
    const auto splits = splits_of(replicated);
    if (splits.empty()) return towers_->call(model, ctx, inputs);
    place(replicated, splits);
    auto call = std::make_unique<MeshCall>(ctx.graph, copies_on_rows(replicated, splits));
    call->build(replicated, ctx, inputs);
    return call;
  }
  int num_replicas_in_sync() const override { return towers_->num_replicas_in_sync(); }
  std::vector<CallbackPtr> fit_callbacks() const override { return towers_->fit_callbacks(); }

 private:
  // The weights the layouts shard (an axis of more than one device), each checked.
  std::vector<Split> splits_of(const Model& model) const {
    std::vector<Split> out;
    for (const auto& w : model.weights()) {
      const std::string path = variable_path(w->name());
      const auto layout = layouts_.get(path);
      if (!layout || !layout->sharded()) continue;
      const auto& axes = layout->axes();
      if (static_cast<int>(axes.size()) != w->shape().rank())
        raise<ValueError>("ModelParallel: the layout {} of \"{}\" has {} axes, and the variable {} has rank {}; give "
                          "one axis (or None) per dimension",
                          layout->to_string(), path, axes.size(), w->shape().to_string(), w->shape().rank());
      std::vector<std::size_t> dims;
      for (std::size_t d = 0; d < axes.size(); ++d)
        if (axes[d] && layout->device_mesh()->axis_size(*axes[d]) > 1) dims.push_back(d);
      if (dims.size() > 1)
        raise<ValueError>("ModelParallel: the layout {} of \"{}\" shards {} dimensions; sharding one dimension per "
                          "variable is built",
                          layout->to_string(), path, dims.size());
      const std::string& axis = *axes[dims.front()];
      const std::int64_t n = layout->device_mesh()->axis_size(axis);
      if (w->shape()[static_cast<int>(dims.front())] % n != 0)
        raise<ValueError>("ModelParallel: \"{}\" {} cannot be sharded over axis '{}' of {} devices: its dimension {} "
                          "({}) is not a multiple of {}",
                          path, w->shape().to_string(), axis, n, dims.front(), w->shape()[static_cast<int>(dims.front())],
                          n);
      out.push_back({w, dims.front(), axis});
    }
    return out;
  }

  // Splits each sharded weight into its pieces (once), and moves the model's other weights, and their
  // optimizer slots, to the first device of the sharding axis.
  void place(Model& model, const std::vector<Split>& splits) const {
    std::lock_guard lock(mutex_);
    const DeviceMesh& mesh = *layouts_.device_mesh();
    for (const auto& split : splits) {
      if (!split.weight->pieces().empty()) continue;
      const auto devices = mesh.devices_along(split.axis);
      const std::int64_t size = split.weight->shape()[static_cast<int>(split.dim)] / static_cast<std::int64_t>(devices.size());
      std::vector<VariablePtr> pieces;
      for (std::size_t k = 0; k < devices.size(); ++k)
        pieces.push_back(make_piece(split.weight,
                                    {static_cast<int>(split.dim), static_cast<std::int64_t>(k) * size}, size,
                                    device(devices[k])));
      pieces_.emplace_back(split.weight, std::move(pieces));
    }
    Device& first = device(mesh.devices_along(splits.front().axis).front());
    for (const auto& w : model.weights()) {
      if (!w->pieces().empty() || &w->device() == &first) continue;
      if (model.compiled())
        for (const auto& slot : model.optimizer().slots_of(*w)) slot->relocate(first);
      w->relocate(first);
    }
  }

  // Every row's copies: row 0 the weights (and pieces) themselves, the other rows mirrors of them on
  // their own devices (made once, kept in mirrors_). The sharding axis must be the same for every
  // weight and other than the batch axis, and the mesh's other axes of one device.
  MeshCopies copies_on_rows(const Model& model, const std::vector<Split>& splits) const {
    const DeviceMesh& mesh = *layouts_.device_mesh();
    const std::string& axis = splits.front().axis;
    for (const auto& split : splits)
      if (split.axis != axis)
        raise<ValueError>("ModelParallel: \"{}\" is sharded over axis '{}' and \"{}\" over '{}'; sharding over one "
                          "mesh axis is built",
                          variable_path(splits.front().weight->name()), axis, variable_path(split.weight->name()),
                          split.axis);
    if (axis == batch_axis_)
      raise<ValueError>("ModelParallel: \"{}\" is sharded over the batch axis '{}'; shard variables over another axis "
                        "of the mesh",
                        variable_path(splits.front().weight->name()), axis);
    for (const auto& name : mesh.axis_names())
      if (name != axis && name != batch_axis_ && mesh.axis_size(name) > 1)
        raise<ValueError>("ModelParallel: {} has axis '{}' of {} devices besides the batch axis '{}' and the sharding "
                          "axis '{}'; give it one device",
                          mesh.to_string(), name, mesh.axis_size(name), batch_axis_, axis);
    const std::size_t batch = mesh.axis(batch_axis_), model_axis = mesh.axis(axis);
    std::vector<std::int64_t> strides(mesh.shape().size(), 1);  // row-major
    for (std::size_t k = mesh.shape().size() - 1; k > 0; --k) strides[k - 1] = strides[k] * mesh.shape()[k];
    MeshCopies copies;
    const auto rows = mesh.shape()[batch], columns = mesh.shape()[model_axis];
    for (std::int64_t b = 0; b < rows; ++b) {
      auto& row = copies.devices.emplace_back();
      for (std::int64_t c = 0; c < columns; ++c)
        row.push_back(mesh.devices()[static_cast<std::size_t>(b * strides[batch] + c * strides[model_axis])]);
    }
    copies.mirrors.resize(static_cast<std::size_t>(rows));
    copies.pieces.resize(static_cast<std::size_t>(rows));
    std::vector<VariablePtr> whole;  // the weights not split
    for (const auto& w : model.weights())
      if (w->pieces().empty()) whole.push_back(w);
    for (std::size_t b = 0; b < static_cast<std::size_t>(rows); ++b) {
      if (b > 0) copies.mirrors[b] = mirrors_.on(copies.devices[b][0], whole);
      for (const auto& split : splits) {
        auto& row_pieces = copies.pieces[b][split.weight.get()];
        const auto pieces = split.weight->pieces();
        for (std::size_t m = 0; m < pieces.size(); ++m)
          row_pieces.push_back(b == 0 ? pieces[m] : mirrors_.on(copies.devices[b][m], {pieces[m]}).at(pieces[m].get()));
      }
    }
    for (const auto& w : whole) {
      auto& all = copies.copies_of[w.get()];
      all.push_back(w);
      for (std::size_t b = 1; b < copies.mirrors.size(); ++b) all.push_back(copies.mirrors[b].at(w.get()));
    }
    return copies;
  }

  std::shared_ptr<const parallel::Towers> towers_;  // the batch axis's, for layouts that shard nothing
  mutable parallel::MirrorSet mirrors_;             // the rows' copies after the first
  LayoutMap layouts_;
  std::string batch_axis_;
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<std::weak_ptr<Variable>, std::vector<VariablePtr>>> pieces_;  // owned here
};

std::mutex global_mutex;
std::shared_ptr<const Distribution> global_distribution;

}  // namespace

std::vector<std::string> list_devices() { return parallel::all_gpus_or_cpu(); }

std::string variable_path(const std::string& weight_name) {
  return weight_name.ends_with(":0") ? weight_name.substr(0, weight_name.size() - 2) : weight_name;
}

// ---- DeviceMesh ----------------------------------------------------------------------------------

DeviceMesh::DeviceMesh(std::vector<std::int64_t> shape, std::vector<std::string> axis_names,
                       std::vector<std::string> devices)
    : shape_(std::move(shape)), axis_names_(std::move(axis_names)) {
  if (shape_.empty() || axis_names_.empty())
    raise<ValueError>("DeviceMesh: shape and axis_names cannot be empty. Received: shape={}, axis_names={}",
                      python_tuple(shape_), python_list(axis_names_));
  if (shape_.size() != axis_names_.size())
    raise<ValueError>("DeviceMesh: shape and axis_names should have same size. Received: shape={}, axis_names={}",
                      python_tuple(shape_), python_list(axis_names_));
  std::int64_t count = 1;
  for (auto n : shape_) {
    if (n < 1) raise<ValueError>("DeviceMesh: every axis needs at least one device, got shape={}", python_tuple(shape_));
    count = checked_mul(count, n, [&] { return fmt::format("DeviceMesh: the devices of shape {}", python_tuple(shape_)); },
                        "give a smaller shape");
  }
  for (std::size_t a = 0; a < axis_names_.size(); ++a)
    if (std::count(axis_names_.begin(), axis_names_.end(), axis_names_[a]) > 1)
      raise<ValueError>("DeviceMesh: axis name '{}' is given twice in axis_names={}", axis_names_[a], python_list(axis_names_));
  if (devices.empty()) devices = list_devices();
  if (static_cast<std::int64_t>(devices.size()) != count)
    raise<ValueError>("DeviceMesh: shape does not match the number of devices. Received: shape={}; {} device(s) ({})",
                      python_tuple(shape_), devices.size(), fmt::join(devices, ", "));
  for (const auto& d : devices) {
    const std::string name = device(d).name();  // unknown devices: NotFoundError listing what is visible
    if (std::find(devices_.begin(), devices_.end(), name) != devices_.end())
      raise<ValueError>("DeviceMesh: device {} is listed twice; give each device once", name);
    devices_.push_back(name);
  }
}

std::size_t DeviceMesh::axis(const std::string& name) const {
  const auto it = std::find(axis_names_.begin(), axis_names_.end(), name);
  if (it == axis_names_.end())
    raise<ValueError>("{} has no axis '{}'; its axes are {}", to_string(), name, python_list(axis_names_));
  return static_cast<std::size_t>(it - axis_names_.begin());
}

std::vector<std::string> DeviceMesh::devices_along(const std::string& name) const {
  const std::size_t a = axis(name);
  std::int64_t stride = 1;  // row-major: the last axis varies fastest
  for (std::size_t k = a + 1; k < shape_.size(); ++k) stride *= shape_[k];
  std::vector<std::string> out;
  for (std::int64_t i = 0; i < shape_[a]; ++i) out.push_back(devices_[static_cast<std::size_t>(i * stride)]);
  return out;
}

std::string DeviceMesh::to_string() const {
  return fmt::format("<DeviceMesh shape={}, axis_names={}>", python_tuple(shape_), python_list(axis_names_));
}

// ---- TensorLayout --------------------------------------------------------------------------------

TensorLayout::TensorLayout(std::vector<std::optional<std::string>> axes, std::shared_ptr<const DeviceMesh> mesh)
    : axes_(std::move(axes)), mesh_(std::move(mesh)) {
  validate();
}

void TensorLayout::set_device_mesh(std::shared_ptr<const DeviceMesh> mesh) {
  if (mesh_) raise<ValueError>("TensorLayout: cannot override device mesh value. Existing value is {}", mesh_->to_string());
  mesh_ = std::move(mesh);
  validate();
}

void TensorLayout::validate() const {
  if (!mesh_) return;
  for (const auto& a : axes_)
    if (a && std::find(mesh_->axis_names().begin(), mesh_->axis_names().end(), *a) == mesh_->axis_names().end())
      raise<ValueError>("TensorLayout {}: invalid axis names for Layout. Valid axis names: {}, got '{}'", to_string(),
                        python_list(mesh_->axis_names()), *a);
}

bool TensorLayout::sharded() const {
  if (!mesh_) return std::any_of(axes_.begin(), axes_.end(), [](const auto& a) { return a.has_value(); });
  return std::any_of(axes_.begin(), axes_.end(), [&](const auto& a) { return a && mesh_->axis_size(*a) > 1; });
}

std::string TensorLayout::to_string() const {
  std::vector<std::string> parts;
  for (const auto& a : axes_) parts.push_back(a ? "'" + *a + "'" : "None");
  return parts.size() == 1 ? "(" + parts[0] + ",)" : fmt::format("({})", fmt::join(parts, ", "));
}

// ---- LayoutMap -----------------------------------------------------------------------------------

LayoutMap::LayoutMap(DeviceMesh mesh) : mesh_(std::make_shared<const DeviceMesh>(std::move(mesh))) {}

void LayoutMap::set(const std::string& key, TensorLayout layout) {
  if (const auto it = layouts_.find(key); it != layouts_.end())
    raise<ValueError>("LayoutMap: {} already exist in the LayoutMap with value {}. Please make sure to not use "
                      "duplicated keys.",
                      key, it->second.to_string());
  if (!layout.device_mesh()) layout.set_device_mesh(mesh_);
  layouts_.emplace(key, std::move(layout));
  keys_.push_back(key);
}

std::optional<TensorLayout> LayoutMap::get(const std::string& path) const {
  if (const auto it = layouts_.find(path); it != layouts_.end()) return it->second;
  std::vector<std::string> matching;
  for (const auto& key : keys_) {
    std::regex pattern;
    try {
      pattern = std::regex(key, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      raise<ValueError>("LayoutMap: key '{}' is not a valid regular expression ({}); escape its special characters",
                        key, e.what());
    }
    if (std::regex_match(path, pattern)) matching.push_back(key);
  }
  if (matching.size() > 1)
    raise<ValueError>("LayoutMap: path '{}' matches multiple layout specification keys: {}. Please make sure each "
                      "tensor/variable path only matches at most one layout specification key in the LayoutMap.",
                      path, python_list(matching));
  if (matching.size() == 1) return layouts_.at(matching.front());
  return std::nullopt;
}

// ---- Distribution --------------------------------------------------------------------------------

Distribution::Distribution(std::shared_ptr<const DeviceMesh> mesh, std::string batch_dim_name)
    : mesh_(std::move(mesh)), batch_dim_name_(std::move(batch_dim_name)) {
  (void)mesh_->axis(batch_dim_name_);  // ValueError naming the mesh's axes
}

TensorLayout Distribution::get_data_layout(int rank) const {
  std::vector<std::optional<std::string>> axes(static_cast<std::size_t>(std::max(rank, 1)));
  axes[0] = batch_dim_name_;
  return TensorLayout(axes, mesh_);
}

TensorLayout Distribution::get_variable_layout(const std::string&, int rank) const {
  return TensorLayout(std::vector<std::optional<std::string>>(static_cast<std::size_t>(std::max(rank, 0))), mesh_);
}

Distribution::Scope::Scope(std::shared_ptr<const Distribution> distribution) : previous_(tower::distribution::distribution()) {
  set_distribution(std::move(distribution));
}

Distribution::Scope::~Scope() { set_distribution(std::move(previous_)); }

std::shared_ptr<const Distribution> distribution() {
  std::lock_guard lock(global_mutex);
  return global_distribution;
}

void set_distribution(std::shared_ptr<const Distribution> value) {
  set_global_strategy(value ? value->replication() : nullptr);
  std::lock_guard lock(global_mutex);
  global_distribution = std::move(value);
}

// ---- DataParallel, ModelParallel -----------------------------------------------------------------

DataParallel::DataParallel() : DataParallel(list_devices()) {}

DataParallel::DataParallel(const std::vector<std::string>& devices)
    : DataParallel(DeviceMesh({static_cast<std::int64_t>(devices.size())}, {kDefaultBatchDimName}, devices)) {}

DataParallel::DataParallel(const DeviceMesh& mesh)
    : Distribution(std::make_shared<const DeviceMesh>(mesh), mesh.axis_names().front()) {
  if (mesh.shape().size() != 1)
    std::cerr << fmt::format("DataParallel: expect the input mesh to be 1D, but received {}. The first axis will be used "
                             "for data-parallel sharding.\n",
                             mesh.to_string());
  replication_ = towers_on(mesh_->devices_along(batch_dim_name_), "DataParallel");
}

ModelParallel::ModelParallel(LayoutMap layout_map, const std::string& batch_dim_name)
    : Distribution(layout_map.device_mesh(),
                   batch_dim_name.empty() ? layout_map.device_mesh()->axis_names().front() : batch_dim_name),
      layout_map_(std::move(layout_map)) {
  replication_ = std::make_shared<const MeshReplication>(
      towers_on(mesh_->devices_along(batch_dim_name_), "ModelParallel"), layout_map_, batch_dim_name_);
}

TensorLayout ModelParallel::get_variable_layout(const std::string& path, int rank) const {
  if (auto layout = layout_map_.get(path)) return *layout;
  return Distribution::get_variable_layout(path, rank);
}

std::optional<TensorLayout> ModelParallel::get_tensor_layout(const std::string& path) const {
  return layout_map_.get(path);
}

}  // namespace tower::distribution
