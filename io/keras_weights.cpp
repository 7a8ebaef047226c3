// Keras's legacy HDF5 weight files: save_weights / load_weights for layers and Model (see keras_weights.h).
#include "tower/io/keras_weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>

#include "tower/io/rnn_weights_internal.h"
#include "tower/layers/engine/replication.h"

namespace tower::io {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "dense_1/kernel:0" -> "dense_1/kernel": Theano-backend and Keras 3 files name weights without the
// TensorFlow output index.
std::string without_index(const std::string& name) {
  const auto colon = name.rfind(':');
  if (colon == std::string::npos || colon + 1 == name.size()) return name;
  const bool digits = std::all_of(name.begin() + static_cast<std::ptrdiff_t>(colon) + 1, name.end(),
                                  [](char c) { return c >= '0' && c <= '9'; });
  return digits ? name.substr(0, colon) : name;
}

// True when a file's weight name denotes the model's weight: equal up to ":0", or a longer path
// ending in it, as Keras 3's Variable.path "outer_model/dense_1/kernel" for "dense_1/kernel:0".
bool same_weight(const std::string& model_name, const std::string& file_name) {
  const std::string m = without_index(model_name), f = without_index(file_name);
  return f == m || (f.size() > m.size() && f.compare(f.size() - m.size(), m.size(), m) == 0 &&
                    f[f.size() - m.size() - 1] == '/');
}

// One weight to set: the model's variable and the file's value for it.
struct Assignment {
  VariablePtr variable;
  std::string layer;    // the model's layer, for messages
  std::string dataset;  // relative to the weights group: "<group>/<weight name>"
  Shape file_shape;
};

// A layer whose file weights are in another layout (CuDNNLSTM, Keras 1's LSTM): all of them are read,
// then converted to the layer's (rnn_weights_internal.h).
struct ConvertedLayer {
  LayerPtr layer;
  std::vector<std::string> datasets;  // relative to the weights group, in the file's order
};

// The file index of each weight by name ("dense_1/kernel:0"), when every weight finds exactly one
// match and the counts agree; else empty.
std::vector<std::size_t> match_by_name(const std::vector<VariablePtr>& weights, const WeightFileLayer& entry) {
  std::vector<std::size_t> index;
  std::set<std::size_t> used;
  for (const auto& w : weights) {
    std::vector<std::size_t> found;
    for (std::size_t j = 0; j < entry.weight_names.size(); ++j)
      if (same_weight(w->name(), entry.weight_names[j])) found.push_back(j);
    if (found.size() != 1 || !used.insert(found[0]).second) return {};
    index.push_back(found[0]);
  }
  if (weights.size() != entry.weight_names.size()) return {};
  return index;
}

// The file index of each of a layer's weights: for a nested model by name when every weight finds
// exactly one match (its order in the file depends on which sublayers were trainable when it was
// saved), else by position as Keras does. Empty when the counts differ.
std::vector<std::size_t> match_weights(bool nested_model, const std::vector<VariablePtr>& weights,
                                       const WeightFileLayer& entry) {
  if (nested_model)
    if (auto index = match_by_name(weights, entry); !index.empty()) return index;
  std::vector<std::size_t> index;
  if (weights.size() != entry.weight_names.size()) return index;
  for (std::size_t j = 0; j < weights.size(); ++j) index.push_back(j);
  return index;
}

// The assignments of `weights` (owners[i]: the model's layer holding weights[i]) from the file's
// layer `entry`, or an error message (empty when it fits).
std::string plan_weights(const std::vector<VariablePtr>& weights, const std::vector<std::string>& owners,
                         const std::string& what_owns, bool nested_model, const WeightFileLayer& entry,
                         std::vector<Assignment>& out) {
  const auto index = match_weights(nested_model, weights, entry);
  if (index.empty() && !weights.empty())
    return fmt::format("{} has {} weights in the model but the file's layer \"{}\" has {} ({})", what_owns,
                       weights.size(), entry.name, entry.weight_names.size(), join(entry.weight_names));
  std::vector<Assignment> planned;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const std::size_t j = index[i];
    const std::string dataset = entry.name + "/" + entry.weight_names[j];
    if (entry.shapes[j] != weights[i]->shape())
      return fmt::format("layer \"{}\" weight \"{}\" has shape {} in the model but {} in the file (\"{}\")",
                         owners[i], weights[i]->name(), weights[i]->shape().to_string(),
                         entry.shapes[j].to_string(), dataset);
    planned.push_back({weights[i], owners[i], dataset, entry.shapes[j]});
  }
  out.insert(out.end(), planned.begin(), planned.end());
  return "";
}

