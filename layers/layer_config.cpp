// ConfigReader and the config writers shared by every layer.
#include "tower/layers/layer_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>

#include "tower/core/checked.h"
#include "tower/core/error.h"
#include "tower/layers/activations/activations.h"

namespace tower::layers {

int ConfigReader::axis(std::int64_t value, const char* key) const {
  return checked_int(value, fmt::format("{}: field \"{}\"", where(), key), "an axis is a small number such as -1");
}

ConfigReader::ConfigReader(const nlohmann::json& config, std::string class_name)
    : config_(config), class_name_(std::move(class_name)) {
  if (!config_.is_object())
    raise<ValueError>("{}: its \"config\" must be an object, got {}", class_name_, config_.dump().substr(0, 200));
}

std::string ConfigReader::name() const {
  if (config_.contains("name") && config_["name"].is_string()) return config_["name"].get<std::string>();
  return "";
}

std::string ConfigReader::where() const {
  std::string n = name();
  return n.empty() ? class_name_ : class_name_ + " \"" + n + "\"";
}

void ConfigReader::fail(const std::string& what) const { raise<ValueError>("{}: {}", where(), what); }

bool ConfigReader::has(const char* key) const { return config_.contains(key) && !config_[key].is_null(); }

const nlohmann::json& ConfigReader::at(const char* key) const {
  if (!has(key)) fail(fmt::format("the config has no field \"{}\", which this layer needs", key));
  return config_[key];
}

namespace {

// A JSON integer (or, with `whole_floats`, a float without a fraction: 32.0) as an int64; nullopt for
// anything else, and for numbers beyond the int64 range, which nlohmann's get<std::int64_t> wraps
// (18446744073709551615 read as -1) and a float's cast leaves undefined.
std::optional<std::int64_t> as_int64(const nlohmann::json& v, bool whole_floats) {
  if (v.is_number_unsigned())
    return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? std::optional<std::int64_t>(static_cast<std::int64_t>(v.get<std::uint64_t>()))
               : std::nullopt;
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (whole_floats && v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= -0x1p63 && d < 0x1p63 && d == std::trunc(d)) return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace

std::int64_t ConfigReader::integer(const char* key) const {
  const auto& v = at(key);
  if (auto i = as_int64(v, /*whole_floats=*/true)) return *i;
  fail(fmt::format("field \"{}\" must be an integer from {} to {}, got {}", key,
                   std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), v.dump()));
}

std::int64_t ConfigReader::integer(const char* key, std::int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}

double ConfigReader::number(const char* key, double fallback) const {
  if (!has(key)) return fallback;
  const auto& v = config_[key];
  if (!v.is_number()) fail(fmt::format("field \"{}\" must be a number, got {}", key, v.dump()));
  return v.get<double>();
}

std::optional<double> ConfigReader::optional_number(const char* key) const {
  if (!has(key)) return std::nullopt;
  return number(key, 0.0);
}

bool ConfigReader::boolean(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto& v = config_[key];
  if (!v.is_boolean()) fail(fmt::format("field \"{}\" must be true or false, got {}", key, v.dump()));
  return v.get<bool>();
}

std::string ConfigReader::string(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  const auto& v = config_[key];
  if (!v.is_string()) fail(fmt::format("field \"{}\" must be a string, got {}", key, v.dump()));
  return v.get<std::string>();
}

std::vector<std::int64_t> ConfigReader::ints(const char* key) const {
  const auto& v = at(key);
  std::vector<std::int64_t> out;
  const auto wrong = [&] {
    fail(fmt::format("field \"{}\" must be an integer or a list of integers (each from {} to {}), got {}", key,
                     std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), v.dump()));
  };
  if (v.is_number()) {
    if (auto i = as_int64(v, /*whole_floats=*/false)) return {*i};
    wrong();
  }
  if (!v.is_array()) wrong();
  for (const auto& e : v) {
    auto i = as_int64(e, /*whole_floats=*/false);
    if (!i) wrong();
    out.push_back(*i);
  }
  return out;
}

std::vector<std::int64_t> ConfigReader::ints(const char* key, const std::vector<std::int64_t>& fallback) const {
  return has(key) ? ints(key) : fallback;
}

std::int64_t ConfigReader::one_int(const char* key, std::int64_t fallback) const {
  auto v = ints(key, {fallback});
  if (v.size() != 1)
    fail(fmt::format("field \"{}\" must be one integer or a list of one, got {}", key, json()[key].dump()));
  return v[0];
}

std::vector<std::int64_t> ConfigReader::shape(const char* key) const {
  const auto& v = at(key);
  if (!v.is_array()) fail(fmt::format("field \"{}\" must be a shape list such as [null, 28, 28, 1], got {}", key, v.dump()));
  std::vector<std::int64_t> out;
  for (const auto& e : v) {
    if (e.is_null()) {
      out.push_back(-1);
    } else if (e.is_number_integer() && e.get<std::int64_t>() >= 0) {
      out.push_back(e.get<std::int64_t>());
    } else {
      fail(fmt::format("field \"{}\" must be a shape list such as [null, 28, 28, 1], got {}", key, v.dump()));
    }
  }
  return out;
}

Initializer ConfigReader::initializer(const char* key, const Initializer& fallback) const {
  if (!has(key)) return fallback;
  try {
    return Initializer::from_config(config_[key]);
  } catch (const ValueError& e) {
    fail(fmt::format("field \"{}\": {}", key, e.what()));
  }
}

Regularizer ConfigReader::regularizer(const char* key) const {
  if (!has(key)) return {};
  try {
    return Regularizer::from_config(config_[key]);
  } catch (const ValueError& e) {
    fail(fmt::format("field \"{}\": {}", key, e.what()));
  }
}

namespace {

thread_local int t_keras_major = 0;  // 0: unknown

}  // namespace

KerasVersionScope::KerasVersionScope(const std::string& keras_version) : previous_(t_keras_major) {
  int major = 0;
  for (char c : keras_version) {
    if (c < '0' || c > '9') break;
    major = major * 10 + (c - '0');
  }
  t_keras_major = major;
}

KerasVersionScope::~KerasVersionScope() { t_keras_major = previous_; }

int ConfigReader::keras_version_major() const {
  if (t_keras_major > 0) return t_keras_major;
  // tf.keras 2 writes a mixed policy as {"class_name": "Policy", ...}; Keras 3 every dtype as an object.
  return has("dtype") && config_["dtype"].is_object() && config_["dtype"].value("class_name", "") != "Policy" ? 3 : 2;
}

std::string ConfigReader::activation(const char* key) const {
  if (!has(key)) return "";
  try {
    std::string name = activation_from_config(config_[key]);
    if (name == "hard_sigmoid" && keras_version_major() >= 3) name = "hard_sigmoid_keras3";
    return name;
  } catch (const ValueError& e) {
    fail(fmt::format("field \"{}\": {}", key, e.what()));
  }
}

void ConfigReader::expect(const char* key, const nlohmann::json& allowed, const char* why) const {
  if (!has(key) || config_[key] == allowed) return;
  // 1 and 1.0, [1, 1] and 1 are the same to Keras.
  if (allowed.is_number() && config_[key].is_number() && allowed.get<double>() == config_[key].get<double>()) return;
  fail(fmt::format("field \"{}\" = {} is not supported ({}); tower needs {}", key, config_[key].dump(), why,
                   allowed.dump()));
}

std::string ConfigReader::padding(const char* key) const {
  std::string p = string(key, "valid");
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (p != "valid" && p != "same")
    fail(fmt::format("field \"{}\" = \"{}\" is not supported; tower supports \"valid\" and \"same\"", key, p));
  return p;
}

std::string ConfigReader::data_format() const {
  const std::string format = string("data_format", "channels_last");
  if (format != "channels_last" && format != "channels_first")
    fail(fmt::format("field \"data_format\" = \"{}\" is not one of \"channels_last\", \"channels_first\"", format));
  return format;
}

Constraint ConfigReader::constraint(const char* key) const {
  constraints_read_.insert(key);
  if (!has(key)) return {};
  try {
    return Constraint::from_config(config_[key]);
  } catch (const ValueError& e) {
    fail(fmt::format("field \"{}\": {}", key, e.what()));
  }
}

void ConfigReader::check_unread_constraints() const {
  for (const auto& [key, value] : config_.items())
    if (key.size() > 11 && key.compare(key.size() - 11, 11, "_constraint") == 0 && !value.is_null() &&
        !constraints_read_.contains(key))
      fail(fmt::format("field \"{}\" is not supported (this layer takes no weight constraint in tower); remove it "
                       "in Keras before saving",
                       key));
}

void ConfigReader::check_data_format(const Layer& layer) const {
  if (data_format() != layer.data_format())
    fail(fmt::format("field \"data_format\" = \"{}\" is not supported by this layer in tower; rebuild the model "
                     "with data_format=\"{}\" in Keras",
                     data_format(), layer.data_format()));
}

void ConfigReader::check_common() const {
  dtype_ = mixed_precision::global_policy();  // Keras: a layer without a dtype takes the global policy
  if (has("dtype")) {
    // A name, tf.keras 2's {"class_name": "Policy", "config": {"name": "mixed_float16"}} or Keras 3's
    // {"class_name": "DTypePolicy", "config": {"name": ...}}.
    try {
      dtype_ = DTypePolicy::from_config(config_["dtype"]);
    } catch (const ValueError& e) {
      fail(fmt::format("field \"dtype\" = {} is not supported: {}", config_["dtype"].dump(), e.what()));
    }
  }
}

DType dtype_from_name(const ConfigReader& reader, const std::string& name) {
  for (DType d : {DType::float32, DType::float64, DType::int32, DType::int64, DType::uint8})
    if (dtype_name(d) == name) return d;
  reader.fail(fmt::format("field \"dtype\" = \"{}\" is not supported; inputs can be float32, float64, int32, "
                          "int64 or uint8",
                          name));
}

nlohmann::json parse_json(const std::string& text, const std::string& what) {
  // The callback sees each object and array as it opens (depth counts the enclosing ones, from 0) and
  // stops the parse there, so no deeper value is ever built.
  auto bound = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    const bool opens = event == nlohmann::json::parse_event_t::object_start ||
                       event == nlohmann::json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth)
      raise<ValueError>("{}: the JSON nests objects and lists more than {} levels deep; Keras writes a few dozen at "
                        "most (a model in a model), so the text is damaged or not a Keras file",
                        what, kMaxJsonDepth);
    return true;
  };
  return nlohmann::json::parse(text, bound);
}

// ---- writing ---------------------------------------------------------------------------------------

double float32_value(double value) { return static_cast<double>(static_cast<float>(value)); }

nlohmann::json shape_to_json(const Shape& shape) {
  nlohmann::json out = nlohmann::json::array();
  for (auto d : shape.dims()) out.push_back(d < 0 ? nlohmann::json(nullptr) : nlohmann::json(d));
  return out;
}

nlohmann::json ints_to_json(const std::vector<std::int64_t>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (auto v : values) out.push_back(v);
  return out;
}

nlohmann::json layer_config(const Layer& layer, nlohmann::json fields) {
  nlohmann::json config = layer.Layer::get_config();
  for (auto& [key, value] : fields.items()) config[key] = std::move(value);
  // Every layer has one (Keras's base Layer); written where set, over a layer's own null.
  if (layer.activity_regularizer().defined()) config["activity_regularizer"] = layer.activity_regularizer().get_config();
  return config;
}

}  // namespace tower::layers
