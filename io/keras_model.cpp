// Keras's full-model HDF5 files: save_model_hdf5 / load_model_hdf5 and their parts (training_config,
// optimizer_weights), and Model::save.
#include "tower/io/keras_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <tuple>
#include <optional>
#include <nlohmann/json.hpp>

#include "tower/io/keras_weights.h"
#include "tower/io/model_config.h"
#include "tower/layers/engine/model.h"
#include "tower/optimizers/optimizers.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"

namespace tower::io {
namespace {

using nlohmann::json;

// ---- training_config ---------------------------------------------------------------------------

json loss_to_config(const losses::Loss& loss) {
  const auto& o = loss.options();
  const losses::LossOptions defaults;
  const std::string& name = loss.name();
  if (o.from_logits == defaults.from_logits && o.label_smoothing == defaults.label_smoothing &&
      o.delta == defaults.delta && o.apply_class_balancing == defaults.apply_class_balancing &&
      o.alpha == defaults.alpha && o.gamma == defaults.gamma && o.axis == defaults.axis)
    return name;
  // Keras's loss object: {"class_name": "CategoricalCrossentropy", "config": {...}}, with only the
  // keys that class's constructor takes (Keras refuses others), and the reduction both tf.keras 2
  // and Keras 3 accept.
  json config = {{"name", name}, {"reduction", "sum_over_batch_size"}};
  const bool focal = name == "binary_focal_crossentropy" || name == "categorical_focal_crossentropy";
  if (focal || name.ends_with("crossentropy")) config["from_logits"] = o.from_logits;
  if (focal || (name.ends_with("crossentropy") && name != "sparse_categorical_crossentropy"))
    config["label_smoothing"] = o.label_smoothing;
  if (focal || name == "cosine_similarity") config["axis"] = o.axis;
  if (name == "binary_focal_crossentropy") config["apply_class_balancing"] = o.apply_class_balancing;
  if (focal) {
    config["alpha"] = o.alpha;
    config["gamma"] = o.gamma;
  }
  if (name == "huber") config["delta"] = o.delta;
  std::string class_name;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    class_name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  if (name == "kl_divergence") class_name = "KLDivergence";  // Keras's spelling
  return {{"class_name", class_name}, {"config", config}};
}

losses::Loss loss_from_config(const json& j) {
  if (j.is_string()) return losses::Loss(j.get<std::string>());
  if (j.is_object() && j.contains("class_name")) {
    // Keras 3's plain function: {"class_name": "function", "config": "my_loss"}.
    if (j.contains("config") && j["config"].is_string()) return losses::Loss(j["config"].get<std::string>());
    const json c = j.value("config", json::object());
    std::string name = j["class_name"].get<std::string>();
    if (name == "function" || name == "LossFunctionWrapper") name = c.value("fn", c.value("name", name));
    losses::LossOptions o;
    auto number = [&](const char* key, double& field) {
      if (!c.contains(key) || c[key].is_null()) return;
      if (!c[key].is_number())
        raise<ValueError>("training_config: loss {}'s {} must be a number, got {} (a per-class list of alpha is not "
                          "supported)",
                          name, key, c[key].dump());
      field = c[key].get<double>();
    };
    o.from_logits = c.value("from_logits", false);
    o.apply_class_balancing = c.value("apply_class_balancing", false);
    number("label_smoothing", o.label_smoothing);
    number("delta", o.delta);
    number("alpha", o.alpha);
    number("gamma", o.gamma);
    if (c.contains("axis") && c["axis"].is_number_integer()) o.axis = c["axis"].get<int>();
    return losses::Loss(name, o);
  }
  raise<ValueError>("training_config: cannot read the loss {}", j.dump());
}

metrics::Metric metric_from_config(const json& j);

// Keras writes metrics as names, as metric objects, or (tf.keras) as one list per output of
// MeanMetricWrapper objects: collect the names, once each, in order (stateful metrics from their config).
void collect_metrics(const json& j, std::vector<metrics::Metric>& out, std::vector<std::string>& seen) {
  if (j.is_null()) return;
  if (j.is_array()) {
    for (const auto& item : j) collect_metrics(item, out, seen);
    return;
  }
  if (j.is_object() && !j.contains("class_name")) {  // {"output_name": [...]}
    for (const auto& [key, item] : j.items()) collect_metrics(item, out, seen);
    return;
  }
  std::string name;
  if (j.is_string()) {
    name = j.get<std::string>();
  } else {
    const json c = j.value("config", json::object());
    name = c.value("name", j.value("class_name", ""));
  }
  if (std::find(seen.begin(), seen.end(), name) != seen.end()) return;
  seen.push_back(name);
  out.push_back(j.is_object() ? metric_from_config(j) : metrics::Metric(name));
}

// A metric as Keras writes it; the stateful ones (AUC, Precision, ...) by their class and config.
metrics::Metric metric_from_config(const json& j) {
  if (j.is_object() && !metrics::Metric::from_config(j).stateful()) {
    const json c = j.value("config", json::object());
    return metrics::Metric(c.value("name", j.value("class_name", "")));
  }
  return metrics::Metric::from_config(j);
}

// How training_config writes a metric: a stateful one as Keras 3's serialized object, the others by the
// function's name (`function`).
json metric_to_config(const metrics::Metric& m, const std::string& function) {
  if (!m.stateful()) return function;
  return {{"module", "keras.metrics"}, {"class_name", m.class_name()}, {"config", m.get_config()},
          {"registered_name", nullptr}};
}

// tower's own files: the metrics under the names they report (`names`) beside what Keras reads
// (`written`: function names, or a stateful metric's object).
std::vector<metrics::Metric> tower_metrics(const json& names, const json& written) {
  std::vector<metrics::Metric> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const json w = written.is_array() && i < written.size() ? written[i] : json();
    out.push_back(w.is_object() ? metric_from_config(w).renamed(names[i].get<std::string>())
                                : metrics::Metric(names[i].get<std::string>()));
  }
  return out;
}

// ---- optimizer state --------------------------------------------------------------------------------

// How files spell each of tower's slots: tf.keras 2.11+ (tower's own), tf.keras 2.0-2.10 and Keras 3.
std::map<std::string, std::vector<std::string>> slot_spellings(const std::string& optimizer) {
  static const std::map<std::string, std::map<std::string, std::vector<std::string>>> table = {
      {"Adam", {{"m", {"m", "momentum"}}, {"v", {"v", "velocity"}}, {"vhat", {"vhat", "velocity_hat"}}}},
      {"SGD", {{"m", {"m", "momentum"}}}},
      {"RMSprop", {{"velocity", {"velocity", "rms"}}, {"momentum", {"momentum"}}, {"average_gradient", {"average_gradient", "mg"}}}},
      {"Adagrad", {{"accumulator", {"accumulator"}}}},
      {"Adadelta", {{"accumulated_grad", {"accumulated_grad", "accum_grad"}},
                    {"accumulated_delta_var", {"accumulated_delta_var", "accum_var"}}}},
      {"Adamax", {{"momentum", {"momentum", "m"}}, {"norm", {"norm", "u"}}}},
      {"Nadam", {{"momentum", {"momentum", "m"}}, {"velocity", {"velocity", "v"}}}},
      {"Lion", {{"momentum", {"momentum", "m"}}}},
      {"Ftrl", {{"accumulator", {"accumulator"}}, {"linear", {"linear"}}}},
      // tf.keras 2.11+'s names. Keras 3 writes no Adafactor state to HDF5: it names r and c after the
      // variable alone ("adafactor/kernel" for every Dense) and h5py refuses the second dataset of a name.
      {"Adafactor", {{"r", {"r"}}, {"c", {"c"}}, {"velocity", {"velocity", "v"}}}},
  };
  auto it = table.find(optimizer == "AdamW" ? "Adam" : optimizer);
  if (it == table.end()) raise<ValueError>("optimizer \"{}\" has no known slot names", optimizer);
  // Every optimizer's use_ema and gradient_accumulation_steps slots, added to its own.
  auto all = it->second;
  all["average"] = {"average"};
  all["gradient_accumulator"] = {"gradient_accumulator"};
  return all;
}

std::string strip_index(std::string name) {
  if (name.size() > 2 && name.ends_with(":0")) name.resize(name.size() - 2);
  return name;
}

std::string underscored(std::string s) {
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

// Tower's slot name for a file's optimizer weight, "" when it names none of `variables`' slots.
std::string tower_slot_name(const std::string& file_name, const std::string& optimizer,
                            const std::vector<std::string>& variables) {
  const std::string name = strip_index(file_name);
  const auto slash = name.find('/');
  if (slash == std::string::npos) return "";
  const std::string rest = name.substr(slash + 1);  // without the optimizer's prefix
  std::string best;
  std::size_t best_length = 0;
  for (const auto& [slot, spellings] : slot_spellings(optimizer))
    for (const auto& spelled : spellings)
      for (const auto& v : variables) {
        const std::string tower = fmt::format("{}/{}/{}:0", optimizer, slot, v);
        if (rest == spelled + "/" + v || rest == v + "/" + spelled) return tower;  // tf.keras 2.11+ / 2.0-2.10
        // Keras 3: "<model>_dense_kernel_momentum" (the variable's path with '_'); longest match wins.
        // Keras 3 calls DepthwiseConv2D's depthwise_kernel "kernel" (SeparableConv2D's keeps its name).
        std::vector<std::string> paths{v};
        if (v.ends_with("/depthwise_kernel")) paths.push_back(v.substr(0, v.size() - 16) + "kernel");
        for (const auto& path : paths) {
          const std::string suffix = underscored(path) + "_" + spelled;
          if (rest.size() >= suffix.size() && rest.ends_with(suffix) &&
              (rest.size() == suffix.size() || rest[rest.size() - suffix.size() - 1] == '_') &&
              suffix.size() > best_length) {
            best = tower;
            best_length = suffix.size();
          }
        }
      }
  if (!best.empty()) return best;
  // Keras 3 puts a wrapped layer's own name in its variables' paths ("time_distributed/dense/kernel"),
  // tf.keras 2 and tower do not ("time_distributed/kernel"): the variable's last part must end the
  // name and the rest of its path come before, with anything between; the longest such path wins.
  for (const auto& [slot, spellings] : slot_spellings(optimizer))
    for (const auto& spelled : spellings)
      for (const auto& v : variables) {
        const auto last_slash = v.rfind('/');
        if (last_slash == std::string::npos) continue;
        const std::string head = underscored(v.substr(0, last_slash)) + "_";
        const std::string tail = "_" + underscored(v.substr(last_slash + 1)) + "_" + spelled;
        if (!rest.ends_with(tail)) continue;
        const std::string before = rest.substr(0, rest.size() - tail.size());
        const bool found = before.starts_with(head) || before.find("_" + head) != std::string::npos;
        if (found && v.size() > best_length) {
          best = fmt::format("{}/{}/{}:0", optimizer, slot, v);
          best_length = v.size();
        }
      }
  return best;
}

bool is_iteration(const std::string& file_name) {
  const std::string name = strip_index(file_name);
  const std::string last = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
  return last == "iteration" || last == "iter" || last == "iterations";
}

// Flips convolution kernels (kh, kw, in, out) on their spatial axes: Theano convolved with flipped
// kernels, TensorFlow and tower correlate (Keras's convert_kernel).
void flip_conv_kernels(const std::vector<LayerPtr>& layers) {
  for (const auto& layer : layers) {
    if (auto* nested = dynamic_cast<Model*>(layer.get())) {
      flip_conv_kernels(nested->layers());
      continue;
    }
    if (layer->class_name() != "Conv2D" || layer->weights().empty()) continue;
    const VariablePtr kernel = layer->weights()[0];
    Tensor k = kernel->value().to(cpu_device()).clone();
    const Shape& s = k.shape();  // (kh, kw, in, out)
    const std::int64_t kh = s[0], kw = s[1], inner = s[2] * s[3];
    Tensor flipped = k.clone();
    const float* from = k.data<float>();
    float* to = flipped.data<float>();
    for (std::int64_t i = 0; i < kh; ++i)
      for (std::int64_t j = 0; j < kw; ++j)
        std::copy_n(from + (i * kw + j) * inner, inner, to + ((kh - 1 - i) * kw + (kw - 1 - j)) * inner);
    kernel->assign(flipped);
  }
}

// The template model of a file saved from Keras's multi_gpu_model (InputLayers, Lambda slices, one
// model layer, Concatenates), or null for any other model.
const json* multi_gpu_template(const json& config) {
  const std::string top = config.value("class_name", "");
  if (top != "Model" && top != "Functional") return nullptr;
  const json& layers = config.at("config").at("layers");
  const json* found = nullptr;
  bool lambda = false;
  for (const auto& layer : layers) {
    const std::string c = layer.value("class_name", "");
    if (c == "Sequential" || c == "Model" || c == "Functional") {
      if (found) return nullptr;
      found = &layer;
    } else if (c == "Lambda") {
      lambda = true;
    } else if (c != "InputLayer" && c != "Concatenate") {
      return nullptr;
    }
  }
  return lambda ? found : nullptr;
}

std::string what_of(const char* call, const std::string& path) { return fmt::format("{}(\"{}\")", call, path); }

// compile()'s metrics (metrics= or weighted_metrics=) as Keras writes them, and tower's names beside
// them: (functions, names). Keras resolves "accuracy" by the loss when it compiles; a
// file must name the function itself, since tf.keras rebuilds loaded metrics against the model's outputs
// (and would pick categorical_accuracy for sparse labels) and Keras 3 cannot read tf.keras's
// MeanMetricWrapper form. tower's own names go beside them, so a round trip reports the same log names.
std::pair<json, json> metrics_to_config(const Model& model, const MetricsArg& arg) {
  const Model::CompileArgs& d = model.compile_args();
  auto write_metrics = [&](const std::vector<metrics::Metric>& list, const losses::Loss* loss) {
    json functions = json::array(), names = json::array();
    for (const auto& m : list) {
      std::string function = m.name();
      if ((function == "accuracy" || function == "acc") && loss) {
        const std::string& l = loss->name();
        if (l == "sparse_categorical_crossentropy") function = "sparse_categorical_accuracy";
        if (l == "categorical_crossentropy") function = "categorical_accuracy";
        if (l == "binary_crossentropy") function = "binary_accuracy";
      }
      functions.push_back(metric_to_config(m, function));
      names.push_back(m.name());
    }
    return std::make_pair(functions, names);
  };
  if (arg.form() == MetricsArg::Form::all) return write_metrics(arg.all(), d.losses.size() == 1 ? &d.losses[0] : nullptr);
  // Keras's {"output_name": [...]}; tower's names alike, which marks the per-output form
  json functions = json::object(), names_of = json::object();
  const auto names = model.output_names();
  const auto lists = arg.for_outputs(names, model.name());
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (lists[k].empty()) continue;
    const losses::Loss* loss = d.losses.size() == 1 ? &d.losses[0] : k < d.losses.size() ? &d.losses[k] : nullptr;
    std::tie(functions[names[k]], names_of[names[k]]) = write_metrics(lists[k], loss);
  }
  return {functions, names_of};
}

// The metrics a training_config names (tower's names beside them when tower wrote it), as compile() takes them.
MetricsArg metrics_from_config(const json& names_as_reported, const json& written) {
  if (names_as_reported.is_array()) return tower_metrics(names_as_reported, written);
  if (names_as_reported.is_object()) {  // per output
    std::map<std::string, std::vector<metrics::Metric>> by_output;
    for (const auto& [output, list] : names_as_reported.items())
      by_output[output] = tower_metrics(list, written.is_object() ? written.value(output, json()) : json());
    return by_output;
  }
  std::vector<metrics::Metric> metric_list;
  std::vector<std::string> seen;
  collect_metrics(written, metric_list, seen);
  return metric_list;
}

}  // namespace

