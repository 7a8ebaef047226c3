// CategoryEncoding: integer category ids to one_hot, multi_hot or count vectors, as Keras's; and
// encode_categorical, the same encoding that Hashing and IntegerLookup apply to their bins and indices.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

// Keras's numerical_utils.encode_categorical_inputs on the TF backend, for `x` integer (or floating,
// truncated) of rank 1 (batch,) or 2 (batch, k), `depth` tokens, float32 out:
//   one_hot   (batch,) -> (batch, depth); (batch, 1) -> (batch, depth); (batch, k) -> (batch, k, depth)
//   multi_hot (batch, k) -> (batch, depth), 1 where a token occurs; count: how often (times the
//             optional count_weights (batch, k)). A rank-1 input is one sample, as in Keras: (depth,).
// Values outside [0, depth) count nowhere (Keras's one_hot gives zeros, tf.math.bincount drops values
// >= depth; it refuses negative values at run time, which tower ignores as well).
SymbolicTensor encode_categorical(const Layer& layer, const SymbolicTensor& x, const std::string& output_mode,
                                  std::int64_t depth, const std::optional<SymbolicTensor>& count_weights = {});
// ValueError naming the layer unless mode is one of `allowed` (Keras's message lists them).
void check_output_mode(const Layer& layer, const std::string& mode, const std::vector<std::string>& allowed);

struct CategoryEncodingOptions {
  std::string output_mode = "multi_hot";  // "multi_hot" (Keras's "binary" too), "one_hot" or "count"
  bool sparse = false;                    // true is refused: tower has no sparse tensors
  std::string name;
};

// x: integer ids (batch,) or (batch, k) -> float32 (see encode_categorical). Called with two inputs
// in "count" mode, the second is count_weights (batch, k). No weights.
class CategoryEncoding : public Layer {
 public:
  explicit CategoryEncoding(std::int64_t num_tokens, const CategoryEncodingOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<CategoryEncoding>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "CategoryEncoding"; }

  std::int64_t num_tokens() const { return num_tokens_; }
  const CategoryEncodingOptions& options() const { return options_; }

 private:
  std::int64_t num_tokens_;
  CategoryEncodingOptions options_;
};

}  // namespace tower::layers
