// IntegerLookup: integer tokens to vocabulary indices (or back, with invert), inside models, as Keras's
// IntegerLookup; adapt() builds the vocabulary from data. The table: layers/preprocessing/lookup_table.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/core/tensor.h"
#include "tower/layers/layer.h"
#include "tower/layers/preprocessing/lookup_table.h"

namespace tower::layers {

// Keras's defaults: one OOV index, oov_token -1, no mask, output_mode "int".
struct IntegerLookupOptions : LookupOptions<std::int64_t> {
  IntegerLookupOptions() { oov_token = -1; }
};

// x: integer tokens (batch, ...) -> int64 indices of the same shape ("int"), or float32 encodings of
// the indices as CategoryEncoding's over vocabulary_size() (inputs of rank 1 or 2; "tf_idf": the counts
// times each index's inverse document frequency). With invert, x holds indices and the layer gives
// int64 tokens. Tokens are compared as float64: exact up to 2^53. num_oov_indices 0 gives -1 for an
// unknown token (Keras raises); several spread unknown tokens by oov_method. No weights.
class IntegerLookup : public Layer {
 public:
  explicit IntegerLookup(const IntegerLookupOptions& options = {});

  // Keras's adapt on an integer tensor of any shape (every element is a token).
  void adapt(const Tensor& data);
  std::vector<std::int64_t> get_vocabulary(bool include_special_tokens = true) const {
    return table_.get_vocabulary(include_special_tokens);
  }
  std::int64_t vocabulary_size() const { return table_.vocabulary_size(); }

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<IntegerLookup>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "IntegerLookup"; }

 private:
  LookupTable<std::int64_t> table_;
};

}  // namespace tower::layers
