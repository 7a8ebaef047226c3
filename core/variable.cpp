// Variable construction.
#include "core/variable.h"

namespace tower {

Variable::Variable(std::string name, Tensor initial_value, bool trainable)
    : name_(std::move(name)), value_(std::move(initial_value)), trainable_(trainable) {
  if (!value_.defined()) raise<ValueError>("variable \"{}\" needs an initial value", name_);
}

}  // namespace tower
