// DTypePolicy (Keras 3's keras.DTypePolicy, tf.keras 2's mixed_precision.Policy) and the global policy
// of mixed_precision::set_global_policy: what a layer computes in and what its variables are.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tower/core/dtype.h"

namespace tower {

// A layer's dtype policy, by Keras's names: "float32", "float64", "float16", "bfloat16" (compute and
// variables in that dtype), "mixed_float16" and "mixed_bfloat16" (compute in the half type, variables in
// float32). Implicit from a name or a DType, so `{.dtype = "mixed_float16"}` and `set_dtype(DType::float64)`
// read as in Keras.
class DTypePolicy {
 public:
  DTypePolicy();  // floatx()'s
  DTypePolicy(const std::string& name);  // NOLINT: implicit, as Keras's dtype="mixed_float16"
  DTypePolicy(const char* name);         // NOLINT
  DTypePolicy(DType dtype);              // NOLINT

  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_dtype_; }
  DType variable_dtype() const { return variable_dtype_; }
  bool is_mixed() const { return compute_dtype_ != variable_dtype_; }
  bool operator==(const DTypePolicy& other) const { return name_ == other.name_; }

  // As tf.keras 2 writes a layer's "dtype": the plain name for a single dtype, {"class_name": "Policy",
  // "config": {"name": "mixed_float16"}} for a mixed one.
  nlohmann::json to_config() const;
  // Reads a plain name, tf.keras 2's Policy and Keras 3's DTypePolicy / FloatDTypePolicy objects;
  // throws ValueError naming what is refused (quantized policies, unknown names).
  static DTypePolicy from_config(const nlohmann::json& config);

 private:
  std::string name_;
  DType compute_dtype_ = DType::float32;
  DType variable_dtype_ = DType::float32;
};

namespace mixed_precision {

using Policy = DTypePolicy;  // tf.keras 2's keras.mixed_precision.Policy

// Keras's keras.mixed_precision.set_global_policy / dtype_policies.set_dtype_policy: the policy of the
// layers made after it on this thread (and of Model, whose compile wraps the optimizer in a
// LossScaleOptimizer under "mixed_float16"). Until it is called, the policy is floatx()'s.
void set_global_policy(const DTypePolicy& policy);
DTypePolicy global_policy();

}  // namespace mixed_precision

}  // namespace tower
