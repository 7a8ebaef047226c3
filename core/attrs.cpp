// Attrs getters and printing.
#include "tower/core/attrs.h"

#include "tower/core/error.h"

namespace tower {

Attrs& Attrs::set(const std::string& key, AttrValue value) {
  values_[key] = std::move(value);
  return *this;
}

const AttrValue& Attrs::at(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) raise<ValueError>("missing attribute \"{}\" in {}", key, to_string());
  return it->second;
}

template <typename T>
static const T& get_as(const AttrValue& v, const std::string& key, const char* type) {
  if (auto p = std::get_if<T>(&v)) return *p;
  raise<ValueError>("attribute \"{}\" is not of type {}", key, type);
}

std::int64_t Attrs::get_int(const std::string& key) const { return get_as<std::int64_t>(at(key), key, "int"); }
double Attrs::get_float(const std::string& key) const {
  const auto& v = at(key);
  if (auto p = std::get_if<std::int64_t>(&v)) return static_cast<double>(*p);
  return get_as<double>(v, key, "float");
}
bool Attrs::get_bool(const std::string& key) const { return get_as<bool>(at(key), key, "bool"); }
const std::string& Attrs::get_string(const std::string& key) const {
  return get_as<std::string>(at(key), key, "string");
}
const std::vector<std::int64_t>& Attrs::get_ints(const std::string& key) const {
  return get_as<std::vector<std::int64_t>>(at(key), key, "int list");
}
DType Attrs::get_dtype(const std::string& key) const { return get_as<DType>(at(key), key, "dtype"); }

std::int64_t Attrs::get_int(const std::string& key, std::int64_t fallback) const {
  return has(key) ? get_int(key) : fallback;
}
double Attrs::get_float(const std::string& key, double fallback) const {
  return has(key) ? get_float(key) : fallback;
}
bool Attrs::get_bool(const std::string& key, bool fallback) const { return has(key) ? get_bool(key) : fallback; }

std::string Attrs::to_string() const {
  std::string s = "{";
  bool first = true;
  for (const auto& [key, value] : values_) {
    s += fmt::format("{}{}=", first ? "" : ", ", key);
    first = false;
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::vector<std::int64_t>>)
            s += fmt::format("[{}]", fmt::join(v, ", "));
          else if constexpr (std::is_same_v<V, DType>)
            s += dtype_name(v);
          else
            s += fmt::format("{}", v);
        },
        value);
  }
  return s + "}";
}

}  // namespace tower