// ---- public -------------------------------------------------------------------------------------------

json training_config(const Model& model) {
  if (!model.compiled()) raise<ValueError>("training_config: model \"{}\" is not compiled", model.name());
  const Model::CompileArgs& d = model.compile_args();
  json loss;
  if (d.losses.size() == 1) {
    loss = loss_to_config(d.losses[0]);
  } else {
    loss = json::object();
    const auto names = model.output_names();
    for (std::size_t i = 0; i < d.losses.size(); ++i) loss[names.at(i)] = loss_to_config(d.losses[i]);
  }
  const auto [metric_functions, metric_names] = metrics_to_config(model, d.metrics_arg);
  const bool weighted = d.weighted_metrics_arg.form() != MetricsArg::Form::all || !d.weighted_metrics_arg.all().empty();
  const auto [weighted_functions, weighted_names] =
      weighted ? metrics_to_config(model, d.weighted_metrics_arg) : std::make_pair(json(), json());
  // tf.keras 2.11+'s spelling; Keras 3 reads it too, whereas it rejects is_legacy_optimizer under "Adam".
  json optimizer = optimizers::to_config(*d.optimizer);
  optimizer["class_name"] = "Custom>" + optimizer["class_name"].get<std::string>();
  return {{"loss", loss},
          {"metrics", metric_functions},
          {"tower_metric_names", metric_names},
          {"weighted_metrics", weighted_functions},
          {"tower_weighted_metric_names", weighted_names},
          {"loss_weights", d.loss_weights.empty() ? json() : json(d.loss_weights)},
          {"optimizer_config", optimizer}};
}

