// Layer configs: reading Keras's get_config() dicts of every version (Keras 1.2 to Keras 3) and the
// helpers that write tf.keras 2's spelling.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

// Reads one layer's "config" object. Every error names the layer (`Dense "dense_1"`) and the field,
// and says what tower accepts.
class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& config, std::string class_name);

  const nlohmann::json& json() const { return config_; }
  std::string name() const;   // "" when the config has none (then the layer gets a default name)
  std::string where() const;  // `Dense "dense_1"`

  bool has(const char* key) const;  // present and not null
  std::int64_t integer(const char* key) const;  // required
  std::int64_t integer(const char* key, std::int64_t fallback) const;
  double number(const char* key, double fallback) const;
  std::optional<double> optional_number(const char* key) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  // An integer or a list of integers (Keras's tuples); required / with a fallback.
  std::vector<std::int64_t> ints(const char* key) const;
  std::vector<std::int64_t> ints(const char* key, const std::vector<std::int64_t>& fallback) const;
  // A Keras 1-tuple field (3 or [3]) as one integer; `fallback` when absent.
  std::int64_t one_int(const char* key, std::int64_t fallback) const;
  // An axis read from `key` (by integer or ints) as an int; ValueError naming the field when it does
  // not fit (a cast would wrap 4294967296 to axis 0).
  int axis(std::int64_t value, const char* key) const;
  // `(None, 28, 28, 1)` -> dims with -1 for None.
  std::vector<std::int64_t> shape(const char* key) const;
  Initializer initializer(const char* key, const Initializer& fallback) const;
  Regularizer regularizer(const char* key) const;
  // "" (linear) when absent. "hard_sigmoid" in a Keras 3 config (keras_version_major() >= 3) is
  // tower's "hard_sigmoid_keras3": Keras 3 changed what the name computes.
  std::string activation(const char* key) const;
  // The major Keras version of this config: the KerasVersionScope's, else 3 when its dtype is a
  // Keras 3 DTypePolicy, else 2.
  int keras_version_major() const;

  // Throws ValueError ("... is not supported") unless `key` is absent, null, or equal to `allowed`.
  void expect(const char* key, const nlohmann::json& allowed, const char* why) const;
  // "padding": "valid" or "same" (any case), with the field named on error.
  std::string padding(const char* key) const;
  // The check every layer shares: the dtype policy (a name, tf.keras 2's Policy or Keras 3's
  // DTypePolicy; absent: the global policy), which finish() gives the layer.
  void check_common() const;
  // A weight constraint in any Keras form (none when absent or null). finish() refuses the non-null
  // *_constraint fields that were not read this way (or taken out by take_constraint).
  Constraint constraint(const char* key) const;
  // Applies what every layer has: trainable and activity_regularizer; refuses a data_format the layer
  // did not take (Layer::data_format) and constraints it did not read. Returns `layer` as a LayerPtr.
  template <typename L>
  LayerPtr finish(L&& layer) const {
    auto ptr = layer.share();
    check_data_format(*ptr);
    check_unread_constraints();
    if (dtype_) ptr->set_dtype_policy(*dtype_);
    if (config_.contains("trainable") && config_["trainable"].is_boolean() && !config_["trainable"].get<bool>())
      ptr->set_trainable(false);
    if (has("activity_regularizer")) ptr->set_activity_regularizer(regularizer("activity_regularizer"));
    return ptr;
  }

  [[noreturn]] void fail(const std::string& what) const;
  // Keras's data_format field, "channels_last" when absent (null in some tf.keras 2 configs).
  std::string data_format() const;

 private:
  void check_data_format(const Layer& layer) const;
  void check_unread_constraints() const;
  mutable std::set<std::string, std::less<>> constraints_read_;
  mutable std::optional<DTypePolicy> dtype_;  // check_common's
  const nlohmann::json& at(const char* key) const;
  const nlohmann::json& config_;
  std::string class_name_;
};

// The Keras version that wrote the configs read on this thread while it lives: io sets it from a
// file's or JSON's "keras_version" ("2.2.4", "2.15.0", "3.6.0"; "" or unparsable: unknown) while it
// rebuilds a model, for the names whose meaning changed between versions (ConfigReader::activation).
class KerasVersionScope {
 public:
  explicit KerasVersionScope(const std::string& keras_version);
  ~KerasVersionScope();
  KerasVersionScope(const KerasVersionScope&) = delete;
  KerasVersionScope& operator=(const KerasVersionScope&) = delete;

 private:
  int previous_;
};

// ---- reading JSON text ------------------------------------------------------------------------------
// The deepest nesting parse_json accepts. Keras's files nest a few dozen levels (a model in a model in
// a wrapper: about six levels each); thousands would overflow the stack of the code that walks, copies
// or prints the value.
inline constexpr int kMaxJsonDepth = 200;
// nlohmann::json::parse(text), refusing text nested deeper than kMaxJsonDepth with a ValueError that
// starts with `what` (e.g. `model.h5: model_config`) before the deep part is built. Malformed text
// still throws nlohmann::json::parse_error, for the caller to word.
nlohmann::json parse_json(const std::string& text, const std::string& what);

// "float32", "int32", ... -> DType (an InputLayer's dtype); throws naming the layer for others.
DType dtype_from_name(const ConfigReader& reader, const std::string& name);

// ---- writing (tf.keras 2's spelling) ---------------------------------------------------------------
// A value Keras keeps as float32 (alpha, regularizer factors) as it writes it: float(np.float32(x)).
double float32_value(double value);
// (-1, 28, 28, 1) -> [null, 28, 28, 1].
nlohmann::json shape_to_json(const Shape& shape);
nlohmann::json ints_to_json(const std::vector<std::int64_t>& values);
// The base config (name, trainable, dtype) merged with `fields`.
nlohmann::json layer_config(const Layer& layer, nlohmann::json fields);

}  // namespace tower::layers
