// Weight constraints: Keras's MaxNorm, NonNeg, UnitNorm and MinMaxNorm, their graphs and configs.
#include "tower/layers/constraints.h"

#include <cctype>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"

namespace tower {

namespace {
constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()

// Lower case without underscores: "MaxNorm", "max_norm" and "maxnorm" all give "maxnorm".
std::string key_of(const std::string& name) {
  std::string key;
  for (char c : name)
    if (c != '_') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}
}  // namespace

std::string Constraint::class_name() const {
  switch (kind) {
    case Kind::max_norm: return "MaxNorm";
    case Kind::non_neg: return "NonNeg";
    case Kind::unit_norm: return "UnitNorm";
    case Kind::min_max_norm: return "MinMaxNorm";
    case Kind::none: break;
  }
  return "";
}

SymbolicTensor Constraint::operator()(const SymbolicTensor& w) const {
  if (kind == Kind::none) return w;
  if (kind == Kind::non_neg) return ops::multiply(w, ops::greater_equal(w, ops::zeros_like(w)));
  for (auto a : axis)
    if (a < -w.rank() || a >= w.rank())
      raise<ValueError>("{} constraint: axis {} is out of range for a weight of shape {}", class_name(), a,
                        w.shape().to_string());
  const SymbolicTensor norms = ops::sqrt(ops::reduce_sum(ops::square(w), axis, /*keepdims=*/true));
  const SymbolicTensor denominator = ops::add(norms, ops::fill_like(norms, kEpsilon));
  if (kind == Kind::unit_norm) return ops::divide(w, denominator);
  const double low = kind == Kind::max_norm ? 0.0 : min_value;
  SymbolicTensor desired =
      ops::minimum(ops::maximum(norms, ops::fill_like(norms, low)), ops::fill_like(norms, max_value));
  if (kind == Kind::min_max_norm && rate != 1.0)
    desired = ops::add(ops::scale(desired, rate), ops::scale(norms, 1.0 - rate));
  return ops::multiply(w, ops::divide(desired, denominator));
}

nlohmann::json Constraint::get_config() const {
  if (!defined()) return nullptr;
  nlohmann::json axis_json = axis.size() == 1 ? nlohmann::json(axis[0]) : nlohmann::json(axis);
  nlohmann::json config = nlohmann::json::object();
  switch (kind) {
    case Kind::max_norm: config = {{"max_value", max_value}, {"axis", axis_json}}; break;
    case Kind::unit_norm: config = {{"axis", axis_json}}; break;
    case Kind::min_max_norm:
      config = {{"min_value", min_value}, {"max_value", max_value}, {"rate", rate}, {"axis", axis_json}};
      break;
    default: break;
  }
  return {{"module", "keras.constraints"}, {"class_name", class_name()}, {"config", config},
          {"registered_name", nullptr}};
}

Constraint Constraint::from_config(const nlohmann::json& value) {
  if (value.is_null()) return {};
  std::string name;
  nlohmann::json config = nlohmann::json::object();
  if (value.is_string()) {
    name = value.get<std::string>();
  } else if (value.is_object() && value.contains("class_name") && value["class_name"].is_string()) {
    name = value["class_name"].get<std::string>();
    if (value.contains("config") && value["config"].is_object()) config = value["config"];
  } else {
    raise<ValueError>("constraint: expected null, a name or {{\"class_name\", \"config\"}}, got {}", value.dump());
  }
  auto number = [&](const char* key, double fallback) {
    if (!config.contains(key) || config[key].is_null()) return fallback;
    if (!config[key].is_number())
      raise<ValueError>("constraint {}: \"{}\" must be a number, got {}", name, key, config[key].dump());
    return config[key].get<double>();
  };
  auto axes = [&]() -> std::vector<std::int64_t> {
    if (!config.contains("axis") || config["axis"].is_null()) return {0};
    const auto& a = config["axis"];
    if (a.is_number_integer()) return {a.get<std::int64_t>()};
    if (!a.is_array() || a.empty())
      raise<ValueError>("constraint {}: \"axis\" must be an integer or a list of integers, got {}", name, a.dump());
    std::vector<std::int64_t> out;
    for (const auto& e : a) {
      if (!e.is_number_integer())
        raise<ValueError>("constraint {}: \"axis\" must be an integer or a list of integers, got {}", name, a.dump());
      out.push_back(e.get<std::int64_t>());
    }
    return out;
  };
  const std::string key = key_of(name);
  if (key == "maxnorm") return constraints::max_norm(number("max_value", 2.0), axes());
  if (key == "nonneg") return constraints::non_neg();
  if (key == "unitnorm") return constraints::unit_norm(axes());
  if (key == "minmaxnorm")
    return constraints::min_max_norm(number("min_value", 0.0), number("max_value", 1.0), number("rate", 1.0), axes());
  raise<ValueError>("constraint \"{}\" is not supported; supported: max_norm (MaxNorm), non_neg (NonNeg), "
                    "unit_norm (UnitNorm), min_max_norm (MinMaxNorm)",
                    name);
}

Constraint take_constraint(nlohmann::json& config, const char* key, const char* where) {
  if (!config.is_object() || !config.contains(key)) return {};
  try {
    Constraint c = Constraint::from_config(config[key]);
    config[key] = nullptr;
    return c;
  } catch (const ValueError& e) {
    const std::string name = config.contains("name") && config["name"].is_string() ? config["name"].get<std::string>() : "";
    raise<ValueError>("{} \"{}\": field \"{}\": {}", where, name, key, e.what());
  }
}

namespace {
struct ConstraintTable {
  std::mutex mutex;
  // The weak pointer tells a live variable from a freed one whose address was reused.
  std::map<const Variable*, std::pair<std::weak_ptr<Variable>, Constraint>> entries;
};
ConstraintTable& table() {
  static ConstraintTable t;
  return t;
}
}  // namespace

void set_constraint(const VariablePtr& variable, const Constraint& constraint) {
  if (!variable) return;
  auto& t = table();
  std::lock_guard lock(t.mutex);
  for (auto it = t.entries.begin(); it != t.entries.end();)  // drop the freed variables' entries
    it = it->second.first.expired() ? t.entries.erase(it) : std::next(it);
  if (constraint.defined()) t.entries[variable.get()] = {variable, constraint};
  else t.entries.erase(variable.get());
}

Constraint constraint_of(const VariablePtr& variable) {
  if (!variable) return {};
  auto& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.entries.find(variable.get());
  if (it == t.entries.end() || it->second.first.lock() != variable) return {};
  return it->second.second;
}

}  // namespace tower
