// Variable: a persistent tensor (a weight, an optimizer slot, a BatchNormalization statistic).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tower/core/tensor.h"

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
  void assign(const Tensor& value) {
    value_.copy_from(value);
    note_written();
  }

  // Moves the value to `device` (a copy there; the old storage is freed when nothing else holds it).
  // Plans compiled before read the old storage: the models that use the variable must build their
  // engine graphs again (Model::move_weights does, for the model it moves). No-op where it already is.
  void relocate(Device& device);

  // Counts the writes to the value: assign(), and every run of a plan that updates the variable
  // (the Plan calls note_written()). Mirrors compare it to know when they are out of date.
  std::uint64_t version() const { return version_; }
  void note_written() { ++version_; }

  // ---- mirrors: copies of a variable on other devices, for parallel towers -----------------------
  // The variable this one mirrors, or null.
  const std::shared_ptr<Variable>& primary() const { return primary_; }
  // Copies the primary's value here when it was written since the last sync (load_weights,
  // set_weights, training without the towers). No-op for a variable that mirrors nothing.
  void sync_from_primary();
  // After a step that gave the primary and this mirror the same update: they agree again.
  void mark_in_sync() {
    if (primary_) synced_version_ = primary_->version();
  }

 private:
  friend std::shared_ptr<Variable> make_mirror(const std::shared_ptr<Variable>& primary, Device& device);
  std::string name_;
  Tensor value_;  // storage stays put (plans point into it) until relocate()
  bool trainable_;
  std::uint64_t version_ = 0;
  std::shared_ptr<Variable> primary_;
  std::uint64_t synced_version_ = 0;  // primary_->version() when this copy last equalled it
};

using VariablePtr = std::shared_ptr<Variable>;

// A copy of `primary` on `device`, with its name, value and trainability.
VariablePtr make_mirror(const VariablePtr& primary, Device& device);

inline VariablePtr make_variable(std::string name, Tensor initial_value, bool trainable = true) {
  return std::make_shared<Variable>(std::move(name), std::move(initial_value), trainable);
}

// Rethrows an out-of-memory error met while allocating the value of the variable `name` (a weight, an
// optimizer slot, a mirror): the model's own state does not fit on the device, which a smaller batch
// does not change, so the allocator's advice (kSmallerBatchAdvice) gives way to the variable, its size
// and what helps. `cause`: the allocator's message, or null for std::bad_alloc.
[[noreturn]] void raise_variable_out_of_memory(const std::string& name, const Shape& shape, DType dtype,
                                               const std::exception* cause);

}  // namespace tower
