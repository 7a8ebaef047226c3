// Initializer: Keras's weight initializers by name, with Keras's fan computation and defaults.
#include "tower/layers/initializers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/layers/layer.h"

namespace tower {

namespace {

struct VarianceScalingSpec {
  double scale;
  const char* mode;
  const char* distribution;
};

// The named variance-scaling initializers, as Keras defines them.
const std::map<std::string, VarianceScalingSpec>& variance_scaling_names() {
  static const std::map<std::string, VarianceScalingSpec> names{
      {"glorot_uniform", {1.0, "fan_avg", "uniform"}},
      {"glorot_normal", {1.0, "fan_avg", "truncated_normal"}},
      {"he_uniform", {2.0, "fan_in", "uniform"}},
      {"he_normal", {2.0, "fan_in", "truncated_normal"}},
      {"lecun_uniform", {1.0, "fan_in", "uniform"}},
      {"lecun_normal", {1.0, "fan_in", "truncated_normal"}},
      {"variance_scaling", {1.0, "fan_in", "truncated_normal"}},
  };
  return names;
}

// Keras's aliases of the plain distributions.
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> names{
      {"zero", "zeros"}, {"one", "ones"}, {"uniform", "random_uniform"}, {"normal", "random_normal"}};
  return names;
}

constexpr const char* kKnownNames =
    "zeros, ones, constant, random_normal, random_uniform, truncated_normal, glorot_uniform, glorot_normal, "
    "he_uniform, he_normal, lecun_uniform, lecun_normal, variance_scaling, orthogonal (and the aliases zero, one, "
    "uniform, normal)";

// Keras's compute_fans: (..., in, out) kernels count the receptive field in both fans.
std::pair<double, double> compute_fans(const Shape& shape) {
  const int rank = shape.rank();
  if (rank < 1) return {1.0, 1.0};
  if (rank == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  double receptive = 1.0;
  for (int i = 0; i < rank - 2; ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[rank - 2]) * receptive, static_cast<double>(shape[rank - 1]) * receptive};
}

// Keras's Orthogonal: a (rows, cols) = (prod(shape[:-1]), shape[-1]) matrix with orthonormal columns
// (rows >= cols) or rows, from the QR decomposition of a standard normal matrix with R's diagonal made
// positive (here Gram-Schmidt, which gives that Q directly), times gain.
Tensor orthogonal(const Shape& shape, double gain, std::uint64_t seed, DType dtype) {
  if (shape.rank() < 2)
    raise<ValueError>("orthogonal initializer: needs a shape of rank 2 or more, got {}", shape.to_string());
  const std::int64_t cols = shape.dim(-1), rows = cols == 0 ? 0 : shape.num_elements() / cols;
  const std::int64_t n = std::max(rows, cols), k = std::min(rows, cols);
  // a (n, k), column j at a[i * k + j]: orthonormalised column by column (modified Gram-Schmidt, twice
  // for accuracy).
  Tensor normal = tower::random_normal(Shape{n, k}, 0.0, 1.0, seed, DType::float64);
  std::vector<double> a(normal.data<double>(), normal.data<double>() + n * k);
  for (std::int64_t j = 0; j < k; ++j) {
    for (int pass = 0; pass < 2; ++pass)
      for (std::int64_t p = 0; p < j; ++p) {
        double dot = 0.0;
        for (std::int64_t i = 0; i < n; ++i) dot += a[i * k + p] * a[i * k + j];
        for (std::int64_t i = 0; i < n; ++i) a[i * k + j] -= dot * a[i * k + p];
      }
    double norm = 0.0;
    for (std::int64_t i = 0; i < n; ++i) norm += a[i * k + j] * a[i * k + j];
    norm = std::sqrt(norm);
    for (std::int64_t i = 0; i < n; ++i) a[i * k + j] /= norm;
  }
  // q (rows, cols), or q^T when rows < cols.
  auto fill = [&]<typename T>() {
    std::vector<T> out(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        out[r * cols + c] = static_cast<T>(gain * (rows >= cols ? a[r * k + c] : a[c * k + r]));
    return Tensor::from_vector<T>(shape, out);
  };
  return dtype == DType::float64 ? fill.template operator()<double>() : fill.template operator()<float>();
}

}  // namespace

Initializer Initializer::orthogonal(double gain) {
  Initializer init;
  init.name_ = "orthogonal";
  init.a_ = gain;
  return init;
}

Initializer::Initializer(const std::string& name) {
  std::string key = to_snake_case(name);  // "GlorotUniform" -> "glorot_uniform"
  if (auto alias = aliases().find(key); alias != aliases().end()) key = alias->second;
  if (key == "zeros" || key == "constant") {
    *this = constant(0.0);
    name_ = key;
  } else if (key == "ones") {
    *this = constant(1.0);
    name_ = key;
  } else if (key == "random_normal") {
    *this = random_normal();
  } else if (key == "random_uniform") {
    *this = random_uniform();
  } else if (key == "truncated_normal") {
    *this = truncated_normal();
  } else if (key == "orthogonal") {
    *this = orthogonal();
  } else if (auto vs = variance_scaling_names().find(key); vs != variance_scaling_names().end()) {
    *this = variance_scaling(vs->second.scale, vs->second.mode, vs->second.distribution);
    name_ = key;
  } else {
    raise<ValueError>("unknown initializer \"{}\"; known: {}", name, kKnownNames);
  }
}

Initializer Initializer::constant(double value) {
  Initializer init;
  init.name_ = "constant";
  init.a_ = value;
  return init;
}

Initializer Initializer::random_normal(double mean, double stddev) {
  if (!(stddev >= 0)) raise<ValueError>("random_normal initializer: stddev must be >= 0, got {}", stddev);
  Initializer init;
  init.name_ = "random_normal";
  init.a_ = mean, init.b_ = stddev;
  return init;
}

Initializer Initializer::random_uniform(double minval, double maxval) {
  if (!(minval < maxval))
    raise<ValueError>("random_uniform initializer: minval ({}) must be less than maxval ({})", minval, maxval);
  Initializer init;
  init.name_ = "random_uniform";
  init.a_ = minval, init.b_ = maxval;
  return init;
}

Initializer Initializer::truncated_normal(double mean, double stddev) {
  if (!(stddev >= 0)) raise<ValueError>("truncated_normal initializer: stddev must be >= 0, got {}", stddev);
  Initializer init;
  init.name_ = "truncated_normal";
  init.a_ = mean, init.b_ = stddev;
  return init;
}

Initializer Initializer::variance_scaling(double scale, const std::string& mode, const std::string& distribution) {
  if (!(scale > 0)) raise<ValueError>("variance_scaling initializer: scale must be positive, got {}", scale);
  if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg")
    raise<ValueError>("variance_scaling initializer: mode must be \"fan_in\", \"fan_out\" or \"fan_avg\", got \"{}\"",
                      mode);
  if (distribution != "truncated_normal" && distribution != "untruncated_normal" && distribution != "uniform")
    raise<ValueError>(
        "variance_scaling initializer: distribution must be \"truncated_normal\", \"untruncated_normal\" or "
        "\"uniform\", got \"{}\"",
        distribution);
  Initializer init;
  init.name_ = "variance_scaling";
  init.a_ = scale;
  init.mode_ = mode;
  init.distribution_ = distribution;
  return init;
}

Tensor Initializer::operator()(const Shape& shape, DType dtype, std::uint64_t seed) const {
  if (name_ == "zeros" || name_ == "ones" || name_ == "constant") return Tensor::full(shape, a_, dtype);
  if (seed == 0) seed = seed_ ? static_cast<std::uint64_t>(*seed_) : next_seed();
  if (name_ == "random_normal") return tower::random_normal(shape, a_, b_, seed, dtype);
  if (name_ == "random_uniform") return tower::random_uniform(shape, a_, b_, seed, dtype);
  if (name_ == "truncated_normal") return tower::truncated_normal(shape, a_, b_, seed, dtype);
  if (name_ == "orthogonal") return tower::orthogonal(shape, a_, seed, dtype);

  // Variance scaling (also every glorot_*, he_*, lecun_*), as Keras's VarianceScaling.
  auto [fan_in, fan_out] = compute_fans(shape);
  double fan = mode_ == "fan_in" ? fan_in : mode_ == "fan_out" ? fan_out : (fan_in + fan_out) / 2.0;
  double scale = a_ / std::max(1.0, fan);
  if (distribution_ == "uniform") {
    double limit = std::sqrt(3.0 * scale);
    return tower::random_uniform(shape, -limit, limit, seed, dtype);
  }
  if (distribution_ == "untruncated_normal") return tower::random_normal(shape, 0.0, std::sqrt(scale), seed, dtype);
  // Keras divides by the stddev of a unit normal truncated to [-2, 2], so the values keep variance `scale`.
  return tower::truncated_normal(shape, 0.0, std::sqrt(scale) / 0.87962566103423978, seed, dtype);
}

// ---- config --------------------------------------------------------------------------------------

namespace {

// tower name <-> Keras 2 class name of the initializers without arguments besides the seed.
const std::map<std::string, std::string>& seeded_class_names() {
  static const std::map<std::string, std::string> names{
      {"glorot_uniform", "GlorotUniform"}, {"glorot_normal", "GlorotNormal"}, {"he_uniform", "HeUniform"},
      {"he_normal", "HeNormal"},           {"lecun_uniform", "LecunUniform"}, {"lecun_normal", "LecunNormal"},
  };
  return names;
}

double number_field(const nlohmann::json& config, const char* key, double fallback, const std::string& class_name) {
  if (!config.is_object() || !config.contains(key) || config[key].is_null()) return fallback;
  if (!config[key].is_number())
    raise<ValueError>("initializer {}: \"{}\" must be a number, got {}", class_name, key, config[key].dump());
  return config[key].get<double>();
}

}  // namespace

nlohmann::json Initializer::get_config() const {
  nlohmann::json seed = seed_ ? nlohmann::json(*seed_) : nlohmann::json(nullptr);
  std::string class_name;
  nlohmann::json config = nlohmann::json::object();
  if (name_ == "zeros") {
    class_name = "Zeros";
  } else if (name_ == "ones") {
    class_name = "Ones";
  } else if (name_ == "constant") {
    class_name = "Constant";
    config = {{"value", a_}};
  } else if (name_ == "random_normal" || name_ == "truncated_normal") {
    class_name = name_ == "random_normal" ? "RandomNormal" : "TruncatedNormal";
    config = {{"mean", a_}, {"stddev", b_}, {"seed", seed}};
  } else if (name_ == "random_uniform") {
    class_name = "RandomUniform";
    config = {{"minval", a_}, {"maxval", b_}, {"seed", seed}};
  } else if (name_ == "orthogonal") {
    class_name = "Orthogonal";
    config = {{"gain", a_}, {"seed", seed}};
  } else if (auto it = seeded_class_names().find(name_); it != seeded_class_names().end()) {
    class_name = it->second;
    config = {{"seed", seed}};
  } else {
    class_name = "VarianceScaling";
    config = {{"scale", a_}, {"mode", mode_}, {"distribution", distribution_}, {"seed", seed}};
  }
  return {{"module", "keras.initializers"}, {"class_name", class_name}, {"config", config}, {"registered_name", nullptr}};
}

Initializer Initializer::from_config(const nlohmann::json& value) {
  if (value.is_string()) return Initializer(value.get<std::string>());  // Keras 1: "glorot_uniform"
  if (!value.is_object() || !value.contains("class_name") || !value["class_name"].is_string())
    raise<ValueError>("initializer: expected a name or {{\"class_name\": ..., \"config\": {{...}}}}, got {}",
                      value.dump());
  const std::string class_name = value["class_name"].get<std::string>();
  const nlohmann::json config = value.contains("config") ? value["config"] : nlohmann::json::object();
  auto num = [&](const char* key, double fallback) { return number_field(config, key, fallback, class_name); };
  Initializer init;
  const std::string key = to_snake_case(class_name);
  if (key == "zeros" || key == "ones" || key == "zero" || key == "one") {
    init = Initializer(key);
  } else if (key == "constant") {
    init = constant(num("value", 0.0));
  } else if (key == "random_normal" || key == "normal") {
    init = random_normal(num("mean", 0.0), num("stddev", 0.05));
  } else if (key == "truncated_normal") {
    init = truncated_normal(num("mean", 0.0), num("stddev", 0.05));
  } else if (key == "random_uniform" || key == "uniform") {
    init = random_uniform(num("minval", -0.05), num("maxval", 0.05));
  } else if (key == "orthogonal") {
    init = orthogonal(num("gain", 1.0));
  } else if (key == "variance_scaling") {
    std::string mode = config.value("mode", "fan_in");
    std::string distribution = config.value("distribution", "truncated_normal");
    if (distribution == "normal") distribution = "truncated_normal";  // Keras 2.0-2.2's spelling
    init = variance_scaling(num("scale", 1.0), mode, distribution);
  } else if (seeded_class_names().count(key)) {
    init = Initializer(key);
  } else {
    raise<ValueError>("initializer \"{}\" is not supported; supported: Zeros, Ones, Constant, RandomNormal, "
                      "RandomUniform, TruncatedNormal, VarianceScaling, GlorotUniform, GlorotNormal, HeUniform, "
                      "HeNormal, LecunUniform, LecunNormal, Orthogonal",
                      class_name);
  }
  if (config.is_object() && config.contains("seed") && config["seed"].is_number_integer())
    init.seed_ = config["seed"].get<std::int64_t>();
  return init;
}

}  // namespace tower