// The assignments for one layer, or an error message (empty when it fits).
std::string plan_layer(const LayerPtr& layer_ptr, const WeightFileLayer& entry, std::vector<Assignment>& out,
                       std::vector<ConvertedLayer>& converted) {
  const Layer& layer = *layer_ptr;
  if (converts_rnn_weights(layer, entry.shapes)) {
    ConvertedLayer c{layer_ptr, {}};
    for (const auto& w : entry.weight_names) c.datasets.push_back(entry.name + "/" + w);
    converted.push_back(std::move(c));
    return "";
  }
  const auto weights = layer.weights();
  return plan_weights(weights, std::vector<std::string>(weights.size(), layer.name()),
                      fmt::format("layer \"{}\"", layer.name()), dynamic_cast<const Model*>(&layer) != nullptr,
                      entry, out);
}

// A file whose only layer with weights holds a whole model nested in it, loaded into that model:
// what saving a Keras 2 multi_gpu_model wrapper (or any model around one inner model) wrote. The
// weights are matched as a nested model's: by name, else by position in Keras's order (every layer's
// trainable weights, then the non-trainable ones).
std::vector<Assignment> plan_unwrapping(const std::vector<LayerPtr>& layers, const WeightFileLayer& entry,
                                        const std::string& what) {
  std::vector<VariablePtr> weights;
  std::vector<std::string> owners;
  for (const bool trainable : {true, false})
    for (const auto& layer : layers)
      for (auto& w : trainable ? layer->trainable_weights() : layer->non_trainable_weights()) {
        weights.push_back(std::move(w));
        owners.push_back(layer->name());
      }
  std::vector<Assignment> plan;
  const std::string error = plan_weights(weights, owners, "the model (read as the model nested in the file's only "
                                         "layer with weights, as a Keras multi_gpu_model file holds it)",
                                         /*nested_model=*/true, entry, plan);
  if (!error.empty()) raise<ValueError>("{}: {}", what, error);
  return plan;
}

std::vector<LayerPtr> with_weights(const std::vector<LayerPtr>& layers) {
  std::vector<LayerPtr> out;
  for (const auto& l : layers)
    if (!l->weights().empty()) out.push_back(l);
  return out;
}

std::vector<Assignment> plan_by_position(const std::vector<LayerPtr>& layers, const std::vector<WeightFileLayer>& file,
                                         const std::string& what, std::vector<ConvertedLayer>& converted) {
  const auto model_layers = with_weights(layers);
  std::vector<WeightFileLayer> file_layers;
  std::copy_if(file.begin(), file.end(), std::back_inserter(file_layers),
               [](const WeightFileLayer& l) { return !l.weight_names.empty(); });
  if (file_layers.size() == 1 && model_layers.size() > 1) return plan_unwrapping(layers, file_layers.front(), what);
  if (model_layers.size() != file_layers.size()) {
    std::vector<std::string> model_names, file_names;
    for (const auto& l : model_layers) model_names.push_back(l->name());
    for (const auto& l : file_layers) file_names.push_back(l.name);
    raise<ValueError>("{}: the file has weights for {} layers ({}) but the model has {} layers with weights ({}){}; "
                      "was it saved from another architecture? (by_name = true loads matching layer names only)",
                      what, file_layers.size(), join(file_names), model_layers.size(), join(model_names),
                      model_layers.empty() ? " (is the model built?)" : "");
  }
  std::vector<Assignment> plan;
  for (std::size_t i = 0; i < model_layers.size(); ++i) {
    const std::string error = plan_layer(model_layers[i], file_layers[i], plan, converted);
    if (!error.empty()) raise<ValueError>("{}: {}", what, error);
  }
  return plan;
}

std::vector<Assignment> plan_by_name(const std::vector<LayerPtr>& layers, const std::vector<WeightFileLayer>& file,
                                     bool skip_mismatch, const std::string& what, std::vector<ConvertedLayer>& converted) {
  std::vector<Assignment> plan;
  bool matched = false;
  for (const auto& layer : with_weights(layers)) {
    auto entry = std::find_if(file.begin(), file.end(), [&](const WeightFileLayer& l) { return l.name == layer->name(); });
    if (entry == file.end()) continue;
    matched = true;
    const std::string error = plan_layer(layer, *entry, plan, converted);
    if (!error.empty() && !skip_mismatch)
      raise<ValueError>("{}: {} (skip_mismatch = true skips such layers)", what, error);
  }
  if (!matched && !with_weights(layers).empty()) {
    std::vector<std::string> file_names;
    for (const auto& l : file) file_names.push_back(l.name);
    raise<ValueError>("{}: by_name: no layer with weights has a namesake in the file (file layers: {})", what,
                      join(file_names));
  }
  return plan;
}

