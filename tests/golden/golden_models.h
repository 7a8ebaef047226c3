// The models of the golden cases, built with tower's API exactly as tests/golden/make_golden.py builds
// them with Keras (layer names included): test_golden.cpp's half of each case.
#pragma once

#include <memory>

#include "tower/layers/layers.h"

namespace tower::golden_models {

namespace L = layers;

// Models are held by pointer: a Sequential copied into a Model would lose its overrides (layers()).
using ModelPtr = std::shared_ptr<Model>;

inline ModelPtr mlp() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({6}, {.name = "in"}),
          L::Dense(8, {.activation = "relu",
                       .kernel_regularizer = regularizers::l2(0.01),
                       .bias_regularizer = regularizers::l1(0.01),
                       .name = "d1"}),
          L::Dense(4, {.kernel_regularizer = regularizers::l1_l2(0.005, 0.02), .name = "d2"}),
          L::Softmax({.name = "softmax"}),
      },
      "mlp");
}

inline ModelPtr cnn() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({8, 8, 2}, {.name = "in"}),
          L::ZeroPadding2D(1, {.name = "pad"}),
          L::Conv2D(3, {3, 3}, {.activation = "relu", .name = "conv1"}),
          L::MaxPooling2D({2, 2}, {.name = "pool1"}),
          L::BatchNormalization({.name = "bn"}),
          L::Conv2D(4, {2, 2}, {.padding = "same", .name = "conv2"}),
          L::AveragePooling2D({2, 2}, {.name = "pool2"}),
          L::Flatten({.name = "flat"}),
          L::Dense(3, {.activation = "softmax", .name = "out"}),
      },
      "cnn");
}

inline ModelPtr pooling() {
  auto in = L::Input({8, 8, 2}, {.name = "in"});
  auto c = L::Conv2D(4, {3, 3}, {.strides = {2, 2}, .activation = "tanh", .name = "conv"})(in);
  auto a = L::AveragePooling2D({2, 2}, {.strides = {1, 1}, .padding = "same", .name = "avg"})(c);
  auto m = L::MaxPooling2D({2, 2}, {.padding = "same", .name = "max"})(c);
  auto g1 = L::GlobalMaxPooling2D({.name = "gmax"})(a);
  auto g2 = L::GlobalAveragePooling2D({.name = "gavg"})(m);
  auto cat = L::Concatenate({.name = "cat"})({g1, g2});
  auto out = L::Dense(1, {.activation = "sigmoid", .name = "out"})(cat);
  return std::make_shared<Model>(in, out, "pooling");
}

inline ModelPtr merge() {
  auto a = L::Input({5}, {.name = "in_a"});
  auto b = L::Input({5}, {.name = "in_b"});
  auto da = L::Dense(4, {.name = "da"})(a);
  auto db = L::Dense(4, {.activation = "sigmoid", .name = "db"})(b);
  auto cat =
      L::Concatenate({.name = "cat"})({L::Add({.name = "add"})({da, db}), L::Subtract({.name = "sub"})({da, db}),
                                       L::Multiply({.name = "mul"})({da, db}), L::Average({.name = "avg"})({da, db}),
                                       L::Maximum({.name = "max"})({da, db})});
  auto out = L::Dense(3, {.name = "out"})(cat);
  return std::make_shared<Model>(std::vector<KerasTensor>{a, b}, std::vector<KerasTensor>{out}, "merge");
}

inline ModelPtr activations() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({6}, {.name = "in"}),
          L::Dense(6, {.name = "d1"}),
          L::ReLU({.name = "relu"}),
          L::Dense(6, {.name = "d2"}),
          L::LeakyReLU({.negative_slope = 0.1, .name = "leaky"}),
          L::Dense(6, {.name = "d3"}),
          L::ELU({.alpha = 0.7, .name = "elu"}),
          L::Dense(3, {.name = "d4"}),
          L::Activation("tanh", {.name = "act"}),
          L::Lambda([](const SymbolicTensor& t) { return ops::scale(t, 2.0); }, {.name = "lambda"}),
      },
      "activations");
}

