// DTypePolicy: Keras's policy names, their configs, and the global policy.
#include "tower/layers/dtype_policy.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/layers/layer.h"

namespace tower {

namespace {

// (compute, variable) of a policy name; nullopt for names Keras has no float policy for.
std::optional<std::pair<DType, DType>> dtypes_of(const std::string& name) {
  if (name == "float32") return std::pair{DType::float32, DType::float32};
  if (name == "float64") return std::pair{DType::float64, DType::float64};
  if (name == "float16") return std::pair{DType::float16, DType::float16};
  if (name == "bfloat16") return std::pair{DType::bfloat16, DType::bfloat16};
  if (name == "mixed_float16") return std::pair{DType::float16, DType::float32};
  if (name == "mixed_bfloat16") return std::pair{DType::bfloat16, DType::float32};
  return std::nullopt;
}

thread_local std::optional<DTypePolicy> t_global_policy;

}  // namespace

DTypePolicy::DTypePolicy() : DTypePolicy(floatx()) {}

DTypePolicy::DTypePolicy(const char* name) : DTypePolicy(std::string(name)) {}

DTypePolicy::DTypePolicy(const std::string& name) : name_(name == "double" ? "float64" : name) {
  if (name_ == "half") name_ = "float16";
  const auto dtypes = dtypes_of(name_);
  if (!dtypes)
    raise<ValueError>("dtype policy \"{}\" is not supported; use \"float32\", \"float64\", \"mixed_float16\", "
                      "\"mixed_bfloat16\", \"float16\" or \"bfloat16\" (quantized policies such as int8 are not "
                      "supported)", name);
  compute_dtype_ = dtypes->first;
  variable_dtype_ = dtypes->second;
}

DTypePolicy::DTypePolicy(DType dtype) {
  if (!is_floating(dtype))
    raise<ValueError>("dtype policy: {} is not a float dtype; a layer computes in float32, float64, float16 or "
                      "bfloat16", dtype_name(dtype));
  name_ = std::string(dtype_name(dtype));
  compute_dtype_ = variable_dtype_ = dtype;
}

nlohmann::json DTypePolicy::to_config() const {
  if (!is_mixed()) return name_;
  return {{"class_name", "Policy"}, {"config", {{"name", name_}}}};
}

DTypePolicy DTypePolicy::from_config(const nlohmann::json& config) {
  if (config.is_null()) return DTypePolicy();
  if (config.is_string()) return DTypePolicy(config.get<std::string>());
  if (config.is_object()) {
    // tf.keras 2: {"class_name": "Policy", "config": {"name": ...}}; Keras 3: {"module": "keras",
    // "class_name": "DTypePolicy" or "FloatDTypePolicy", "config": {"name": ...}}; a bare {"name": ...}.
    const std::string cls = config.value("class_name", std::string("Policy"));
    if (cls.find("Quantiz") != std::string::npos)
      raise<ValueError>("dtype policy {} is not supported: tower has no quantized layers", cls);
    if (config.contains("config") && config["config"].contains("name")) return DTypePolicy(config["config"]["name"].get<std::string>());
    if (config.contains("name")) return DTypePolicy(config["name"].get<std::string>());
  }
  raise<ValueError>("dtype policy: cannot read {}; expected a name such as \"mixed_float16\" or {{\"class_name\": "
                    "\"Policy\", \"config\": {{\"name\": ...}}}}", config.dump());
}

namespace mixed_precision {

void set_global_policy(const DTypePolicy& policy) { t_global_policy = policy; }

DTypePolicy global_policy() { return t_global_policy ? *t_global_policy : DTypePolicy(floatx()); }

}  // namespace mixed_precision

}  // namespace tower
