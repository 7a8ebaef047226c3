// The name->factory registry: a Keras layer config ({"class_name": ..., "config": ...}) -> a new layer.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tower/layers/layer.h"

namespace tower::layers {

// A layer class's from_config: its "config" object -> a new, unbuilt layer.
using LayerFactory = LayerPtr (*)(const nlohmann::json& config);

// {"class_name": ..., "config": ...} of any supported Keras version (Keras 1.2 to Keras 3's legacy
// .h5; "module"/"registered_name" are ignored) -> a new (unbuilt) layer; models (Sequential,
// Functional, Model) come back built. An unknown class throws NotFoundError naming the class and the
// layer's name and listing what is supported. Keras 1 class names (Convolution2D, Merge, ...) are
// aliases, and Keras 1 argument names (output_dim, init, W_regularizer, nb_filter, border_mode,
// subsample, dim_ordering, p, ...) are translated to Keras 2's.
LayerPtr layer_from_config(const nlohmann::json& layer);

// The class names layer_from_config accepts (aliases included), sorted.
std::vector<std::string> registered_layer_names();

}  // namespace tower::layers
