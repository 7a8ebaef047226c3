// StringLookup: strings to vocabulary indices and back, on the host, as Keras's StringLookup (tower's
// tensors hold numbers: look strings up before feeding a model, e.g. into an Embedding). adapt()
// builds the vocabulary from data. The table: layers/preprocessing/lookup_table.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/core/tensor.h"
#include "tower/layers/preprocessing/lookup_table.h"

namespace tower::layers {

// Keras's defaults: one OOV index, oov_token "[UNK]", no mask. output_mode "int" only (encode the
// indices in the model with CategoryEncoding); invert=True is refused: call invert().
struct StringLookupOptions : LookupOptions<std::string> {
  StringLookupOptions() { oov_token = "[UNK]"; }
};

class StringLookup {
 public:
  explicit StringLookup(const StringLookupOptions& options = {});

  // Keras's adapt: every string of the data is a token (the bytes as given; UTF-8 as Keras stores them).
  void adapt(const std::vector<std::string>& data) { table_.adapt(data); }
  std::vector<std::string> get_vocabulary(bool include_special_tokens = true) const {
    return table_.get_vocabulary(include_special_tokens);
  }
  std::int64_t vocabulary_size() const { return table_.vocabulary_size(); }

  // The indices of `tokens` as int64, shaped `shape` (default (n,)); what Keras's layer gives.
  Tensor operator()(const std::vector<std::string>& tokens, const Shape& shape = {}) const;
  // Keras's StringLookup(invert=True): each index's token (the OOV token outside the vocabulary).
  std::vector<std::string> invert(const Tensor& indices) const;

  // Keras's get_config (with the vocabulary inline) and the lookup a Keras config describes.
  nlohmann::json get_config() const;
  static StringLookup from_config(const nlohmann::json& config);

 private:
  LookupTable<std::string> table_;
};

}  // namespace tower::layers