void check_unique(const std::vector<std::string>& names, const std::string& what, const std::string& kind) {
  std::set<std::string> seen;
  for (const auto& n : names)
    if (!seen.insert(n).second) raise<ValueError>("{}: two {} are named \"{}\"; names must be unique", what, kind, n);
}

std::string quoted_call(const char* function, const std::string& path) {
  return fmt::format("{}(\"{}\")", function, path);
}

}  // namespace

// ---- reading ------------------------------------------------------------------------------------

hdf5::Group find_weights_group(const hdf5::File& file, const std::string& what) {
  if (file.has_string_array_attr("layer_names")) return file.root();
  if (file.is_group("model_weights")) {
    hdf5::Group g = file.group("model_weights");
    if (g.has_string_array_attr("layer_names")) return g;
  }
  raise<FileError>("{}: \"{}\" is not a Keras weight file: no layer_names attribute at its root or in "
                   "/model_weights",
                   what, file.file_name());
}

std::vector<WeightFileLayer> read_weight_file_layers(const hdf5::Group& group) {
  std::vector<WeightFileLayer> out;
  for (const auto& name : group.read_string_array_attr("layer_names")) {
    hdf5::Group g = group.group(name);
    WeightFileLayer layer{name, g.read_string_array_attr("weight_names"), {}};
    for (const auto& w : layer.weight_names) layer.shapes.push_back(g.dataset(w).shape());
    out.push_back(std::move(layer));
  }
  return out;
}

namespace {

template <typename T>
std::int64_t count_non_finite(const Tensor& host) {
  const T* values = host.data<T>();
  return std::count_if(values, values + host.num_elements(), [](T v) { return !std::isfinite(v); });
}

// NaN and infinite values in a float32 or float64 tensor (0 for other dtypes).
std::int64_t non_finite_values(const Tensor& t) {
  if (t.dtype() != DType::float32 && t.dtype() != DType::float64) return 0;
  const Tensor host = t.to(cpu_device());
  return host.dtype() == DType::float32 ? count_non_finite<float>(host) : count_non_finite<double>(host);
}

}  // namespace

void load_weights_from_group(const hdf5::Group& group, const std::vector<LayerPtr>& layers,
                             const LoadWeightsOptions& options, const std::string& what) {
  if (options.skip_mismatch && !options.by_name)
    raise<ValueError>("{}: skip_mismatch needs by_name = true (as in Keras)", what);
  const auto file = read_weight_file_layers(group);
  std::vector<ConvertedLayer> converted;
  auto plan = options.by_name ? plan_by_name(layers, file, options.skip_mismatch, what, converted)
                              : plan_by_position(layers, file, what, converted);
  // Read everything before assigning anything, so that a bad dataset leaves the model unchanged.
  std::vector<Tensor> values;
  for (const auto& a : plan) values.push_back(group.dataset(a.dataset).read(a.variable->dtype()));
  for (const auto& c : converted) {
    std::vector<Tensor> file_values;
    for (const auto& d : c.datasets) file_values.push_back(group.dataset(d).read(DType::float32));
    const auto weights = c.layer->weights();
    const auto converted_values = convert_rnn_weights(*c.layer, file_values);
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (i >= converted_values.size() || converted_values[i].shape() != weights[i]->shape())
        raise<ValueError>("{}: layer \"{}\": the file's weights ({}) do not fit its weights after conversion from "
                          "another recurrent layout",
                          what, c.layer->name(), join(c.datasets));
      plan.push_back({weights[i], c.layer->name(), c.datasets.front(), converted_values[i].shape()});
      values.push_back(converted_values[i]);
    }
  }
  // A file of NaN weights (saved by Keras, or by tower with allow_non_finite) loads, as in Keras, but
  // is told: such a model predicts NaN, and nothing else would say why.
  std::int64_t bad = 0, total = 0;
  std::string first;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::int64_t n = non_finite_values(values[i]);
    if (n > 0 && first.empty()) first = plan[i].variable->name();
    bad += n;
    total += values[i].num_elements();
  }
  if (bad > 0)
    std::cerr << fmt::format("Warning: {}: {} of the {} loaded weight values are not finite (NaN or infinity), the "
                             "first in variable \"{}\": the file was saved from a training that diverged, and the "
                             "model will predict NaN\n",
                             what, bad, total, first);
  for (std::size_t i = 0; i < plan.size(); ++i) plan[i].variable->assign(values[i]);
}

