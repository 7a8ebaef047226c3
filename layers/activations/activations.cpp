// Activation functions by Keras name, composed from core ops with Keras's definitions (hard_sigmoid:
// Keras 2's, as tf.keras writes it; Keras 3's is hard_sigmoid_keras3).
#include "tower/layers/activations/activations.h"

#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower {

namespace {

using Activation = std::function<SymbolicTensor(const SymbolicTensor&)>;

// softplus(x) = max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x|. maximum() sends the
// gradient to its first argument on ties, which makes the derivative at 0 come out as 1/2.
SymbolicTensor softplus(const SymbolicTensor& x) {
  auto zero = ops::zeros_like(x);
  auto abs_x = ops::maximum(x, ops::negative(x));
  auto tail = ops::log(ops::add(ops::ones_like(x), ops::exp(ops::negative(abs_x))));
  return ops::add(ops::maximum(x, zero), tail);
}

// Keras's gelu (approximate=False, its default): 0.5 x (1 + erf(x / sqrt(2))).
SymbolicTensor gelu(const SymbolicTensor& x) {
  const auto cdf = ops::add(ops::ones_like(x), ops::erf(ops::scale(x, 0.70710678118654752440)));
  return ops::scale(ops::multiply(x, cdf), 0.5);
}

// clip(slope x + 0.5, 0, 1): Keras 2's hard_sigmoid (slope 0.2), Keras 3's (slope 1/6, relu6(x + 3) / 6).
SymbolicTensor clipped_line(const SymbolicTensor& x, double slope) {
  auto y = ops::add(ops::scale(x, slope), ops::fill_like(x, 0.5));
  return ops::minimum(ops::relu(y), ops::ones_like(x));
}
SymbolicTensor hard_sigmoid_keras3(const SymbolicTensor& x) { return clipped_line(x, 1.0 / 6.0); }

const std::map<std::string, Activation>& activations() {
  static const std::map<std::string, Activation> table{
      {"linear", [](const SymbolicTensor& x) { return x; }},
      {"relu", [](const SymbolicTensor& x) { return ops::relu(x); }},
      {"relu6", [](const SymbolicTensor& x) { return ops::minimum(ops::relu(x), ops::fill_like(x, 6.0)); }},
      {"sigmoid", [](const SymbolicTensor& x) { return ops::sigmoid(x); }},
      {"tanh", [](const SymbolicTensor& x) { return ops::tanh(x); }},
      {"softmax", [](const SymbolicTensor& x) { return ops::softmax(x, -1); }},
      {"log_softmax", [](const SymbolicTensor& x) { return ops::log_softmax(x, -1); }},
      {"elu", [](const SymbolicTensor& x) { return ops::elu(x, 1.0); }},
      // Keras's SELU constants (Klambauer et al.).
      {"selu",
       [](const SymbolicTensor& x) { return ops::scale(ops::elu(x, 1.67326324235437728481), 1.05070098735548049342); }},
      {"softplus", softplus},
      {"softsign", [](const SymbolicTensor& x) { return ops::divide(x, ops::add(ops::ones_like(x), ops::abs(x))); }},
      {"swish", [](const SymbolicTensor& x) { return ops::multiply(x, ops::sigmoid(x)); }},
      {"silu", [](const SymbolicTensor& x) { return ops::multiply(x, ops::sigmoid(x)); }},
      {"exponential", [](const SymbolicTensor& x) { return ops::exp(x); }},
      {"gelu", gelu},
      {"leaky_relu", [](const SymbolicTensor& x) { return ops::leaky_relu(x, 0.2); }},  // keras.activations default
      {"hard_sigmoid", [](const SymbolicTensor& x) { return clipped_line(x, 0.2); }},
      {"hard_sigmoid_keras3", hard_sigmoid_keras3},
      {"hard_silu", [](const SymbolicTensor& x) { return ops::multiply(x, hard_sigmoid_keras3(x)); }},
      {"hard_swish", [](const SymbolicTensor& x) { return ops::multiply(x, hard_sigmoid_keras3(x)); }},
  };
  return table;
}

const Activation& lookup(const std::string& name) {
  const auto& table = activations();
  auto it = table.find(name.empty() ? "linear" : name);
  if (it == table.end()) {
    std::string known;
    for (const auto& [key, fn] : table) known += (known.empty() ? "" : ", ") + key;
    raise<ValueError>("unknown activation \"{}\"; known: {} (or \"\" for linear)", name, known);
  }
  return it->second;
}

}  // namespace

SymbolicTensor apply_activation(const std::string& name, const SymbolicTensor& x) { return lookup(name)(x); }

SymbolicTensor apply_bias_and_activation(const std::string& name, const SymbolicTensor& x, const SymbolicTensor& bias) {
  if (!bias.defined()) return apply_activation(name, x);
  if (name == "relu") return ops::bias_add(x, bias, "relu");
  return apply_activation(name, ops::bias_add(x, bias));
}

void check_activation_name(const std::string& name) { lookup(name); }

std::string activation_from_config(const nlohmann::json& value) {
  if (value.is_null()) return "";
  std::string name;
  if (value.is_string()) {
    name = value.get<std::string>();
  } else if (value.is_object() && value.contains("config") && value["config"].is_string()) {
    name = value["config"].get<std::string>();  // Keras 3: {"class_name": "function", "config": "relu"}
  } else if (value.is_object() && value.contains("class_name") && value["class_name"].is_string()) {
    name = value["class_name"].get<std::string>();
  } else {
    raise<ValueError>("activation: expected a name, got {}", value.dump());
  }
  if (name == "softmax_v2") name = "softmax";  // tf.keras 1.x
  if (name == "linear") return "";
  check_activation_name(name);
  return name;
}

nlohmann::json activation_to_config(const std::string& name) { return name.empty() ? "linear" : name; }

}  // namespace tower
