// Attrs: the named, typed constant arguments of a graph node (strides, axes, rates, ...).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "tower/core/dtype.h"

namespace tower {

using AttrValue = std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>, DType>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> values) : values_(values) {}

  Attrs& set(const std::string& key, AttrValue value);
  bool has(const std::string& key) const { return values_.count(key) != 0; }

  // Typed getters throw ValueError naming the key when it is missing or of another type.
  std::int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;  // accepts an int too
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  const std::vector<std::int64_t>& get_ints(const std::string& key) const;
  DType get_dtype(const std::string& key) const;

  // With a default for a missing key.
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;

  std::string to_string() const;  // "{axis=1, keepdims=true}"
  const std::map<std::string, AttrValue>& values() const { return values_; }

 private:
  const AttrValue& at(const std::string& key) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace tower
