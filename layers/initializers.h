// Weight initializers by Keras name, with Keras's defaults ("glorot_uniform", "zeros", "he_normal", ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tower/core/tensor.h"

namespace tower {

// Keras names: zeros, ones, constant, random_normal, random_uniform, truncated_normal,
// glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal,
// variance_scaling, orthogonal (gain 1). CamelCase spellings ("GlorotUniform") are accepted too. An unknown name throws
// ValueError listing the known ones. Fan-in/fan-out follow Keras: for a kernel of shape
// (kh, kw, in, out) fan_in = kh*kw*in and fan_out = kh*kw*out; for (in, out) they are in and out.
class Initializer {
 public:
  Initializer(const char* name) : Initializer(std::string(name)) {}  // NOLINT: implicit, as Keras strings
  Initializer(const std::string& name);                               // NOLINT

  // Parameterised forms, with Keras's defaults.
  static Initializer constant(double value = 0.0);
  static Initializer random_normal(double mean = 0.0, double stddev = 0.05);
  static Initializer random_uniform(double minval = -0.05, double maxval = 0.05);
  static Initializer truncated_normal(double mean = 0.0, double stddev = 0.05);
  // mode: "fan_in", "fan_out", "fan_avg"; distribution: "truncated_normal", "untruncated_normal", "uniform".
  static Initializer variance_scaling(double scale = 1.0, const std::string& mode = "fan_in",
                                      const std::string& distribution = "truncated_normal");
  // Keras's Orthogonal: orthonormal rows or columns of the kernel flattened to (prod(shape[:-1]),
  // shape[-1]), times gain (the recurrent layers' recurrent_initializer).
  static Initializer orthogonal(double gain = 1.0);

  const std::string& name() const { return name_; }
  // A fresh value; seed 0 uses the initializer's own seed (set_seed, or a config's "seed"), else draws
  // one from the global seed (tower::next_seed()).
  Tensor operator()(const Shape& shape, DType dtype = DType::float32, std::uint64_t seed = 0) const;
  Initializer& set_seed(std::optional<std::int64_t> seed) {
    seed_ = seed;
    return *this;
  }

  // Keras's serialized form as tf.keras 2 writes it:
  // {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null}, "registered_name": null}.
  nlohmann::json get_config() const;
  // Every Keras version's form: a name ("glorot_uniform", Keras 1), {"class_name": "VarianceScaling",
  // "config": {...}} (Keras 2.0-2.2, with glorot_* written as VarianceScaling), tf.keras's
  // {"class_name": "GlorotUniform", ...} and Keras 3's (with "module"/"registered_name"). Unknown
  // classes (Identity, ...) throw ValueError naming them.
  static Initializer from_config(const nlohmann::json& config);

 private:
  Initializer() = default;
  std::string name_;
  double a_ = 0.0, b_ = 0.0;  // meaning depends on the kind (value; mean, stddev; minval, maxval; scale)
  std::string mode_, distribution_;
  std::optional<std::int64_t> seed_;
};

}  // namespace tower