void compile_from_config(Model& model, const json& config) {
  if (!config.contains("optimizer_config"))
    raise<ValueError>("training_config of model \"{}\" has no optimizer_config", model.name());
  auto optimizer = optimizers::from_config(config.at("optimizer_config"));
  const json& loss = config.value("loss", json());
  std::vector<losses::Loss> per_output;
  const auto names = model.output_names();
  if (loss.is_array()) {
    for (const auto& l : loss) per_output.push_back(loss_from_config(l));
  } else if (loss.is_object() && !loss.contains("class_name")) {  // {"output_name": loss}
    for (const auto& n : names) {
      if (!loss.contains(n))
        raise<ValueError>("training_config: the loss dict has no entry for output \"{}\" (has {})", n, loss.dump());
      per_output.push_back(loss_from_config(loss.at(n)));
    }
  } else {
    per_output.push_back(loss_from_config(loss));
  }
  const MetricsArg metric_arg =
      metrics_from_config(config.value("tower_metric_names", json()), config.value("metrics", json()));
  CompileOptions options;
  const json& weights = config.value("loss_weights", json());
  if (weights.is_array()) {
    options.loss_weights = weights.get<std::vector<double>>();
  } else if (weights.is_object()) {
    for (const auto& n : names) options.loss_weights.push_back(weights.value(n, 1.0));
  }
  options.weighted_metrics = metrics_from_config(config.value("tower_weighted_metric_names", json()),
                                                 config.value("weighted_metrics", json()));
  model.compile(optimizer, per_output, metric_arg, options);
}

