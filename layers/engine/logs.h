// Logs: the named values a training step or epoch reports ("loss", "accuracy", "val_loss", ...), in
// the order Keras prints them.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tower {

class Logs {
 public:
  // Sets `name` (keeping its position if present, else appending).
  void set(const std::string& name, double value);
  std::optional<double> get(const std::string& name) const;
  bool contains(const std::string& name) const { return get(name).has_value(); }
  // The value of `name`; throws NotFoundError listing the names present.
  double at(const std::string& name) const;
  // By position, as Keras's evaluate() list: score[0] is the loss.
  double operator[](int index) const { return entries_.at(static_cast<std::size_t>(index)).second; }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<std::string, double>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, double>> entries_;
};

}  // namespace tower
