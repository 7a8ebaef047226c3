// The layer registry: one line per layer class, Keras 1 aliases and argument translation.
#include "tower/layers/registry.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/layers/layers.h"

namespace tower::layers {

namespace {

// Keras class name -> factory. Adding a layer adds one line here.
const std::map<std::string, LayerFactory>& factories() {
  static const std::map<std::string, LayerFactory> table{
      {"Activation", &Activation::from_config},
      {"Add", &Add::from_config},
      {"Average", &Average::from_config},
      {"AveragePooling2D", &AveragePooling2D::from_config},
      {"BatchNormalization", &BatchNormalization::from_config},
      {"Concatenate", &Concatenate::from_config},
      {"Conv2D", &Conv2D::from_config},
      {"Dense", &Dense::from_config},
      {"Dropout", &Dropout::from_config},
      {"ELU", &ELU::from_config},
      {"Embedding", &Embedding::from_config},
      {"Flatten", &Flatten::from_config},
      {"Functional", &Model::from_config},
      {"GlobalAveragePooling2D", &GlobalAveragePooling2D::from_config},
      {"GlobalMaxPooling2D", &GlobalMaxPooling2D::from_config},
      {"InputLayer", &InputLayer::from_config},
      {"Lambda", &Lambda::from_config},
      {"LeakyReLU", &LeakyReLU::from_config},
      {"MaxPooling2D", &MaxPooling2D::from_config},
      {"Maximum", &Maximum::from_config},
      {"Model", &Model::from_config},
      {"Multiply", &Multiply::from_config},
      {"ReLU", &ReLU::from_config},
      {"Reshape", &Reshape::from_config},
      {"Sequential", &Sequential::from_config},
      {"Softmax", &Softmax::from_config},
      {"Subtract", &Subtract::from_config},
      {"ZeroPadding2D", &ZeroPadding2D::from_config},
  };
  return table;
}

// Other names Keras wrote for the same classes (Keras 1, and tf.keras's short aliases).
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> table{
      {"Convolution2D", "Conv2D"},
      {"MaxPool2D", "MaxPooling2D"},
      {"AvgPool2D", "AveragePooling2D"},
      {"GlobalAvgPool2D", "GlobalAveragePooling2D"},
      {"GlobalMaxPool2D", "GlobalMaxPooling2D"},
  };
  return table;
}

void rename(nlohmann::json& config, const char* from, const char* to) {
  if (!config.contains(from)) return;
  if (!config.contains(to)) config[to] = config[from];
  config.erase(from);
}

// Keras 1.2's argument names -> Keras 2's, for the keys present (Keras 2 configs pass unchanged).
void translate_keras1(const std::string& class_name, nlohmann::json& config) {
  if (class_name == "Embedding") {
    rename(config, "init", "embeddings_initializer");
    rename(config, "W_regularizer", "embeddings_regularizer");
    rename(config, "W_constraint", "embeddings_constraint");
  } else if (class_name == "Dense") {
    rename(config, "output_dim", "units");
  }
  rename(config, "init", "kernel_initializer");
  rename(config, "W_regularizer", "kernel_regularizer");
  rename(config, "b_regularizer", "bias_regularizer");
  rename(config, "W_constraint", "kernel_constraint");
  rename(config, "b_constraint", "bias_constraint");
  if (config.contains("bias") && config["bias"].is_boolean()) rename(config, "bias", "use_bias");
  rename(config, "nb_filter", "filters");
  if (config.contains("nb_row") && config.contains("nb_col") && !config.contains("kernel_size")) {
    config["kernel_size"] = {config["nb_row"], config["nb_col"]};
    config.erase("nb_row");
    config.erase("nb_col");
  }
  rename(config, "border_mode", "padding");
  rename(config, "subsample", "strides");
  if (config.contains("dim_ordering")) {
    const auto& d = config["dim_ordering"];
    // "th" is Theano's (channels, rows, cols); "default" follows keras.json, tf for TensorFlow users.
    config["data_format"] = d == "th" ? "channels_first" : "channels_last";
    config.erase("dim_ordering");
  }
  if (class_name == "Dropout") rename(config, "p", "rate");
}

// Keras 1's Merge layer -> the Keras 2 merge class of its mode.
std::string merge_class(nlohmann::json& config, const std::string& layer_name) {
  std::string mode = config.contains("mode") && config["mode"].is_string() ? config["mode"].get<std::string>() : "sum";
  static const std::map<std::string, std::string> modes{
      {"sum", "Add"}, {"mul", "Multiply"}, {"ave", "Average"}, {"max", "Maximum"}, {"concat", "Concatenate"}};
  auto it = modes.find(mode);
  if (it == modes.end())
    raise<ValueError>("Merge \"{}\": Keras 1 merge mode \"{}\" is not supported; supported modes: sum, mul, ave, max, "
                      "concat",
                      layer_name, mode);
  if (mode == "concat") rename(config, "concat_axis", "axis");
  for (const char* key : {"mode", "mode_type", "concat_axis", "dot_axes", "output_shape", "output_shape_type",
                          "output_mask", "output_mask_type", "arguments"})
    config.erase(key);
  return it->second;
}

}  // namespace

LayerPtr layer_from_config(const nlohmann::json& layer) {
  if (!layer.is_object())
    raise<ValueError>("layer config: expected {{\"class_name\": ..., \"config\": {{...}}}}, got {}",
                      layer.dump().substr(0, 200));
  std::string name = layer.contains("name") && layer["name"].is_string() ? layer["name"].get<std::string>() : "";
  if (!layer.contains("class_name") || !layer["class_name"].is_string())
    raise<ValueError>("layer config{}: missing \"class_name\" (a string such as \"Dense\"); got keys {}",
                      name.empty() ? "" : " of \"" + name + "\"", layer.dump().substr(0, 200));
  std::string class_name = layer["class_name"].get<std::string>();
  if (!layer.contains("config"))
    raise<ValueError>("layer config of {}{}: missing \"config\"", class_name, name.empty() ? "" : " \"" + name + "\"");
  nlohmann::json config = layer["config"];
  if (name.empty() && config.is_object() && config.contains("name") && config["name"].is_string())
    name = config["name"].get<std::string>();

  if (config.is_object()) {
    if (class_name == "Merge") class_name = merge_class(config, name);
    if (auto alias = aliases().find(class_name); alias != aliases().end()) class_name = alias->second;
    translate_keras1(class_name, config);
  }
  auto it = factories().find(class_name);
  if (it == factories().end()) {
    std::string supported;
    for (const auto& n : registered_layer_names()) supported += (supported.empty() ? "" : ", ") + n;
    raise<NotFoundError>("unknown layer class \"{}\" (layer \"{}\"): tower cannot build it; supported classes: {}",
                         class_name, name, supported);
  }
  return it->second(config);
}

std::vector<std::string> registered_layer_names() {
  std::vector<std::string> names;
  for (const auto& [n, f] : factories()) names.push_back(n);
  for (const auto& [n, target] : aliases()) names.push_back(n);
  names.push_back("Merge");
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tower::layers
