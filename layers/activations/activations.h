// Activation functions by Keras name, for layers' `activation` argument and the Activation layer.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tower/core/graph.h"

namespace tower {

// name: "" or "linear" (identity), "relu", "relu6", "sigmoid", "tanh", "softmax" (last axis),
// "log_softmax", "elu", "selu", "softplus", "softsign", "swish"/"silu", "exponential", "leaky_relu"
// (negative slope 0.2), "hard_sigmoid" (Keras 2's clip(0.2 x + 0.5, 0, 1), the one tf.keras reads
// from tower's files), "hard_sigmoid_keras3" (Keras 3's relu6(x + 3) / 6, which Keras 3 files mean by
// "hard_sigmoid": ConfigReader::activation maps it), "hard_silu"/"hard_swish" (x hard_sigmoid_keras3(x),
// Keras 3 only), "gelu" (exact, Keras's default). An unknown name throws ValueError listing the known ones.
SymbolicTensor apply_activation(const std::string& name, const SymbolicTensor& x);
// A layer's bias (undefined: none) and activation on x (..., units): bias_add then apply_activation,
// with "relu" fused into the bias_add (one pass over x instead of two; the same numbers).
SymbolicTensor apply_bias_and_activation(const std::string& name, const SymbolicTensor& x, const SymbolicTensor& bias);
// Throws the same ValueError now (layers call it in their constructor to fail early).
void check_activation_name(const std::string& name);

// A serialized activation of any Keras version -> tower's name: "relu" (Keras 1 to Keras 3's legacy
// .h5), Keras 3's {"class_name": "function", "config": "relu", ...}, tf.keras 1's "softmax_v2";
// "linear" -> "". Throws ValueError for names tower does not implement.
std::string activation_from_config(const nlohmann::json& value);
// What tf.keras writes for `name` ("" -> "linear").
nlohmann::json activation_to_config(const std::string& name);

}  // namespace tower
