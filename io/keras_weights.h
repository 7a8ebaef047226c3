// Keras's legacy HDF5 weight files (model.save_weights("x.h5") / model.load_weights("x.h5")):
// writing, reading and loading them into layers. The layout is in docs/file-formats.md.
#pragma once

#include <string>
#include <vector>

#include "tower/io/hdf5.h"
#include "tower/layers/engine/model.h"

namespace tower::io {

// The keras_version tower writes: tf.keras 2.15, the last Keras 2, whose layout and weight names
// ("dense_1/kernel:0") tower's files follow. Readers only use it to detect Keras 1 files.
inline constexpr const char* kKerasVersion = "2.15.0";
inline constexpr const char* kKerasBackend = "tensorflow";

// Refuses a name ending in ".keras" before any file is touched: Keras 3 writes its zip archive for it,
// which tower does not implement, and an HDF5 file under that name would not load there. `what` names
// the call in the message ("save(\"m.keras\")"), which gives the .h5 names to use instead.
void refuse_keras_archive_name(const std::string& what, const std::string& path);

// Checks, before a long computation whose result goes to `path` (train_mnist --save; ModelCheckpoint
// and BackupAndRestore in on_train_begin), that a save there can succeed: not a .keras name
// (refuse_keras_archive_name), the directory exists, `path` is neither a directory nor read-only,
// and a file can be created beside it (the save's temporary file is created and removed). Throws
// ValueError or FileError whose message starts with `what` ("--save m.h5").
void check_writable(const std::string& path, const std::string& what);

// Refuses variables holding NaN or infinity (a diverged training): ValueError naming `what`, the first
// such variable and how many of its values are not finite, and saying to call `allow` to write them
// anyway (e.g. `save_weights("w.h5", {.allow_non_finite = true})`).
void refuse_non_finite(const std::vector<VariablePtr>& variables, const std::string& what, const std::string& allow);

// Writes every layer's weights (weightless layers get an empty group, a nested model one group with
// all its weights) atomically at `path`: a failed save leaves an existing file unchanged. Non-finite
// weights are refused unless options.allow_non_finite.
void save_weights_hdf5(const std::vector<LayerPtr>& layers, const std::string& path,
                       const SaveWeightsOptions& options = {});

// Loads a file written by save_weights (or by Keras 2 / tf.keras / Keras 3's legacy writer; a file
// written by model.save() is read from its model_weights group). By position (default): layers with
// weights are zipped with the file's layers that have weights; by name: each layer takes the file
// group of its name, layers without one are left alone. A nested model's weights are matched by
// name. Everything is checked before any weight changes: on a mismatch the error names the first
// mismatching layer, weight and both shapes, and the layers keep their weights.
void load_weights_hdf5(const std::vector<LayerPtr>& layers, const std::string& path,
                       const LoadWeightsOptions& options = {});

// The same on a group (the root of a weight file, or model_weights/ of a model file). `what` starts
// every error message, e.g. `load_weights("x.h5")`.
void save_weights_to_group(hdf5::Group& group, const std::vector<LayerPtr>& layers);
void load_weights_from_group(const hdf5::Group& group, const std::vector<LayerPtr>& layers,
                             const LoadWeightsOptions& options, const std::string& what);

// What a weight file holds for one layer, in layer_names order.
struct WeightFileLayer {
  std::string name;                       // the layer's group ("dense_1")
  std::vector<std::string> weight_names;  // datasets, relative to the group ("dense_1/kernel:0")
  std::vector<Shape> shapes;              // one per weight
};

// The group holding layer_names: `file` itself, or its model_weights group (a model.save() file).
hdf5::Group find_weights_group(const hdf5::File& file, const std::string& what);
// Every layer of a weights group, in layer_names order (weightless layers included).
std::vector<WeightFileLayer> read_weight_file_layers(const hdf5::Group& group);

}  // namespace tower::io