OptimizerState read_optimizer_state(const hdf5::Group& group, const Model& model) {
  // Under a LossScaleOptimizer the slots are its inner optimizer's ("sgd/m/...", "SGD/m/..."), and its
  // own scalars are "<name>/dynamic_scale" and "<name>/step_counter" (Keras 3's, tower's), then tower's
  // "<name>/inner_iterations".
  const auto* scaled = dynamic_cast<const optimizers::LossScaleOptimizer*>(&model.optimizer());
  const auto& optimizer = scaled ? scaled->inner_optimizer() : model.optimizer();
  std::vector<std::string> variables;
  for (const auto& v : model.trainable_weights()) variables.push_back(strip_index(v->name()));
  OptimizerState state;
  for (const auto& name : group.read_string_array_attr("weight_names")) {
    if (scaled) {
      const std::string stripped = strip_index(name);
      bool own = false;
      for (const char* scalar : {"dynamic_scale", "step_counter", "inner_iterations"})
        if (stripped.ends_with(std::string("/") + scalar)) {
          state.slots[fmt::format("LossScaleOptimizer/{}:0", scalar)] = group.dataset(name).read(DType::float32);
          own = true;
        }
      if (own) continue;
    }
    if (is_iteration(name)) {
      state.iterations = static_cast<std::int64_t>(group.dataset(name).read(DType::float64).data<double>()[0]);
      continue;
    }
    if (strip_index(name).ends_with("/learning_rate")) continue;  // Keras 3 keeps it; the config has it
    const std::string slot = tower_slot_name(name, optimizer.name(), variables);
    if (slot.empty() && optimizer.name() == "Nadam") {
      // Nadam's u_product, an unnamed scalar in Keras ("variable", "Variable"): tower recomputes it.
      const std::string stripped = strip_index(name);
      const std::string last = stripped.substr(stripped.rfind('/') == std::string::npos ? 0 : stripped.rfind('/') + 1);
      if (last.starts_with("variable") || last.starts_with("Variable")) continue;
    }
    if (slot.empty())
      raise<ValueError>("optimizer weight \"{}\" matches no slot of {} for this model's variables", name,
                        optimizer.name());
    state.slots[slot] = group.dataset(name).read(DType::float32);
  }
  return state;
}

