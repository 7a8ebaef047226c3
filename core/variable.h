// Variable: a persistent tensor (a weight, an optimizer slot, a BatchNormalization statistic).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/core/tensor.h"

namespace tower {

class Variable {
 public:
  Variable(std::string name, Tensor initial_value, bool trainable = true);

  const std::string& name() const { return name_; }
  // A variable split into pieces first gathers those written since it last did (see pieces below).
  const Tensor& value() const {
    if (!pieces_.empty()) gather_pieces();
    return value_;
  }
  const Shape& shape() const { return value_.shape(); }
  DType dtype() const { return value_.dtype(); }
  Device& device() const { return value_.device(); }
  bool trainable() const { return trainable_; }
  void set_trainable(bool trainable) { trainable_ = trainable; }

  // Copies `value` into the variable's storage (same shape and dtype, any device). A variable split
  // into pieces then holds what the pieces take at their next sync (their older values are not gathered
  // over it).
  void assign(const Tensor& value);

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

  // ---- pieces: slices of a variable on other devices (tower::distribution's sharded layouts) -------
  // A piece (make_piece) is a mirror of one slice of its primary along `axis`: sync_from_primary copies
  // that slice, and the primary's value() copies back the slices of the pieces written since (steps
  // write the pieces; the primary is what get_weights and files read, and what set_weights writes).
  struct Slice {
    int axis = 0;
    std::int64_t offset = 0;
  };
  bool is_piece() const { return piece_.has_value(); }
  const Slice& slice() const { return *piece_; }
  // This variable's live pieces, in slice order (empty: it is whole).
  std::vector<std::shared_ptr<Variable>> pieces() const;

 private:
  friend std::shared_ptr<Variable> make_mirror(const std::shared_ptr<Variable>& primary, Device& device);
  friend std::shared_ptr<Variable> make_piece(const std::shared_ptr<Variable>& whole, Slice slice, std::int64_t size,
                                              Device& device);
  void gather_pieces() const;
  std::string name_;
  mutable Tensor value_;  // storage stays put (plans point into it) until relocate(); gathers write it
  struct Gathered {
    std::weak_ptr<Variable> piece;
    mutable std::uint64_t version = 0;  // the piece's version last copied back
  };
  std::vector<Gathered> pieces_;
  std::optional<Slice> piece_;  // set: this is a piece of primary_
  bool trainable_;
  std::uint64_t version_ = 0;
  std::shared_ptr<Variable> primary_;
  std::uint64_t synced_version_ = 0;  // primary_->version() when this copy last equalled it
};

using VariablePtr = std::shared_ptr<Variable>;

// A copy of `primary` on `device`, with its name, value and trainability.
VariablePtr make_mirror(const VariablePtr& primary, Device& device);
// The slice [offset, offset + size) along `slice.axis` of `whole` as a variable of its own on `device`,
// with whole's name and trainability: a piece of `whole` (Variable::is_piece), which `whole` gathers
// back from. `whole` must be on a host-accessible device. The caller owns the piece; `whole` holds it
// weakly.
VariablePtr make_piece(const VariablePtr& whole, Variable::Slice slice, std::int64_t size, Device& device);
// A copy of `whole_copy` shaped as `like` is cut from its primary: a piece of `whole_copy` with `like`'s
// slice where `like` is a piece, else a mirror (the optimizer's slots of a mirror or a piece).
VariablePtr make_copy_like(const VariablePtr& like, const VariablePtr& whole_copy);

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
