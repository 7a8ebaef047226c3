// tower::distribution: Keras 3's distribution API (keras.distribution), with its names and rules.
//
//   distribution::DeviceMesh mesh({2, 2}, {"batch", "model"}, {"cpu:0", "cpu:1", "cpu:2", "cpu:3"});
//   distribution::LayoutMap layout_map(mesh);
//   layout_map.set("dense.*kernel", {std::nullopt, "model"});   // Keras: layout_map["dense.*kernel"] = (None, "model")
//   layout_map.set("dense.*bias", {"model"});
//   distribution::set_distribution(std::make_shared<distribution::DataParallel>(
//       std::vector<std::string>{"cpu:0", "cpu:1"}));             // or: auto scope = dp.scope();
//   Model model = make_model();                                   // made under it: trains on its devices
//
// What is built (issue 38, third part): DeviceMesh, TensorLayout and LayoutMap with Keras's checks and
// lookup (an exact key first, then every key as a regular expression matched in full against the path,
// as Keras >= 3.14 does; two matches are a ValueError, none means replicated); DataParallel (the batch
// cut over the devices of the mesh's first axis, variables mirrored: the towers of
// parallel::MirroredStrategy); set_distribution / distribution() / scope(); ModelParallel:
//   - layouts that shard nothing: data parallelism over the batch axis;
//   - layouts that shard a variable (one dimension over a mesh axis of N devices, N dividing it): the
//     variable is split into N pieces on that axis's devices (Variable::pieces; the whole stays in host
//     memory for get_weights, set_weights and files, gathered when read), the other weights move to
//     the first of them, and a layer reads its pieces joined where it runs (an all-gather, FSDP's way:
//     Megatron's column/row compute with sharded activations is not built); each piece gets its
//     gradient, its optimizer slots and its update on its own device;
//   - with a batch axis of several devices too (a batch x model mesh): a tower per row of the mesh with
//     its share of the batch, reading its row's copies (row 0 the weights and pieces, the other rows
//     mirrors of them), each column's gradients summed across the rows.
// Not built: activation layouts ("<layer>/output" keys are looked up but not applied), several workers,
// sharding over more than one mesh axis (docs/parallel.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/layers/engine/replication.h"

namespace tower::distribution {

// Keras's DEFAULT_BATCH_DIM_NAME: the axis DataParallel makes from a list of devices.
inline constexpr const char* kDefaultBatchDimName = "batch";

// Every visible GPU (logical GPUs count), else cpu:0: keras.distribution.list_devices().
std::vector<std::string> list_devices();

// A grid of devices with a name per axis (keras.distribution.DeviceMesh, jax.sharding.Mesh): `devices`
// in row-major order, as many as the shape's product (default: list_devices()).
class DeviceMesh {
 public:
  DeviceMesh(std::vector<std::int64_t> shape, std::vector<std::string> axis_names,
             std::vector<std::string> devices = {});

  const std::vector<std::int64_t>& shape() const { return shape_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  const std::vector<std::string>& devices() const { return devices_; }  // canonical names, row-major
  // The index of axis `name`; ValueError listing the axes when there is none.
  std::size_t axis(const std::string& name) const;
  std::int64_t axis_size(const std::string& name) const { return shape_[axis(name)]; }
  // The devices along axis `name` where every other axis is at 0 (e.g. a data-parallel row).
  std::vector<std::string> devices_along(const std::string& name) const;
  std::string to_string() const;  // "<DeviceMesh shape=(2, 2), axis_names=['batch', 'model']>"

 private:
  std::vector<std::int64_t> shape_;
  std::vector<std::string> axis_names_;
  std::vector<std::string> devices_;
};

// For each dimension of a tensor, the mesh axis it is sharded over, or nullopt (replicated)
// (keras.distribution.TensorLayout). With a mesh, every named axis must be one of the mesh's.
class TensorLayout {
 public:
  TensorLayout(std::vector<std::optional<std::string>> axes, std::shared_ptr<const DeviceMesh> mesh = nullptr);

  const std::vector<std::optional<std::string>>& axes() const { return axes_; }
  const std::shared_ptr<const DeviceMesh>& device_mesh() const { return mesh_; }
  // Sets the mesh once (LayoutMap gives its own to the layouts it takes); ValueError when it has one.
  void set_device_mesh(std::shared_ptr<const DeviceMesh> mesh);
  // Whether some dimension is split (an axis of more than one device).
  bool sharded() const;
  std::string to_string() const;  // "(None, 'model')"

