// Keras's model_config JSON: a model's architecture, written as tf.keras 2 does and read from every
// Keras version (Keras 1.2, Keras 2.0-2.3, tf.keras 2.x, Keras 3's legacy .h5 writer).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tower/layers/engine/model.h"
#include "tower/layers/registry.h"

namespace tower::io {

// {"class_name": "Sequential"|"Functional", "config": {...}} in tf.keras 2.x's format (Sequential:
// {"name", "layers": [InputLayer first, ...]}; Functional: name, layers with legacy inbound_nodes
// [[["input_1", 0, 0, {}]]], input_layers, output_layers). A nested model's calls are numbered from
// 1, as tf.keras numbers them (its node 0 is the one linking its own inputs and outputs).
nlohmann::json model_to_config(const Model& model);

// Rebuilds the architecture: new layers with the config's names, weights freshly initialised and
// built when the input shapes are known. Accepts Sequential with a list config (Keras <= 2.2.2) or a
// dict config, with or without an explicit InputLayer / batch_input_shape / Keras 3 batch_shape;
// Functional as "Model" or "Functional"; inbound_nodes in the legacy list form (Keras 1's three-entry
// [name, node, tensor] too) and Keras 3's {"args": [{"class_name": "__keras_tensor__", ...}],
// "kwargs": {}} form; nested models; shared layers; several inputs and outputs. A returned
// Sequential keeps its identity (class_name() "Sequential", layers() without the InputLayer). A
// Sequential config with no input shape at all throws ValueError: layers::layer_from_config gives a
// Sequential that builds on its first data instead.
// Errors (ValueError, NotFoundError for unknown classes) name the layer and the field.
Model model_from_config(const nlohmann::json& config);
// The same, with the user's layer classes that the config names (Keras's custom_objects; they take
// precedence over tower's classes and registrations for this call). Also through CustomObjectScope.
Model model_from_config(const nlohmann::json& config, const CustomObjects& custom_objects);

// model_to_config plus "keras_version" and "backend", as Keras's model.to_json().
std::string model_to_json(const Model& model);
// Parses and rebuilds; malformed JSON throws ValueError naming the byte position.
Model model_from_json(const std::string& json);
// keras.models.model_from_json(json, custom_objects).
Model model_from_json(const std::string& json, const CustomObjects& custom_objects);

}  // namespace tower::io
