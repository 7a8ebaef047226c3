// keras.io's "Text classification with Transformer" (Apoorv Nandan) model, line by line, and a Conv1D
// classifier beside it: shared by apps/text_classification.cpp (training on generated reviews) and
// apps/bench_text.cpp (training speed beside PyTorch and tf.keras).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"

namespace tower::apps {

namespace L = tower::layers;

// Implement a Transformer block as a layer: here a callable that owns its sublayers, as the Python
// class does, and applies them with the functional API.
struct TransformerBlock {
  TransformerBlock(std::int64_t embed_dim, std::int64_t num_heads, std::int64_t ff_dim, double rate = 0.1)
      : att(num_heads, embed_dim),
        ffn_hidden(ff_dim, {.activation = "relu"}),
        ffn_output_layer(embed_dim),
        layernorm1({.epsilon = 1e-6}),
        layernorm2({.epsilon = 1e-6}),
        dropout1(rate),
        dropout2(rate) {}

  KerasTensor operator()(const KerasTensor& inputs) const {
    auto attn_output = att(inputs, inputs);
    attn_output = dropout1(attn_output);
    auto out1 = layernorm1(L::Add()({inputs, attn_output}));
    auto ffn_output = ffn_output_layer(ffn_hidden(out1));
    ffn_output = dropout2(ffn_output);
    return layernorm2(L::Add()({out1, ffn_output}));
  }

  L::MultiHeadAttention att;
  // keras.Sequential([Dense(ff_dim, activation="relu"), Dense(embed_dim)]): a Sequential without an
  // Input builds on its first data in tower, not on a KerasTensor, so the two Dense layers stand here.
  L::Dense ffn_hidden, ffn_output_layer;
  L::LayerNormalization layernorm1, layernorm2;
  L::Dropout dropout1, dropout2;
};

// Implement embedding layer: two separate embedding layers, one for tokens, one for token index
// (positions). A Layer subclass, because the positions' embedding is a weight added to every sample.
class TokenAndPositionEmbedding : public Layer {
 public:
  TokenAndPositionEmbedding(std::int64_t maxlen, std::int64_t vocab_size, std::int64_t embed_dim)
      : Layer("", "token_and_position_embedding"), maxlen_(maxlen), embed_dim_(embed_dim),
        token_emb_(vocab_size, embed_dim) {}

  void build(const std::vector<Shape>& input_shapes) override {
    token_emb_.ensure_built(input_shapes);
    add_weight("position_embeddings", {maxlen_, embed_dim_}, "uniform");  // pos_emb(arange(maxlen))
  }
  std::vector<VariablePtr> trainable_weights() const override {
    auto out = token_emb_.trainable_weights();
    out.push_back(weight("position_embeddings"));
    return out;
  }
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override {
    const SymbolicTensor x = token_emb_.call(ctx, inputs)[0];  // (batch, maxlen, embed_dim)
    return {ops::add(x, read(ctx, weight("position_embeddings")))};  // + positions, broadcast over the batch
  }
  std::shared_ptr<Layer> share() const override { return std::make_shared<TokenAndPositionEmbedding>(*this); }
  std::string class_name() const override { return "TokenAndPositionEmbedding"; }

 private:
  std::int64_t maxlen_, embed_dim_;
  L::Embedding token_emb_;
};

// The example's classifier on (batch, maxlen) token ids -> (batch, 2) softmax: "transformer" (token
// and position embeddings, one transformer block, global average pooling) or "conv1d" (embeddings,
// Conv1D(64, 3), MaxPooling1D(2), Conv1D(64, 3), global max pooling), then the example's head.
inline Model text_classifier(const std::string& kind, std::int64_t maxlen, std::int64_t vocab_size) {
  const std::int64_t embed_dim = 32;  // Embedding size for each token
  const std::int64_t num_heads = 2;   // Number of attention heads
  const std::int64_t ff_dim = 32;     // Hidden layer size in feed forward network inside transformer

  auto inputs = L::Input({maxlen}, {.dtype = DType::int32});
  KerasTensor x;
  if (kind == "transformer") {
    TokenAndPositionEmbedding embedding_layer(maxlen, vocab_size, embed_dim);
    x = embedding_layer(inputs);
    TransformerBlock transformer_block(embed_dim, num_heads, ff_dim);
    x = transformer_block(x);
    x = L::GlobalAveragePooling1D()(x);
  } else {
    x = L::Embedding(vocab_size, embed_dim)(inputs);
    x = L::Conv1D(64, 3, {.activation = "relu"})(x);
    x = L::MaxPooling1D(2)(x);
    x = L::Conv1D(64, 3, {.activation = "relu"})(x);
    x = L::GlobalMaxPooling1D()(x);
  }
  x = L::Dropout(0.1)(x);
  x = L::Dense(20, {.activation = "relu"})(x);
  x = L::Dropout(0.1)(x);
  auto outputs = L::Dense(2, {.activation = "softmax"})(x);
  return Model(inputs, outputs);
}

}  // namespace tower::apps
