// Logs: named values in insertion order (Keras's logs dict).
#include "tower/layers/engine/logs.h"

#include "tower/core/error.h"

namespace tower {

void Logs::set(const std::string& name, double value) {
  for (auto& entry : entries_)
    if (entry.first == name) {
      entry.second = value;
      return;
    }
  entries_.emplace_back(name, value);
}

std::optional<double> Logs::get(const std::string& name) const {
  for (const auto& [key, value] : entries_)
    if (key == name) return value;
  return std::nullopt;
}

double Logs::at(const std::string& name) const {
  if (auto value = get(name)) return *value;
  std::string names;
  for (const auto& entry : entries_) names += (names.empty() ? "" : ", ") + entry.first;
  raise<NotFoundError>("Logs: no value named \"{}\"; the logs hold: {}", name, names.empty() ? "(nothing)" : names);
}

}  // namespace tower
