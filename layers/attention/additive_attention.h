// AdditiveAttention: Keras's additive (Bahdanau-style) attention layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/layers/attention/attention.h"

namespace tower::layers {

struct AdditiveAttentionOptions {
  bool use_scale = true;  // a learned "scale" (dim,) weighs the features of tanh(query_i + key_j)
  double dropout = 0.0;   // on the attention distribution, in training
  std::optional<std::uint64_t> seed;  // the dropout masks' seed; unset draws one
  std::string name;
};

// As Attention (inputs, masks, call flags, outputs), with scores sum(scale * tanh(query_i + key_j))
// over the features, (batch, T_q, T_v). Weights: scale (dim,), glorot_uniform, with use_scale.
class AdditiveAttention : public Attention {
 public:
  explicit AdditiveAttention(const AdditiveAttentionOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<AdditiveAttention>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "AdditiveAttention"; }

 protected:
  SymbolicTensor calculate_scores(CallContext& ctx, const SymbolicTensor& query, const SymbolicTensor& key) override;
};

}  // namespace tower::layers