 private:
  void validate() const;
  std::vector<std::optional<std::string>> axes_;
  std::shared_ptr<const DeviceMesh> mesh_;
};

// Layouts by variable path ("dense/kernel") or activation path ("dense/output")
// (keras.distribution.LayoutMap).
class LayoutMap {
 public:
  explicit LayoutMap(DeviceMesh mesh);

  // Keras's layout_map[key] = layout: ValueError when `key` is already set. The layout takes the map's
  // mesh when it has none (its axes are then checked against it).
  void set(const std::string& key, TensorLayout layout);
  void set(const std::string& key, std::vector<std::optional<std::string>> axes) { set(key, TensorLayout(std::move(axes))); }
  // Keras's layout_map[path]: the layout of key `path`, else of the one key that matches `path` in full
  // as a regular expression (ECMAScript syntax, Python's for these keys), else nullopt (replicated).
  // ValueError when several keys match, or a key is not a valid regular expression.
  std::optional<TensorLayout> get(const std::string& path) const;
  std::size_t size() const { return keys_.size(); }
  const std::shared_ptr<const DeviceMesh>& device_mesh() const { return mesh_; }

 private:
  std::shared_ptr<const DeviceMesh> mesh_;
  std::vector<std::string> keys_;  // insertion order, as Keras's OrderedDict
  std::map<std::string, TensorLayout> layouts_;
};

// keras.distribution.Distribution: where variables and batches go. While set (set_distribution or
// scope()), models made or compiled run through replication().
class Distribution {
 public:
  virtual ~Distribution() = default;
  const DeviceMesh& device_mesh() const { return *mesh_; }
  // The layout of a batch of rank `rank`: dimension 0 over the batch axis.
  TensorLayout get_data_layout(int rank) const;
  // The layout of variable `path` of rank `rank` (all replicated unless a LayoutMap says otherwise).
  virtual TensorLayout get_variable_layout(const std::string& path, int rank) const;
  // The layout of an activation ("<layer path>/output"), or nullopt: left as it is.
  virtual std::optional<TensorLayout> get_tensor_layout(const std::string& path) const { return std::nullopt; }
  const std::string& batch_dim_name() const { return batch_dim_name_; }

  // What models made or compiled under this distribution run through.
  virtual std::shared_ptr<const Replication> replication() const = 0;

  // While it lives, this distribution is the global one (Keras's `with distribution.scope():`).
  class Scope {
   public:
    explicit Scope(std::shared_ptr<const Distribution> distribution);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::shared_ptr<const Distribution> previous_;
  };

 protected:
  Distribution(std::shared_ptr<const DeviceMesh> mesh, std::string batch_dim_name);
  std::shared_ptr<const DeviceMesh> mesh_;
  std::string batch_dim_name_;
};

// keras.distribution.DataParallel: the batch cut over the devices of the mesh's first axis (a mesh of
// several axes: the devices along the first where the others are at 0, with a warning, as Keras
// warns), the variables replicated (mirrored) on each.
class DataParallel : public Distribution {
 public:
  DataParallel();                                          // list_devices()
  explicit DataParallel(const std::vector<std::string>& devices);
  explicit DataParallel(const DeviceMesh& mesh);
  std::shared_ptr<const Replication> replication() const override { return replication_; }

 private:
  std::shared_ptr<const Replication> replication_;
};

// keras.distribution.ModelParallel: variables laid out by `layout_map` (unmatched ones replicated), the
// batch cut over axis `batch_dim_name` (default: the mesh's first axis).
class ModelParallel : public Distribution {
 public:
  explicit ModelParallel(LayoutMap layout_map, const std::string& batch_dim_name = "");
  TensorLayout get_variable_layout(const std::string& path, int rank) const override;
  std::optional<TensorLayout> get_tensor_layout(const std::string& path) const override;
  std::shared_ptr<const Replication> replication() const override { return replication_; }
  const LayoutMap& layout_map() const { return layout_map_; }

 private:
  LayoutMap layout_map_;
  std::shared_ptr<const Replication> replication_;
};

// The global distribution (keras.distribution.distribution()), or null.
std::shared_ptr<const Distribution> distribution();
// Makes `value` the global distribution (null: none), for every thread without a strategy scope open.
void set_distribution(std::shared_ptr<const Distribution> value);
inline Distribution::Scope scope(std::shared_ptr<const Distribution> value) { return Distribution::Scope(std::move(value)); }

// Keras's variable.path of a weight named "dense/kernel:0": "dense/kernel".
std::string variable_path(const std::string& weight_name);

}  // namespace tower::distribution