void load_weights_hdf5(const std::vector<LayerPtr>& layers, const std::string& path, const LoadWeightsOptions& options) {
  const std::string what = quoted_call("load_weights", path);
  try {
    hdf5::File file = hdf5::File::open(path);
    load_weights_from_group(find_weights_group(file, what), layers, options, what);
  } catch (const FileError& e) {
    const std::string message = e.what();
    if (message.rfind(what, 0) == 0) throw;
    if (dynamic_cast<const ChecksumError*>(&e)) throw ChecksumError(what + ": " + message);
    throw FileError(what + ": " + message);
  }
}

// ---- writing ------------------------------------------------------------------------------------

void save_weights_to_group(hdf5::Group& group, const std::vector<LayerPtr>& layers) {
  std::vector<std::string> layer_names;
  for (const auto& l : layers) layer_names.push_back(l->name());
  group.write_string_array_attr("layer_names", layer_names);
  group.write_string_attr("backend", kKerasBackend);
  group.write_string_attr("keras_version", kKerasVersion);
  for (const auto& layer : layers) {
    hdf5::Group g = group.create_group(layer->name());
    std::vector<std::string> weight_names;
    for (const auto& w : layer->weights()) weight_names.push_back(w->name());
    g.write_string_array_attr("weight_names", weight_names);
    for (const auto& w : layer->weights()) g.write_dataset(w->name(), w->value());
  }
  // Variables owned by the model itself (tf.keras >= 2.7, Keras 3); tower models own none.
  group.create_group("top_level_model_weights").write_string_array_attr("weight_names", {});
}

void refuse_keras_archive_name(const std::string& what, const std::string& path) {
  if (!path.ends_with(".keras")) return;
  const std::string stem = path.substr(0, path.size() - std::string_view(".keras").size());
  raise<ValueError>("{}: the .keras format (Keras 3's zip archive) is not implemented; tower writes Keras's HDF5 "
                    "format, which Keras 3 reads and writes for .h5 names: use a .h5 name (\"{}.h5\"), for weights "
                    "too (Keras 3 reads a name ending in .weights.h5 as its own newer weights layout, not this one)",
                    what, stem);
}

void check_writable(const std::string& path, const std::string& what) {
  refuse_keras_archive_name(what, path);
  hdf5::check_can_create(path, what);
}

void refuse_non_finite(const std::vector<VariablePtr>& variables, const std::string& what, const std::string& allow) {
  for (const auto& v : variables) {
    if (v->dtype() != DType::float32 && v->dtype() != DType::float64) continue;
    const std::int64_t bad = non_finite_values(v->value());
    if (bad > 0)
      raise<ValueError>("{}: variable \"{}\" has {} of {} values not finite (NaN or infinity), as after a training "
                        "that diverged (a learning rate too high?); a file of them would predict "
                        "nothing useful, so nothing was written; to write them anyway call {}",
                        what, v->name(), bad, v->value().num_elements(), allow);
  }
}

void save_weights_hdf5(const std::vector<LayerPtr>& layers, const std::string& path, const SaveWeightsOptions& options) {
  const std::string what = quoted_call("save_weights", path);
  refuse_keras_archive_name(what, path);
  if (!options.allow_non_finite) {
    std::vector<VariablePtr> variables;
    for (const auto& l : layers)
      for (auto& w : l->weights()) variables.push_back(std::move(w));
    refuse_non_finite(variables, what, fmt::format("save_weights(\"{}\", {{.allow_non_finite = true}})", path));
  }
  std::vector<std::string> layer_names;
  for (const auto& l : layers) {
    layer_names.push_back(l->name());
    std::vector<std::string> weight_names;
    for (const auto& w : l->weights()) weight_names.push_back(w->name());
    check_unique(weight_names, what, fmt::format("weights of layer \"{}\"", l->name()));
  }
  check_unique(layer_names, what, "layers");
  hdf5::write_file_atomically(path, what, [&](hdf5::File& file) { save_weights_to_group(file, layers); });
}

}  // namespace tower::io

// ---- Model (declared in layers/engine/model.h) ---------------------------------------------------------

namespace tower {

// A parallel wrapper (Model::wrapped_model) reads and writes the model it wraps: the same file. In a
// multi-worker job only the chief writes.
void Model::save_weights(const std::string& path, const SaveWeightsOptions& options) const {
  if (writes_files(*this))
    io::save_weights_hdf5(wrapped_model() ? wrapped_model()->layers() : layers(), path, options);
}

void Model::load_weights(const std::string& path, const LoadWeightsOptions& options) {
  io::load_weights_hdf5(wrapped_model() ? wrapped_model()->layers() : layers(), path, options);
}

}  // namespace tower
