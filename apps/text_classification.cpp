// keras.io's "Text classification with Transformer" (Apoorv Nandan), line by line: token and position
// embeddings, a transformer block (MultiHeadAttention, LayerNormalization, a feed-forward network),
// global average pooling and a small classifier; and, with --model conv1d, a Conv1D classifier on the
// same data. The example reads IMDB; this port generates its reviews offline (docs/examples.md):
// sentiment words, some negated by a "not" just before them, a review positive when its (negated)
// sentiments sum above zero. A bag of words cannot tell "not good" from "good ... not": it needs
// the order of the tokens, which attention and convolutions see.
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "apps/command_line.h"
#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;
namespace L = tower::layers;

namespace {

// ---- data ---------------------------------------------------------------------------------------
// Token 0 pads, 1 is "not", 2..51 are positive words, 52..101 negative ones, the rest neutral.
constexpr std::int32_t kNot = 1, kPositive = 2, kNegative = 52, kNeutral = 102;

// n reviews of maxlen tokens (padded at the end) and their labels (1: positive).
std::pair<Tensor, Tensor> make_reviews(std::int64_t n, std::int64_t maxlen, std::int32_t vocab_size, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> tokens, labels;
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (static_cast<std::int64_t>(labels.size()) < n) {
    const int length = uniform(static_cast<int>(maxlen / 3), static_cast<int>(maxlen));
    std::vector<std::int32_t> review(static_cast<std::size_t>(length));
    for (auto& t : review) t = uniform(kNeutral, vocab_size - 1);
    for (int k = uniform(2, 5); k > 0; --k) {  // sentiment words at random places, a third negated
      const int at = uniform(1, length - 1);
      const bool positive = uniform(0, 1) == 1;
      review[static_cast<std::size_t>(at)] = positive ? uniform(kPositive, kNegative - 1) : uniform(kNegative, kNeutral - 1);
      if (uniform(0, 2) == 0) review[static_cast<std::size_t>(at - 1)] = kNot;
    }
    // The score of what the review says (a word may have overwritten another, or its "not").
    int score = 0;
    for (int i = 0; i < length; ++i) {
      const std::int32_t t = review[static_cast<std::size_t>(i)];
      if (t < kPositive || t >= kNeutral) continue;
      const int polarity = t < kNegative ? 1 : -1;
      score += i > 0 && review[static_cast<std::size_t>(i - 1)] == kNot ? -polarity : polarity;
    }
    if (score == 0) continue;  // no ties
    review.resize(static_cast<std::size_t>(maxlen), 0);
    tokens.insert(tokens.end(), review.begin(), review.end());
    labels.push_back(score > 0 ? 1 : 0);
  }
  return {Tensor::from_vector<std::int32_t>({n, maxlen}, tokens), Tensor::from_vector<std::int32_t>({n}, labels)};
}

// ---- the example's layers -----------------------------------------------------------------------

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

}  // namespace

int main(int argc, char** argv) try {
  namespace po = boost::program_options;
  std::string kind = "transformer";
  int epochs = 2, verbose = 1;
  std::int64_t samples = 25000;
  po::options_description options("Usage: text_classification [options]\nOptions");
  options.add_options()("help,h", "show this help")("model", po::value(&kind)->default_value(kind),
                                                    "transformer or conv1d")(
      "epochs", po::value(&epochs)->default_value(epochs), "training epochs")(
      "samples", po::value(&samples)->default_value(samples), "training reviews (as many for validation)")(
      "verbose", po::value(&verbose)->default_value(verbose), "0 silent, 1 progress bar, 2 one line");
  if (!apps::parse_command_line(options, argc, argv)) return 0;
  if (kind != "transformer" && kind != "conv1d") throw apps::UsageError("--model must be transformer or conv1d");

  // Prepare the data.
  const std::int32_t vocab_size = 20000;  // Only consider the top 20k words
  const std::int64_t maxlen = 200;        // Only consider the first 200 words of each movie review
  auto [x_train, y_train] = make_reviews(samples, maxlen, vocab_size, 1);
  auto [x_val, y_val] = make_reviews(samples, maxlen, vocab_size, 2);
  std::cout << x_train.shape()[0] << " Training sequences\n" << x_val.shape()[0] << " Validation sequences\n";

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
  } else {  // the Conv1D classifier: embeddings, two convolutions, global max pooling
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

  Model model(inputs, outputs);
  model.summary();
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  auto history = model.fit(x_train, y_train,
                           {.batch_size = 32,
                            .epochs = epochs,
                            .verbose = verbose,
                            .validation_data = std::pair{std::vector{x_val}, std::vector{y_val}}});
  std::cout << "Test accuracy: " << history.history.at("val_accuracy").back() << "\n";
  return 0;
} catch (const boost::program_options::error& e) {
  std::cerr << "text_classification: " << e.what() << " (--help lists the options)\n";
  return 2;
} catch (const tower::apps::UsageError& e) {
  std::cerr << "text_classification: " << e.what() << "\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "text_classification: " << e.what() << "\n";
  return 1;
}
