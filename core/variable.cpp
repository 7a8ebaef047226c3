// Variable construction, and the out-of-memory error of a variable's allocation.
#include "tower/core/variable.h"

#include "tower/core/caching_allocator.h"

namespace tower {

void raise_variable_out_of_memory(const std::string& name, const Shape& shape, DType dtype,
                                  const std::exception* cause) {
  std::string says = cause ? cause->what() : "std::bad_alloc";
  if (auto advice = says.find(kSmallerBatchAdvice); advice != std::string::npos) says.erase(advice);
  raise<OutOfMemoryError>("out of memory allocating the variable \"{}\" ({} {}, {}): the model's weights and "
                          "optimizer state do not fit in this device's memory, whatever the batch size; use a smaller "
                          "model, or a device with more memory ({})", name, shape.to_string(), dtype_name(dtype),
                          format_bytes(tensor_bytes(shape, dtype)), says);
}

Variable::Variable(std::string name, Tensor initial_value, bool trainable)
    : name_(std::move(name)), value_(std::move(initial_value)), trainable_(trainable) {
  if (!value_.defined()) raise<ValueError>("variable \"{}\" needs an initial value", name_);
}

void Variable::relocate(Device& device) {
  if (&device == &value_.device()) return;
  try {
    value_ = value_.to(device);
  } catch (const OutOfMemoryError& e) {
    raise_variable_out_of_memory(name_, value_.shape(), value_.dtype(), &e);
  }
  note_written();
}

void Variable::sync_from_primary() {
  if (!primary_ || synced_version_ == primary_->version()) return;
  value_.copy_from(primary_->value());
  note_written();
  synced_version_ = primary_->version();
}

VariablePtr make_mirror(const VariablePtr& primary, Device& device) {
  if (!primary) raise<ValueError>("make_mirror: the primary variable is null");
  const Tensor& value = primary->value();
  Tensor copy;
  try {
    copy = &device == &value.device() ? value.clone() : value.to(device);
  } catch (const OutOfMemoryError& e) {
    raise_variable_out_of_memory(primary->name(), value.shape(), value.dtype(), &e);
  }
  auto mirror = make_variable(primary->name(), copy, primary->trainable());
  mirror->primary_ = primary;
  mirror->synced_version_ = primary->version();
  return mirror;
}

}  // namespace tower
