// Attention: Keras's dot-product (Luong-style) attention layer; the base of AdditiveAttention.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct AttentionOptions {
  bool use_scale = false;         // a learned scalar "scale" multiplies the scores
  std::string score_mode = "dot";  // "dot" or "concat" (tanh of query + key, summed)
  double dropout = 0.0;           // on the attention distribution, in training
  std::optional<std::uint64_t> seed;  // the dropout masks' seed; unset draws one (tower::next_seed())
  std::string name;
};

// Keras's call flags: attention([query, value], return_attention_scores=..., use_causal_mask=...).
struct AttentionCallArgs {
  bool return_attention_scores = false;  // then a second output, the distribution (batch, T_q, T_v)
  bool use_causal_mask = false;          // query position i attends to value positions j <= i only
};

// inputs [query (batch, T_q, dim), value (batch, T_v, dim_v)] or [query, value, key (batch, T_v, dim)]
// (key defaults to value) -> (batch, T_q, dim_v): distribution = softmax(scores) over the value axis,
// output = distribution · value. Scores: "dot" query · key^T (times scale with use_scale); "concat"
// concat_score_weight * sum(tanh(scale * (query_i + key_j))) over the features.
//
// Masks (Keras's, from Masking or Embedding(mask_zero) upstream): the value's mask, and the causal one
// with use_causal_mask, take 1e9 off the masked scores before the softmax; the query's mask zeroes the
// output rows it masks and is the output's mask. Call flags: attention.call_multi({query, value},
// {.return_attention_scores = true, .use_causal_mask = true}) (or with_call_args for the engine call);
// each call keeps its own, as a Keras call's keywords. The returned distribution is after dropout, as
// Keras returns it.
//
// Weights: scale () with use_scale, concat_score_weight () with "concat", both starting at 1.
class Attention : public Layer {
 public:
  explicit Attention(const AttentionOptions& options = {});

  using Layer::call_multi;
  using Layer::operator();
  // Keras's attention(inputs, return_attention_scores=..., use_causal_mask=...): one output.
  KerasTensor operator()(const std::vector<KerasTensor>& inputs, const AttentionCallArgs& args) const;
  // -> {output} or {output, distribution}.
  std::vector<KerasTensor> call_multi(const std::vector<KerasTensor>& inputs, const AttentionCallArgs& args) const;
  // A handle on this layer whose calls apply these flags (for the engine-level call()).
  LayerPtr with_call_args(const AttentionCallArgs& args) const;

  // In model configs: the flags as each call's keyword arguments, and such a call read back.
  nlohmann::json call_kwargs() const override;
  std::vector<KerasTensor> call_from_config(const std::vector<KerasTensor>& inputs,
                                            const std::map<std::string, KerasTensor>& keyword_inputs,
                                            const nlohmann::json& kwargs) const override;

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Attention>(*this); }
  bool supports_masking() const override { return true; }  // the output keeps the query's mask
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Attention"; }

  bool use_scale() const { return use_scale_; }
  const std::string& score_mode() const { return score_mode_; }
  double dropout() const { return dropout_; }
  const AttentionCallArgs& call_args() const { return call_args_; }

 protected:
  Attention(const std::string& name, const std::string& default_base, bool use_scale, std::string score_mode,
            double dropout, std::optional<std::uint64_t> seed);
  // Checks [query, value(, key)]; ShapeError/ValueError naming the layer.
  void check_inputs(const std::vector<Shape>& shapes) const;
  // query (batch, T_q, dim), key (batch, T_v, dim) -> scores (batch, T_q, T_v).
  virtual SymbolicTensor calculate_scores(CallContext& ctx, const SymbolicTensor& query, const SymbolicTensor& key);
  // The dropout settings as get_config writes them (AdditiveAttention has no score_mode).
  nlohmann::json base_fields() const;

  bool use_scale_;
  std::string score_mode_;
  double dropout_;
  std::uint64_t seed_;

 private:
  AttentionCallArgs call_args_;  // this handle's call flags
};

}  // namespace tower::layers
