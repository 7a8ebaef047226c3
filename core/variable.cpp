// Variable construction.
#include "tower/core/variable.h"

namespace tower {

Variable::Variable(std::string name, Tensor initial_value, bool trainable)
    : name_(std::move(name)), value_(std::move(initial_value)), trainable_(trainable) {
  if (!value_.defined()) raise<ValueError>("variable \"{}\" needs an initial value", name_);
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
  auto mirror = make_variable(primary->name(), &device == &value.device() ? value.clone() : value.to(device),
                              primary->trainable());
  mirror->primary_ = primary;
  mirror->synced_version_ = primary->version();
  return mirror;
}

}  // namespace tower
