// Keras's full-model HDF5 files: model.save("m.h5") and load_model("m.h5") (architecture, weights,
// training configuration and optimizer state in one file). The layout is in docs/file-formats.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tower/io/hdf5.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/registry.h"

namespace tower::io {

using SaveModelOptions = SaveOptions;  // include_optimizer, allow_non_finite (layers/engine/model.h)

// Writes `model` as Keras's legacy full-model file, atomically (a failed save leaves an existing file
// unchanged). A path ending in ".keras" is refused with ValueError before any file is touched: that
// name means Keras 3's zip format, which tower does not write; use a .h5 name. Weights or optimizer
// slots holding NaN or infinity are refused (ValueError naming the first) unless allow_non_finite. Root attributes
// keras_version, backend, model_config (JSON) and, when compiled, training_config (JSON); group
// model_weights (the save_weights layout); group optimizer_weights ("iteration:0" then the slots, named
// as tf.keras 2.11+ names them).
void save_model_hdf5(const Model& model, const std::string& path, const SaveModelOptions& options = {});

struct LoadModelOptions {
  bool compile = true;  // compile with the file's training_config and restore the optimizer state
};

// Rebuilds a model from a file written by tower's Model::save or by Keras (Keras 1.2 to tf.keras 2.x,
// Keras 3's legacy .h5): the architecture through the layer registry, the weights (convolution kernels
// of Theano-backend files flipped), and, when the file has a training_config, compile() with its
// optimizer, loss and metrics and the optimizer's saved state, so fit() continues where it stopped.
// A file written from Keras's multi_gpu_model loads as its template model.
Model load_model_hdf5(const std::string& path, const LoadModelOptions& options = {});
// The same with the user's classes and functions the file names (Keras's custom_objects): layer
// classes of its model_config, losses and metrics of its training_config. They take precedence over
// tower's own and over registrations (layers::register_layer, ...) for this call.
Model load_model_hdf5(const std::string& path, const CustomObjects& custom_objects,
                      const LoadModelOptions& options = {});

// Keras's training_config of a compiled model: {"loss", "metrics", "weighted_metrics", "loss_weights",
// "optimizer_config"}.
nlohmann::json training_config(const Model& model);
// Compiles `model` as `config` (a training_config written by tower or Keras) says.
void compile_from_config(Model& model, const nlohmann::json& config);

// The optimizer state of a full-model file's optimizer_weights group, mapped onto `model`'s optimizer:
// the step count and the slot values under tower's slot names. Understands tower's and tf.keras 2.11+'s
// names ("Adam/m/dense/kernel:0"), tf.keras 2.0-2.10's ("Adam/dense/kernel/m:0", "Adam/iter:0") and
// Keras 3's ("adam/sequential_dense_kernel_momentum", "adam/iteration"). Throws ValueError naming the
// first weight it cannot place.
struct OptimizerState {
  std::int64_t iterations = 0;
  std::map<std::string, Tensor> slots;
};
OptimizerState read_optimizer_state(const hdf5::Group& optimizer_weights, const Model& model);
void write_optimizer_state(hdf5::Group& group, const optimizers::Optimizer& optimizer);

}  // namespace tower::io

namespace tower::models {

// keras.models.load_model for .h5 files (see io::load_model_hdf5).
inline Model load_model(const std::string& path, const io::LoadModelOptions& options = {}) {
  return io::load_model_hdf5(path, options);
}
// keras.models.load_model(path, custom_objects): load_model("m.h5", {.layers = {{"MyLayer", factory}}}).
inline Model load_model(const std::string& path, const CustomObjects& custom_objects,
                        const io::LoadModelOptions& options = {}) {
  return io::load_model_hdf5(path, custom_objects, options);
}

}  // namespace tower::models