void write_optimizer_state(hdf5::Group& group, const optimizers::Optimizer& optimizer) {
  std::vector<std::string> names{"iteration:0"};
  group.write_dataset("iteration:0", Tensor::scalar(static_cast<double>(optimizer.iterations()), DType::int64));
  for (const auto& slot : optimizer.variables()) {
    names.push_back(slot->name());
    group.write_dataset(slot->name(), slot->value());
  }
  for (const auto& [name, value] : optimizer.pending_state()) {  // loaded, not yet used by a training step
    names.push_back(name);
    group.write_dataset(name, value);
  }
  group.write_string_array_attr("weight_names", names);
}

void save_model_hdf5(const Model& model, const std::string& path, const SaveModelOptions& options) {
  const std::string what = what_of("save", path);
  refuse_keras_archive_name(what, path);
  // A parallel wrapper writes the model it wraps, with its own compile state: the file the inner
  // model would write (its towers are a way to run it, not part of it).
  const Model& saved = model.wrapped_model() ? *model.wrapped_model() : model;
  const std::string model_config = model_to_config(saved).dump();
  const bool compiled = model.compiled();
  const std::string train_config = compiled ? training_config(model).dump() : "";
  if (!options.allow_non_finite) {
    std::vector<VariablePtr> variables = saved.weights();
    if (compiled && options.include_optimizer)
      for (const auto& slot : model.optimizer().variables()) variables.push_back(slot);
    refuse_non_finite(variables, what, fmt::format("save(\"{}\", {{.allow_non_finite = true}})", path));
  }
  hdf5::write_file_atomically(path, what, [&](hdf5::File& file) {
    file.write_string_attr("keras_version", kKerasVersion);
    file.write_string_attr("backend", kKerasBackend);
    file.write_string_attr("model_config", model_config);
    if (compiled) file.write_string_attr("training_config", train_config);
    hdf5::Group weights = file.create_group("model_weights");
    save_weights_to_group(weights, saved.layers());
    if (compiled && options.include_optimizer) {
      hdf5::Group group = file.create_group("optimizer_weights");
      write_optimizer_state(group, model.optimizer());
    }
  });
}

