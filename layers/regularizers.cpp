// Regularizer configs: Keras's L1, L2 and L1L2 in every version's spelling.
#include "tower/layers/regularizers.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/layers/layer_config.h"

namespace tower {

nlohmann::json Regularizer::get_config() const {
  if (!defined()) return nullptr;
  nlohmann::json config;
  std::string class_name;
  if (l2 == 0.0) {
    class_name = "L1";
    config = {{"l1", layers::float32_value(l1)}};
  } else if (l1 == 0.0) {
    class_name = "L2";
    config = {{"l2", layers::float32_value(l2)}};
  } else {
    class_name = "L1L2";
    config = {{"l1", layers::float32_value(l1)}, {"l2", layers::float32_value(l2)}};
  }
  return {{"module", "keras.regularizers"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
}

Regularizer Regularizer::from_config(const nlohmann::json& value) {
  if (value.is_null()) return {};
  auto factor = [&](const nlohmann::json& config, const char* key) {
    if (!config.is_object() || !config.contains(key) || config[key].is_null()) return 0.0;
    if (!config[key].is_number())
      raise<ValueError>("regularizer {}: \"{}\" must be a number, got {}", value.dump(), key, config[key].dump());
    return config[key].get<double>();
  };
  if (value.is_string()) {  // "l1", "l2", "l1_l2": Keras's defaults
    const std::string name = value.get<std::string>();
    if (name == "l1" || name == "L1") return regularizers::l1();
    if (name == "l2" || name == "L2") return regularizers::l2();
    if (name == "l1_l2" || name == "L1L2") return regularizers::l1_l2();
    raise<ValueError>("regularizer \"{}\" is not supported; supported: l1, l2, l1_l2", name);
  }
  if (!value.is_object()) raise<ValueError>("regularizer: expected null, a name or an object, got {}", value.dump());
  if (!value.contains("class_name") && value.contains("name")) {  // Keras 1
    const std::string name = value["name"].is_string() ? value["name"].get<std::string>() : "";
    if (name != "WeightRegularizer")
      raise<ValueError>("Keras 1 regularizer \"{}\" is not supported; supported: WeightRegularizer (l1, l2)", name);
    return {.l1 = factor(value, "l1"), .l2 = factor(value, "l2")};
  }
  const std::string class_name = value.value("class_name", "");
  const nlohmann::json config = value.contains("config") ? value["config"] : nlohmann::json::object();
  if (class_name == "L1" || class_name == "l1") return {.l1 = factor(config, "l1")};
  if (class_name == "L2" || class_name == "l2") return {.l2 = factor(config, "l2")};
  if (class_name == "L1L2" || class_name == "l1_l2") return {.l1 = factor(config, "l1"), .l2 = factor(config, "l2")};
  raise<ValueError>("regularizer \"{}\" is not supported; supported: L1, L2, L1L2", class_name);
}

}  // namespace tower
