// Embedding: maps integer indices to rows of a trainable table, as Keras's Embedding.
#pragma once

#include <string>

#include "tower/layers/constraints.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct EmbeddingOptions {
  Initializer embeddings_initializer = "uniform";  // random_uniform(-0.05, 0.05), as Keras
  Regularizer embeddings_regularizer;
  Regularizer activity_regularizer;  // on the output: Layer::activity_regularizer
  Constraint embeddings_constraint;  // applied after each optimizer update
  // Index 0 is padding: the output's Keras mask (batch, ...) is 1 where the index is not 0, and
  // layers after it that take masks skip those steps (then input_dim must count index 0 too).
  bool mask_zero = false;
  std::string name;
};

// indices: (batch, ...) integers in [0, input_dim) (floats are cast to int32, as Keras does)
// -> (batch, ..., output_dim). Weight: embeddings (input_dim, output_dim).
class Embedding : public Layer {
 public:
  Embedding(std::int64_t input_dim, std::int64_t output_dim, const EmbeddingOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Embedding>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Embedding"; }

  std::int64_t input_dim() const { return input_dim_; }
  std::int64_t output_dim() const { return output_dim_; }

 private:
  std::int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
};

}  // namespace tower::layers