Model load_model_hdf5(const std::string& path, const CustomObjects& custom_objects, const LoadModelOptions& options) {
  CustomObjectScope scope(custom_objects);
  return load_model_hdf5(path, options);
}

Model load_model_hdf5(const std::string& path, const LoadModelOptions& options) {
  const std::string what = what_of("load_model", path);
  try {
    hdf5::File file = hdf5::File::open(path);
    if (!file.has_attr("model_config"))
      raise<FileError>("{}: the file has no model_config attribute: it holds weights only (save_weights); build "
                       "the model in code and call load_weights",
                       what);
    json config;
    try {
      config = layers::parse_json(file.read_string_attr("model_config"), what + ": model_config");
    } catch (const json::exception& e) {
      raise<FileError>("{}: model_config is not valid JSON: {}", what, e.what());
    }
    const json* tmpl = multi_gpu_template(config);
    std::optional<layers::KerasVersionScope> version;
    if (file.has_attr("keras_version")) version.emplace(file.read_string_attr("keras_version"));
    Model model = model_from_config(tmpl ? json{{"class_name", tmpl->at("class_name")}, {"config", tmpl->at("config")}}
                                         : config);
    if (!file.is_group("model_weights"))
      raise<FileError>("{}: the file has a model_config but no model_weights group; was it written completely?", what);
    const hdf5::Group weights = file.group("model_weights");
    // A multi_gpu_model file keeps the template's weights as one nested-model group.
    const std::vector<LayerPtr> layers = tmpl ? std::vector<LayerPtr>{model.share()} : model.layers();
    load_weights_from_group(weights, layers, {}, what);
    const hdf5::Object& attrs = weights.has_attr("backend") ? static_cast<const hdf5::Object&>(weights) : file;
    if (attrs.has_attr("backend") && attrs.read_string_attr("backend") == "theano") flip_conv_kernels(model.layers());

    if (options.compile && file.has_attr("training_config") && !tmpl) {
      json train_config;
      try {
        train_config = layers::parse_json(file.read_string_attr("training_config"), what + ": training_config");
      } catch (const json::exception& e) {
        raise<FileError>("{}: training_config is not valid JSON: {}", what, e.what());
      }
      try {  // the file's training configuration, named: the error is the file's, not the caller's code
        compile_from_config(model, train_config);
      } catch (const ValueError& e) {
        raise<ValueError>("{}: training_config: {}; to load the model without it, call load_model(path, "
                          "{{.compile = false}}) and compile it yourself", what, e.what());
      }
      if (file.is_group("optimizer_weights")) {
        try {  // as Keras: a model whose optimizer state cannot be placed still loads, with a warning
          auto state = read_optimizer_state(file.group("optimizer_weights"), model);
          model.optimizer().set_state(state.iterations, std::move(state.slots),
                                      what + ": its optimizer state was saved for another model; load it with "
                                             "{.compile = false} and compile afresh");
        } catch (const ChecksumError&) {  // damage, though, is an error
          throw;
        } catch (const Error& e) {
          std::cerr << "warning: " << what << ": the optimizer state was not restored (" << e.what()
                    << "); training continues with a fresh optimizer\n";
        }
      }
    }
    return model;
  } catch (const FileError& e) {
    const std::string message = e.what();
    if (message.rfind(what, 0) == 0) throw;
    if (dynamic_cast<const ChecksumError*>(&e)) throw ChecksumError(what + ": " + message);
    throw FileError(what + ": " + message);
  }
}

}  // namespace tower::io

// ---- Model (declared in layers/engine/model.h) -----------------------------------------------------------

namespace tower {

// In a multi-worker job only the chief writes (the others would race it for the same path).
void Model::save(const std::string& path, const SaveOptions& options) const {
  if (writes_files(*this)) io::save_model_hdf5(*this, path, options);
}


}  // namespace tower