inline ModelPtr embedding() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({5}, {.dtype = DType::int32, .name = "in"}),
          L::Embedding(10, 3, {.name = "emb"}),
          L::Reshape({15}, {.name = "reshape"}),
          L::Dense(4, {.name = "logits"}),
      },
      "embedding");
}

inline ModelPtr regression() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({12}, {.name = "in"}),
          L::Reshape({3, 4}, {.name = "reshape"}),
          L::Dense(2, {.activation = "sigmoid", .name = "d1"}),
          L::Flatten({.name = "flat"}),
          L::Dense(2, {.name = "d2"}),
      },
      "regression");
}

inline ModelPtr dropout() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({6}, {.name = "in"}),
          L::Dense(8, {.activation = "relu", .name = "d1"}),
          L::Dropout(0.5, {.name = "drop"}),
          L::Dense(3, {.activation = "softmax", .name = "d2"}),
      },
      "dropout");
}

inline ModelPtr lstm() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({5, 3}, {.name = "in"}),
          L::LSTM(4, {.return_sequences = true, .name = "lstm1"}),
          L::LSTM(3, {.recurrent_activation = "hard_sigmoid_keras3", .go_backwards = true, .name = "lstm2"}),
          L::Dense(2, {.name = "out"}),
      },
      "lstm");
}

inline ModelPtr gru() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({5, 3}, {.name = "in"}),
          L::GRU(4, {.return_sequences = true, .name = "gru1"}),
          L::GRU(4, {.reset_after = false, .return_sequences = true, .go_backwards = true, .name = "gru2"}),
          L::GRU(3, {.activation = "relu", .use_bias = false, .name = "gru3"}),
          L::Dense(2, {.name = "out"}),
      },
      "gru");
}

inline ModelPtr rnn_states() {
  auto seq_in = L::Input({5, 3}, {.name = "seq"});
  auto ctx_in = L::Input({2}, {.name = "ctx"});
  auto h0 = L::Dense(4, {.activation = "tanh", .name = "h0"})(ctx_in);
  auto c0 = L::Dense(4, {.name = "c0"})(ctx_in);
  auto rnn = L::SimpleRNN(4, {.return_sequences = true, .return_state = true, .name = "rnn"}).call_multi({seq_in, h0});
  auto lstm = L::LSTM(4, {.return_state = true, .name = "lstm"}).call_multi({rnn[0], rnn[1], c0});
  auto cat = L::Concatenate({.name = "cat"})({lstm[0], lstm[1], lstm[2]});
  auto out = L::Dense(2, {.name = "out"})(cat);
  return std::make_shared<Model>(std::vector<KerasTensor>{seq_in, ctx_in}, std::vector<KerasTensor>{out}, "rnn_states");
}

inline ModelPtr masking() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({5, 3}, {.name = "in"}),
          L::Masking(0.0, {.name = "mask"}),
          L::LSTM(4, {.return_sequences = true, .name = "lstm"}),
          L::GRU(3, {.return_sequences = true, .go_backwards = true, .name = "gru"}),
          L::TimeDistributed(L::Dense(2), {.name = "td"}),
      },
      "masking");
}

inline ModelPtr mask_zero() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({6}, {.dtype = DType::int32, .name = "in"}),
          L::Embedding(10, 4, {.mask_zero = true, .name = "emb"}),
          L::Bidirectional(L::LSTM(3, {.return_sequences = true}), {.name = "bi"}),
          L::GlobalAveragePooling1D({.name = "gap"}),
          L::Dense(2, {.name = "out"}),
      },
      "mask_zero");
}

inline ModelPtr conv_lstm() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({3, 5, 5, 2}, {.name = "in"}),
          L::ConvLSTM2D(3, {3, 3},
                        {.padding = "same", .recurrent_activation = "hard_sigmoid_keras3", .return_sequences = true,
                         .name = "clstm1"}),
          L::ConvLSTM2D(2, {2, 2},
                        {.strides = {2, 2}, .recurrent_activation = "sigmoid", .go_backwards = true, .name = "clstm2"}),
          L::Flatten({.name = "flat"}),
          L::Dense(2, {.name = "out"}),
      },
      "conv_lstm");
}

}  // namespace tower::golden_models
