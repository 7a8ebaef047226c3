// PolicyScope: sets Keras's global dtype policy for one test and restores float32 when it ends, even on
// failure (mixed_precision::set_global_policy).
#pragma once

#include <string>

#include "tower/layers/dtype_policy.h"

namespace tower::testing {

struct PolicyScope {
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy("float32"); }
  PolicyScope(const PolicyScope&) = delete;
  PolicyScope& operator=(const PolicyScope&) = delete;
};

}  // namespace tower::testing
