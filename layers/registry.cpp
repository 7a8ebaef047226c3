// The layer registry: one line per layer class, Keras 1 aliases and argument translation; the user's
// classes (register_layer, CustomObjectScope).
#include "tower/layers/registry.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/layers/layers.h"

namespace tower::layers {

namespace {

// Keras class name -> factory. Adding a layer adds one line here.
const std::map<std::string, LayerFactory>& factories() {
  static const std::map<std::string, LayerFactory> table{
      {"Activation", &Activation::from_config},
      {"ActivityRegularization", &ActivityRegularization::from_config},
      {"Add", &Add::from_config},
      {"AdditiveAttention", &AdditiveAttention::from_config},
      {"AlphaDropout", &AlphaDropout::from_config},
      {"Attention", &Attention::from_config},
      {"Average", &Average::from_config},
      {"AveragePooling1D", &AveragePooling1D::from_config},
      {"AveragePooling2D", &AveragePooling2D::from_config},
      {"AveragePooling3D", &AveragePooling3D::from_config},
      {"BatchNormalization", &BatchNormalization::from_config},
      {"Bidirectional", &Bidirectional::from_config},
      {"CategoryEncoding", &CategoryEncoding::from_config},
      {"CenterCrop", &CenterCrop::from_config},
      {"Concatenate", &Concatenate::from_config},
      {"Conv1D", &Conv1D::from_config},
      {"Conv2D", &Conv2D::from_config},
      {"Conv2DTranspose", &Conv2DTranspose::from_config},
      {"Conv3D", &Conv3D::from_config},
      {"Conv3DTranspose", &Conv3DTranspose::from_config},
      {"ConvLSTM2D", &ConvLSTM2D::from_config},
      {"CuDNNGRU", &GRU::from_cudnn_config},
      {"CuDNNLSTM", &LSTM::from_cudnn_config},
      {"Cropping1D", &Cropping1D::from_config},
      {"Cropping2D", &Cropping2D::from_config},
      {"Cropping3D", &Cropping3D::from_config},
      {"DepthwiseConv2D", &DepthwiseConv2D::from_config},
      {"Dense", &Dense::from_config},
      {"Dot", &Dot::from_config},
      {"Dropout", &Dropout::from_config},
      {"ELU", &ELU::from_config},
      {"Embedding", &Embedding::from_config},
      {"Flatten", &Flatten::from_config},
      {"Functional", &Model::from_config},
      {"GRU", &GRU::from_config},
      {"GaussianDropout", &GaussianDropout::from_config},
      {"GaussianNoise", &GaussianNoise::from_config},
      {"GlobalAveragePooling1D", &GlobalAveragePooling1D::from_config},
      {"GlobalAveragePooling2D", &GlobalAveragePooling2D::from_config},
      {"GlobalAveragePooling3D", &GlobalAveragePooling3D::from_config},
      {"GlobalMaxPooling1D", &GlobalMaxPooling1D::from_config},
      {"GlobalMaxPooling2D", &GlobalMaxPooling2D::from_config},
      {"GlobalMaxPooling3D", &GlobalMaxPooling3D::from_config},
      {"Hashing", &Hashing::from_config},
      {"IntegerLookup", &IntegerLookup::from_config},
      {"InputLayer", &InputLayer::from_config},
      {"LayerNormalization", &LayerNormalization::from_config},
      {"LSTM", &LSTM::from_config},
      {"Lambda", &Lambda::from_config},
      {"LeakyReLU", &LeakyReLU::from_config},
      {"LocallyConnected1D", &LocallyConnected1D::from_config},
      {"LocallyConnected2D", &LocallyConnected2D::from_config},
      {"Masking", &Masking::from_config},
      {"MaxPooling1D", &MaxPooling1D::from_config},
      {"MaxPooling2D", &MaxPooling2D::from_config},
      {"MaxPooling3D", &MaxPooling3D::from_config},
      {"Maximum", &Maximum::from_config},
      {"Minimum", &Minimum::from_config},
      {"Model", &Model::from_config},
      {"MultiHeadAttention", &MultiHeadAttention::from_config},
      {"Multiply", &Multiply::from_config},
      {"Normalization", &Normalization::from_config},
      {"PReLU", &PReLU::from_config},
      {"Permute", &Permute::from_config},
      {"ReLU", &ReLU::from_config},
      {"RandomContrast", &RandomContrast::from_config},
      {"RandomCrop", &RandomCrop::from_config},
      {"RandomFlip", &RandomFlip::from_config},
      {"RandomRotation", &RandomRotation::from_config},
      {"RandomTranslation", &RandomTranslation::from_config},
      {"RandomZoom", &RandomZoom::from_config},
      {"RepeatVector", &RepeatVector::from_config},
      {"Rescaling", &Rescaling::from_config},
      {"Reshape", &Reshape::from_config},
      {"Resizing", &Resizing::from_config},
      {"SeparableConv2D", &SeparableConv2D::from_config},
      {"Sequential", &Sequential::from_config},
      {"SimpleRNN", &SimpleRNN::from_config},
      {"Softmax", &Softmax::from_config},
      {"SpatialDropout1D", &SpatialDropout1D::from_config},
      {"SpatialDropout2D", &SpatialDropout2D::from_config},
      {"SpatialDropout3D", &SpatialDropout3D::from_config},
      {"Subtract", &Subtract::from_config},
      {"ThresholdedReLU", &ThresholdedReLU::from_config},
      {"TimeDistributed", &TimeDistributed::from_config},
      {"UpSampling1D", &UpSampling1D::from_config},
      {"UpSampling2D", &UpSampling2D::from_config},
      {"UpSampling3D", &UpSampling3D::from_config},
      {"ZeroPadding1D", &ZeroPadding1D::from_config},
      {"ZeroPadding2D", &ZeroPadding2D::from_config},
      {"ZeroPadding3D", &ZeroPadding3D::from_config},
  };
  return table;
}

// Other names Keras wrote for the same classes (Keras 1, and tf.keras's short aliases).
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> table{
      {"Convolution2D", "Conv2D"},
      {"Convolution2DTranspose", "Conv2DTranspose"},
      {"Deconvolution2D", "Conv2DTranspose"},
      {"SeparableConvolution2D", "SeparableConv2D"},
      {"MaxPool2D", "MaxPooling2D"},
      {"AvgPool2D", "AveragePooling2D"},
      {"GlobalAvgPool2D", "GlobalAveragePooling2D"},
      {"GlobalMaxPool2D", "GlobalMaxPooling2D"},
      {"Convolution1D", "Conv1D"},
      {"MaxPool1D", "MaxPooling1D"},
      {"AvgPool1D", "AveragePooling1D"},
      {"GlobalAvgPool1D", "GlobalAveragePooling1D"},
      {"GlobalMaxPool1D", "GlobalMaxPooling1D"},
      {"Convolution3D", "Conv3D"},
      {"Convolution3DTranspose", "Conv3DTranspose"},
      {"Deconvolution3D", "Conv3DTranspose"},
      {"MaxPool3D", "MaxPooling3D"},
      {"AvgPool3D", "AveragePooling3D"},
      {"GlobalAvgPool3D", "GlobalAveragePooling3D"},
      {"GlobalMaxPool3D", "GlobalMaxPooling3D"},
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
  } else if (class_name == "LSTM" || class_name == "GRU" || class_name == "SimpleRNN") {
    rename(config, "output_dim", "units");
    rename(config, "inner_activation", "recurrent_activation");
    rename(config, "inner_init", "recurrent_initializer");
    rename(config, "U_regularizer", "recurrent_regularizer");
    rename(config, "U_constraint", "recurrent_constraint");
    rename(config, "dropout_W", "dropout");
    rename(config, "dropout_U", "recurrent_dropout");
    if (config.contains("forget_bias_init")) {  // Keras 1 started the forget bias at one ("one") or not
      if (!config.contains("unit_forget_bias")) config["unit_forget_bias"] = config["forget_bias_init"] == "one";
      config.erase("forget_bias_init");
    }
    config.erase("consume_less");  // how Keras 1 split the work; no effect on the numbers
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
  // Keras 1's Convolution3D(nb_filter, kernel_dim1, kernel_dim2, kernel_dim3).
  if (config.contains("kernel_dim1") && config.contains("kernel_dim2") && config.contains("kernel_dim3") &&
      !config.contains("kernel_size")) {
    config["kernel_size"] = {config["kernel_dim1"], config["kernel_dim2"], config["kernel_dim3"]};
    for (const char* key : {"kernel_dim1", "kernel_dim2", "kernel_dim3"}) config.erase(key);
  }
  rename(config, "border_mode", "padding");
  rename(config, "subsample", "strides");
  if (config.contains("dim_ordering")) {
    // "th" is Theano's (channels, rows, cols), whose Keras 1 kernels are stored (filters, channels, rows,
    // cols) as well; "default" follows keras.json, tf for TensorFlow users.
    if (config["dim_ordering"] == "th")
      raise<ValueError>("{} \"{}\": Keras 1's dim_ordering \"th\" (channels_first, with kernels stored as (filters, "
                        "channels, rows, cols)) is not supported; save the model from Keras 2 or later, where "
                        "data_format=\"channels_first\" loads",
                        class_name, config.value("name", std::string("?")));
    config["data_format"] = "channels_last";
    config.erase("dim_ordering");
  }
  if (class_name == "Dropout") rename(config, "p", "rate");
  // Keras 1's 1-D layers: Convolution1D(filter_length, subsample_length), pooling (pool_length, stride).
  if (class_name == "SpatialDropout1D") rename(config, "p", "rate");
  if (class_name == "SpatialDropout2D" || class_name == "SpatialDropout3D" || class_name == "GaussianDropout")
    rename(config, "p", "rate");
  if (class_name == "GaussianNoise") rename(config, "sigma", "stddev");
  if (class_name == "Conv1D") rename(config, "filter_length", "kernel_size");
  if (class_name == "Conv1D") rename(config, "subsample_length", "strides");
  if (class_name == "MaxPooling1D" || class_name == "AveragePooling1D") rename(config, "pool_length", "pool_size");
  if (class_name == "MaxPooling1D" || class_name == "AveragePooling1D") rename(config, "stride", "strides");
  if (class_name == "UpSampling1D") rename(config, "length", "size");
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

// ---- the user's classes ----------------------------------------------------------------------------

// The CustomObjectScopes alive on this thread, innermost last.
std::vector<const CustomObjects*>& scopes() {
  thread_local std::vector<const CustomObjects*> stack;
  return stack;
}

template <typename Map>
const typename Map::mapped_type* find_scoped(Map CustomObjects::*member, const std::string& name) {
  const auto& stack = scopes();
  for (auto it = stack.rbegin(); it != stack.rend(); ++it)
    if (auto found = ((*it)->*member).find(name); found != ((*it)->*member).end()) return &found->second;
  return nullptr;
}

std::mutex registered_mutex;
std::map<std::string, LayerFactory>& registered() {
  static std::map<std::string, LayerFactory> table;
  return table;
}

// A user's layer class for this config: custom_objects in scope, then registrations; null if none.
LayerFactory user_factory(const std::string& class_name, const nlohmann::json& layer) {
  std::vector<std::string> names{class_name};
  // Keras 3 writes a registered class's "registered_name" ("Custom>MyLayer") beside its class_name.
  if (layer.contains("registered_name") && layer["registered_name"].is_string())
    names.push_back(layer["registered_name"].get<std::string>());
  for (const auto& n : names)
    if (const auto* f = find_scoped(&CustomObjects::layers, n)) return *f;
  std::lock_guard lock(registered_mutex);
  for (const auto& n : names)
    if (auto it = registered().find(n); it != registered().end()) return it->second;
  return nullptr;
}

LayerPtr build_user_layer(const LayerFactory& factory, const std::string& class_name, const std::string& name,
                          const nlohmann::json& config) {
  LayerPtr layer = factory(config);
  if (!layer)
    raise<ValueError>("the factory given for layer class \"{}\" (layer \"{}\") returned no layer", class_name, name);
  return layer;
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
  if (const auto* scoped = find_scoped(&CustomObjects::layers, class_name))  // wins over tower's, as in Keras
    return build_user_layer(*scoped, class_name, name, config);

  if (config.is_object()) {
    if (class_name == "Merge") class_name = merge_class(config, name);
    if (auto alias = aliases().find(class_name); alias != aliases().end()) class_name = alias->second;
    translate_keras1(class_name, config);
  }
  auto it = factories().find(class_name);
  if (it != factories().end()) {
    try {
      return it->second(config);
    } catch (const nlohmann::json::exception& e) {  // a field of a type or range its reader did not expect
      raise<ValueError>("layer config of {}{}: a field has the wrong type or an out-of-range value ({}); fix the "
                        "config (Keras's get_config() of this layer shows the expected fields)",
                        class_name, name.empty() ? "" : " \"" + name + "\"", e.what());
    }
  }
  if (LayerFactory factory = user_factory(class_name, layer))  // the config as written: no Keras 1 renames
    return build_user_layer(factory, class_name, name, layer["config"]);
  std::string supported;
  for (const auto& n : registered_layer_names()) supported += (supported.empty() ? "" : ", ") + n;
  for (const auto& n : custom_layer_names()) supported += ", " + n + " (registered)";
  raise<NotFoundError>(
      "unknown layer class \"{}\" (layer \"{}\"): tower cannot build it. If it is your own layer class, "
      "give tower its factory (a function from the layer's config JSON to a LayerPtr, like Dense::from_config): "
      "pass it as custom_objects, models::load_model(path, {{.layers = {{{{\"{}\", factory}}}}}}) or "
      "io::model_from_json(json, custom_objects), or register it once with layers::register_layer(\"{}\", "
      "factory). Supported classes: {}",
      class_name, name, class_name, class_name, supported);
}

std::vector<std::string> registered_layer_names() {
  std::vector<std::string> names;
  for (const auto& [n, f] : factories()) names.push_back(n);
  for (const auto& [n, target] : aliases()) names.push_back(n);
  names.push_back("Merge");
  std::sort(names.begin(), names.end());
  return names;
}

void register_layer(const std::string& class_name, LayerFactory factory) {
  if (class_name.empty()) raise<ValueError>("register_layer: the class name is empty");
  if (!factory) raise<ValueError>("register_layer(\"{}\"): the factory is empty", class_name);
  const auto builtin = registered_layer_names();
  if (std::binary_search(builtin.begin(), builtin.end(), class_name))
    raise<ValueError>("register_layer(\"{}\"): {} is one of tower's own layer classes; register your class under "
                      "another name, or pass it in custom_objects to replace {} for one load",
                      class_name, class_name, class_name);
  std::lock_guard lock(registered_mutex);
  if (!registered().emplace(class_name, std::move(factory)).second)
    raise<ValueError>("register_layer(\"{}\"): a layer class of that name is already registered", class_name);
}

std::vector<std::string> custom_layer_names() {
  std::lock_guard lock(registered_mutex);
  std::vector<std::string> names;
  for (const auto& [n, f] : registered()) names.push_back(n);
  return names;
}

}  // namespace tower::layers

namespace tower {

CustomObjectScope::CustomObjectScope(CustomObjects objects) : objects_(std::move(objects)) {
  layers::scopes().push_back(&objects_);
}

// Scopes are objects with automatic lifetime on one thread, so they end in the reverse order.
CustomObjectScope::~CustomObjectScope() { layers::scopes().pop_back(); }

namespace internal {

const losses::Loss::Function* scoped_custom_loss(const std::string& name) {
  return layers::find_scoped(&CustomObjects::losses, name);
}

const metrics::Metric::Function* scoped_custom_metric(const std::string& name) {
  return layers::find_scoped(&CustomObjects::metrics, name);
}

}  // namespace internal
}  // namespace tower
