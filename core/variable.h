// Variable: a persistent tensor (a weight, an optimizer slot, a BatchNormalization statistic).
#pragma once

#include <memory>
#include <string>

#include "core/tensor.h"

namespace tower {

class Variable {
 public:
  Variable(std::string name, Tensor initial_value, bool trainable = true);

  const std::string& name() const { return name_; }
  const Tensor& value() const { return value_; }
  const Shape& shape() const { return value_.shape(); }
  DType dtype() const { return value_.dtype(); }
  Device& device() const { return value_.device(); }
  bool trainable() const { return trainable_; }
  void set_trainable(bool trainable) { trainable_ = trainable; }

  // Copies `value` into the variable's storage (same shape and dtype, any device).
  void assign(const Tensor& value) { value_.copy_from(value); }

 private:
  std::string name_;
  Tensor value_;  // storage stays put for the variable's life: plans point into it
  bool trainable_;
};

using VariablePtr = std::shared_ptr<Variable>;

inline VariablePtr make_variable(std::string name, Tensor initial_value, bool trainable = true) {
  return std::make_shared<Variable>(std::move(name), std::move(initial_value), trainable);
}

}  // namespace tower
