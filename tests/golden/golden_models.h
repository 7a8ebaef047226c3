// The models of the golden cases, built with tower's API exactly as tests/golden/make_golden.py builds
// them with Keras (layer names included): test_golden.cpp's half of each case.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

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

inline ModelPtr temporal_weights() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({5, 3}, {.name = "in"}),
          L::LSTM(4, {.return_sequences = true, .name = "lstm"}),
          L::Dense(3, {.activation = "softmax", .name = "out"}),
      },
      "temporal_weights");
}

inline ModelPtr sample_weights() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({6}, {.name = "in"}),
          L::Dense(5, {.activation = "tanh", .name = "d1"}),
          L::Dense(1, {.activation = "sigmoid", .name = "out"}),
      },
      "sample_weights");
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

// make_golden.py's stateful_models: every recurrent layer stateful, the batch size fixed.
inline ModelPtr stateful_rnn() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({3, 3}, {.name = "in", .batch_size = 4}),
          L::SimpleRNN(4, {.return_sequences = true, .stateful = true, .name = "rnn"}),
          L::LSTM(4, {.return_sequences = true, .stateful = true, .name = "lstm"}),
          L::GRU(3, {.stateful = true, .name = "gru"}),
          L::Dense(2, {.name = "out"}),
      },
      "stateful");
}

inline ModelPtr stateful_conv_lstm() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({2, 5, 5, 1}, {.name = "in", .batch_size = 4}),
          L::ConvLSTM2D(2, {3, 3},
                        {.padding = "same", .recurrent_activation = "sigmoid", .stateful = true, .name = "conv_lstm"}),
          L::Flatten({.name = "flat"}),
          L::Dense(2, {.name = "out"}),
      },
      "stateful_conv_lstm");
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

// Conv1D's three paddings with strides and dilation, and the 1-D pooling, padding, cropping and upsampling
// layers around it.
inline ModelPtr conv1d() {
  auto in = L::Input({12, 3}, {.name = "in"});
  auto c = L::Conv1D(4, 3, {.padding = "causal", .dilation_rate = 2, .activation = "relu", .name = "conv_causal"})(in);
  c = L::ZeroPadding1D(std::vector<std::int64_t>{1, 2}, {.name = "pad"})(c);       // (15, 4)
  c = L::Conv1D(4, 4, {.strides = 2, .padding = "same", .name = "conv_same"})(c);  // (8, 4)
  c = L::MaxPooling1D(2, {.strides = 1, .padding = "same", .name = "max"})(c);     // (8, 4)
  c = L::UpSampling1D(2, {.name = "up"})(c);                                       // (16, 4)
  c = L::Cropping1D({2, 3}, {.name = "crop"})(c);                                  // (11, 4)
  c = L::Conv1D(4, 3, {.padding = "same", .dilation_rate = 2, .use_bias = false, .name = "conv_same_d2"})(c);
  c = L::Conv1D(3, 2, {.strides = 2, .activation = "sigmoid", .name = "conv_valid"})(c);       // (5, 3)
  auto a = L::AveragePooling1D(4, {.strides = 2, .padding = "same", .name = "avg"})(c);        // (3, 3)
  auto m = L::MaxPooling1D(2, {.name = "max_valid"})(c);                                       // (2, 3)
  auto s = L::Conv1D(2, 2, {.strides = 2, .padding = "causal", .name = "conv_causal_s2"})(c);  // (3, 2)
  auto g3 = L::GlobalMaxPooling1D({.keepdims = true, .name = "gmax_keep"})(s);                 // (1, 2)
  auto g4 = L::GlobalAveragePooling1D({.keepdims = true, .name = "gavg_keep"})(s);             // (1, 2)
  auto k = L::Flatten({.name = "flat"})(L::Concatenate({.name = "cat_keep"})({g3, g4}));       // (4,)
  auto cat = L::Concatenate({.name = "cat"})(
      {L::GlobalMaxPooling1D({.name = "gmax"})(a), L::GlobalAveragePooling1D({.name = "gavg"})(m), k});
  auto out = L::Dense(2, {.name = "out"})(cat);
  return std::make_shared<Model>(in, out, "conv1d");
}

// SpatialDropout1D in inference (the identity).
inline ModelPtr spatial_dropout1d() {
  return std::make_shared<Sequential>(
      std::vector<LayerRef>{
          L::Input({6, 3}, {.name = "in"}),
          L::Conv1D(4, 2, {.name = "conv"}),
          L::SpatialDropout1D(0.5, {.name = "drop"}),
          L::GlobalAveragePooling1D({.name = "gavg"}),
          L::Dense(3, {.activation = "softmax", .name = "out"}),
      },
      "spatial_dropout1d");
}

// Bidirectional's merge modes over LSTM, GRU and SimpleRNN, return_state, a given backward_layer and
// initial states.
inline ModelPtr bidirectional() {
  auto in = L::Input({5, 3}, {.name = "in"});
  auto ctx = L::Input({2}, {.name = "ctx"});
  auto s = L::Bidirectional(L::LSTM(3, {.return_sequences = true, .name = "lstm_a"}), {.name = "bi_concat"})(in);
  s = L::Bidirectional(L::GRU(3, {.return_sequences = true, .name = "gru_b"}),
                       {.merge_mode = "sum", .name = "bi_sum"})(s);
  s = L::Bidirectional(L::SimpleRNN(3, {.return_sequences = true, .name = "rnn_c"}),
                       {.merge_mode = "mul", .name = "bi_mul"})(s);  // (5, 3)
  auto none = L::Bidirectional(L::GRU(2, {.reset_after = false, .return_sequences = true, .name = "gru_d"}),
                               {.merge_mode = std::nullopt, .name = "bi_none"})
                  .call_multi({s});                                  // 2x (5, 2)
  auto both = L::Concatenate({.name = "both"})({none[0], none[1]});  // (5, 4)
  auto ave = L::Bidirectional(L::SimpleRNN(2, {.name = "rnn_e"}), {.merge_mode = "ave", .name = "bi_ave"})(both);
  // [output (4,), forward h, forward c, backward h, backward c]
  auto state =
      L::Bidirectional(L::LSTM(2, {.return_state = true, .name = "lstm_f"}), {.name = "bi_state"}).call_multi({both});
  auto last = L::Bidirectional(L::LSTM(2, {.name = "lstm_g"}), {.merge_mode = std::nullopt, .name = "bi_none_last"})
                  .call_multi({s});  // 2x (2,)
  auto added = L::Add({.name = "add"})({last[0], last[1]});
  // [sequence (5, 2), forward h, backward h]
  auto gru = L::Bidirectional(L::GRU(2, {.return_sequences = true, .return_state = true, .name = "gru_i"}),
                              {.merge_mode = "sum", .name = "bi_gru_state"})
                 .call_multi({in});
  // A given backward_layer (relu), both directions started from initial states [forward h, backward h].
  auto h_fw = L::Dense(2, {.activation = "tanh", .name = "h_fw"})(ctx);
  auto h_bw = L::Dense(2, {.name = "h_bw"})(ctx);
  auto init =
      L::Bidirectional(
          L::SimpleRNN(2, {.name = "rnn_h"}),
          {.backward_layer = L::SimpleRNN(2, {.activation = "relu", .go_backwards = true, .name = "backward_rnn_h"}),
           .name = "bi_init"})
          .call_multi({gru[0], h_fw, h_bw});
  auto cat = L::Concatenate({.name = "cat"})(
      {ave, state[0], state[1], state[2], state[3], state[4], added, gru[1], gru[2], init[0]});
  auto out = L::Dense(2, {.name = "out"})(cat);
  return std::make_shared<Model>(std::vector<KerasTensor>{in, ctx}, std::vector<KerasTensor>{out}, "bidirectional");
}

// LayerNormalization, MultiHeadAttention (key, attention_mask, causal, scores), Attention, AdditiveAttention,
// Dot, and the gelu, swish and silu activations.
inline ModelPtr attention() {
  auto q_in = L::Input({4, 6}, {.name = "query"});
  auto v_in = L::Input({5, 4}, {.name = "value"});
  auto m_in = L::Input({4, 5}, {.dtype = DType::int32, .name = "mask"});  // 1: attend
  auto s_in = L::Input({4, 4}, {.dtype = DType::int32, .name = "self_mask"});
  auto q = L::LayerNormalization({.name = "ln"})(q_in);                     // (4, 6)
  auto vs = L::Dense(4, {.activation = "swish", .name = "d_swish"})(v_in);  // (5, 4)
  auto ks = L::Dense(4, {.activation = "silu", .name = "d_silu"})(v_in);    // (5, 4)
  auto cross =
      L::MultiHeadAttention(2, 3, {.value_dim = 2, .use_bias = false, .output_shape = {5}, .name = "mha_cross"})(
          q, v_in, {.key = ks, .attention_mask = m_in});                                               // (4, 5)
  auto causal = L::MultiHeadAttention(2, 3, {.name = "mha_causal"})(q, q, {.use_causal_mask = true});  // (4, 6)
  // {output (4, 6), scores (1, 4, 4)}
  auto scores =
      L::MultiHeadAttention(1, 2, {.use_bias = false, .name = "mha_scores"})
          .call_multi(q, q, {.attention_mask = s_in, .return_attention_scores = true, .use_causal_mask = true});
  auto qg = L::Dense(4, {.activation = "gelu", .name = "d_gelu"})(causal);  // (4, 4)
  // {output (4, 4), distribution (4, 5)}
  auto dot_att =
      L::Attention({.use_scale = true, .name = "att_dot"}).call_multi({qg, vs}, {.return_attention_scores = true});
  auto concat_att =
      L::Attention({.score_mode = "concat", .name = "att_concat"})({qg, vs, ks}, {.use_causal_mask = true});   // (4, 4)
  auto add_att = L::AdditiveAttention({.name = "att_add"})({qg, vs, ks});                                      // (4, 4)
  auto ln2 = L::LayerNormalization({.axis = {1, 2}, .epsilon = 0.01, .center = false, .name = "ln2"})(cross);  // (4, 5)
  auto cos =
      L::Dot(std::vector<int>{2, 2}, {.normalize = true, .name = "dot_cos"})({dot_att[0], concat_att});  // (4, 4)
  auto prod = L::Dot(1, {.name = "dot_steps"})({add_att, ln2});                                          // (4, 5)
  auto pooled =
      L::Dot(1, {.normalize = true, .name = "dot_vec"})({L::GlobalAveragePooling1D({.name = "gap_single"})(scores[0]),
                                                         L::GlobalMaxPooling1D({.name = "gmp_q"})(q)});  // (1,)
  auto cat = L::Concatenate({.name = "cat"})({L::GlobalAveragePooling1D({.name = "gap_cos"})(cos),
                                              L::GlobalAveragePooling1D({.name = "gap_prod"})(prod),
                                              L::Flatten({.name = "flat_probs"})(scores[1]),
                                              L::GlobalAveragePooling1D({.name = "gap_dist"})(dot_att[1]), pooled});
  auto out = L::Dense(2, {.name = "out"})(cat);
  return std::make_shared<Model>(std::vector<KerasTensor>{q_in, v_in, m_in, s_in}, std::vector<KerasTensor>{out},
                                 "attention");
}

// The attention layers with Keras masks from Embedding(mask_zero). Unlike Keras 3's MultiHeadAttention, which
// deletes the masks of the tensors it is called on, tower keeps them: the MHA reads a tensor of its own (ln_in)
// so that Attention and AdditiveAttention see emb's mask on both sides.
inline ModelPtr attention_masks() {
  auto in = L::Input({6}, {.dtype = DType::int32, .name = "in"});
  auto e = L::Embedding(10, 4, {.mask_zero = true, .name = "emb"})(in);  // (6, 4), mask (6,)
  auto p = L::LayerNormalization({.scale = false, .name = "ln_in"})(e);  // keeps the mask
  auto m = L::MultiHeadAttention(2, 2, {.name = "mha"})(p, p);           // query and value masks
  auto n = L::LayerNormalization({.name = "ln"})(m);                     // keeps the mask
  auto a = L::Attention({.name = "att"})({n, e});                        // value mask; query mask zeroes rows
  auto c = L::AdditiveAttention({.use_scale = false, .name = "att_add"})({a, e}, {.use_causal_mask = true});
  auto g = L::GlobalAveragePooling1D({.name = "gap"})(c);  // mean over the unmasked steps
  auto out = L::Dense(2, {.activation = "gelu", .name = "out"})(g);
  return std::make_shared<Model>(in, out, "attention_masks");
}

// Weight constraints after each step (max_norm, min_max_norm, unit_norm, non_neg), PReLU with and without
// shared axes, Minimum.
inline ModelPtr others() {
  auto in = L::Input({6}, {.name = "in"});
  auto a = L::Dense(8, {.kernel_constraint = constraints::max_norm(1.5), .name = "d1"})(in);
  auto r = L::Reshape({4, 2}, {.name = "reshape"})(a);
  auto p = L::PReLU({.alpha_constraint = constraints::min_max_norm(0.2, 0.8, 0.7),
                     .shared_axes = {1},
                     .name = "prelu_shared"})(r);
  auto f = L::Flatten({.name = "flat"})(p);
  auto b = L::PReLU({.name = "prelu"})(L::Dense(8, {.name = "d2"})(in));
  auto m = L::Minimum({.name = "min"})({f, b});
  auto out = L::Dense(3, {.kernel_constraint = constraints::unit_norm(),
                          .bias_constraint = constraints::non_neg(),
                          .name = "out"})(m);
  return std::make_shared<Model>(in, out, "others");
}

inline ModelPtr preprocessing() {
  auto in = L::Input({9, 12, 2}, {.name = "in"});
  auto r = L::Rescaling(1 / 4.0, {.offset = -0.5, .name = "rescale"})(in);
  auto n = L::Normalization({.name = "norm"})(r);
  auto g = L::Normalization({.mean = std::vector<double>{0.5, -1.0}, .variance = std::vector<double>{4.0, 0.25},
                             .name = "given"})(n);
  auto z = L::Resizing(6, 6, {.crop_to_aspect_ratio = true, .name = "resize_crop"})(g);
  auto b = L::Resizing(5, 7, {.name = "resize"})(z);
  auto c = L::CenterCrop(3, 4, {.name = "center"})(b);
  auto u = L::CenterCrop(8, 8, {.name = "center_up"})(c);
  auto q = L::Resizing(4, 4, {.interpolation = "nearest", .name = "resize_nearest"})(u);
  auto out = L::Dense(3, {.name = "out"})(L::Flatten({.name = "flat"})(q));
  return std::make_shared<Model>(in, out, "preprocessing");
}

inline ModelPtr resizing_pad() {
  auto in = L::Input({5, 8, 2}, {.name = "in"});
  auto m = L::Conv2D(2, {1, 1}, {.activation = "tanh", .name = "mix"})(in);
  auto a = L::Resizing(6, 6, {.pad_to_aspect_ratio = true, .fill_value = 0.5, .name = "pad_rows"})(m);
  auto b = L::Resizing(4, 7, {.interpolation = "nearest", .pad_to_aspect_ratio = true, .name = "pad_cols"})(a);
  auto c = L::Resizing(4, 7, {.pad_to_aspect_ratio = true, .name = "pad_none"})(b);
  auto d = L::Resizing(5, 5, {.pad_to_aspect_ratio = true, .fill_value = -1.0, .name = "pad_odd"})(c);
  auto out = L::Dense(3, {.name = "out"})(L::Flatten({.name = "flat"})(d));
  return std::make_shared<Model>(in, out, "resizing_pad");
}

inline ModelPtr conv_family() {
  auto in = L::Input({6, 6, 4}, {.name = "in"});
  auto g = L::Conv2D(6, 3, {.padding = "same", .groups = 2, .activation = "tanh", .name = "grouped"})(in);
  auto d = L::DepthwiseConv2D(3, {.strides = {2}, .padding = "same", .depth_multiplier = 2, .name = "dw"})(g);
  auto sep = L::SeparableConv2D(
      5, {2, 3}, {.padding = "same", .depth_multiplier = 2, .activation = "tanh", .name = "sep"})(d);
  auto t = L::Conv2DTranspose(
      4, 3, {.strides = {2}, .padding = "same", .output_padding = {0}, .activation = "tanh", .name = "tconv"})(sep);
  auto tv = L::Conv2DTranspose(
      3, {2, 3}, {.strides = {2, 1}, .padding = "valid", .activation = "tanh", .name = "tconv_valid"})(sep);
  auto un = L::UpSampling2D({2, 1}, {.name = "up_nearest"})(t);
  auto ub = L::UpSampling2D(2, {.interpolation = "bilinear", .name = "up_bilinear"})(tv);
  auto cn = L::Cropping2D(std::vector<std::vector<std::int64_t>>{{1, 2}, {0, 1}}, {.name = "crop"})(un);
  auto cb = L::Cropping2D(std::vector<std::int64_t>{2, 3}, {.name = "crop_sym"})(ub);
  auto f = L::Concatenate({.name = "cat"})(
      {L::GlobalAveragePooling2D({.name = "gap1"})(cn), L::GlobalAveragePooling2D({.name = "gap2"})(cb)});
  auto out = L::Dense(3, {.name = "out"})(f);
  return std::make_shared<Model>(in, out, "conv_family");
}

// The 3-D layers (make_golden.py's case_conv3d_family).
inline ModelPtr conv3d_family() {
  using Pairs = std::vector<std::vector<std::int64_t>>;
  auto in = L::Input({4, 5, 4, 2}, {.name = "in"});
  auto c = L::Conv3D(4, {2, 3, 2}, {.padding = "same", .groups = 2, .activation = "tanh", .name = "conv"})(in);
  auto p = L::MaxPooling3D(2, {.padding = "same", .name = "max"})(c);                                  // (2, 3, 2, 4)
  auto z = L::ZeroPadding3D(Pairs{{1, 0}, {0, 1}, {1, 1}}, {.name = "pad"})(p);                        // (3, 4, 4, 4)
  auto d = L::Conv3D(3, 2, {.strides = {1, 2, 2}, .activation = "tanh", .name = "conv_strided"})(z);   // (2, 2, 2, 3)
  auto t = L::Conv3DTranspose(3, 3, {.strides = {2}, .padding = "same", .output_padding = {1, 0, 1},
                                     .activation = "tanh", .name = "tconv"})(d);                       // (4, 3, 4, 3)
  auto tv = L::Conv3DTranspose(2, {2, 2, 3}, {.strides = {1, 2, 1}, .padding = "valid", .activation = "tanh",
                                              .name = "tconv_valid"})(d);                              // (3, 4, 4, 2)
  auto a = L::AveragePooling3D(2, {.strides = {1, 1, 2}, .padding = "same", .name = "avg"})(t);        // (4, 3, 2, 3)
  auto u = L::UpSampling3D({1, 2, 2}, {.name = "up"})(tv);                                             // (3, 8, 8, 2)
  auto k = L::Cropping3D(Pairs{{1, 0}, {2, 3}, {1, 2}}, {.name = "crop"})(u);                          // (2, 3, 5, 2)
  auto dl = L::Conv3D(2, 2, {.padding = "same", .dilation_rate = {1, 2, 1}, .activation = "tanh",
                             .name = "conv_dilated"})(k);
  auto f = L::Concatenate({.name = "cat"})(
      {L::GlobalAveragePooling3D({.name = "gap"})(a), L::GlobalMaxPooling3D({.name = "gmp"})(dl)});
  auto out = L::Dense(3, {.name = "out"})(f);
  return std::make_shared<Model>(in, out, "conv3d_family");
}

// data_format="channels_first" in every layer that takes it, BatchNormalization on axis 1.
inline ModelPtr channels_first() {
  const std::string cf = "channels_first";
  auto in = L::Input({3, 9, 8}, {.name = "in"});
  auto p = L::ZeroPadding2D(1, {.data_format = cf, .name = "pad"})(in);                         // (3, 11, 10)
  auto c = L::Conv2D(4, 3, {.activation = "tanh", .data_format = cf, .name = "conv"})(p);       // (4, 9, 8)
  auto m = L::MaxPooling2D(2, {.data_format = cf, .name = "max"})(c);                           // (4, 4, 4)
  auto b = L::BatchNormalization({.axis = 1, .name = "bn"})(m);                                 // (4, 4, 4)
  auto s = L::SeparableConv2D(
      5, 2, {.padding = "same", .activation = "tanh", .data_format = cf, .name = "sep"})(b);   // (5, 4, 4)
  auto d = L::DepthwiseConv2D(2, {.strides = {2}, .data_format = cf, .name = "dw"})(s);         // (5, 2, 2)
  auto t = L::Conv2DTranspose(
      3, 2, {.strides = {2}, .activation = "tanh", .data_format = cf, .name = "tconv"})(d);    // (3, 4, 4)
  auto u = L::UpSampling2D(2, {.data_format = cf, .name = "up"})(t);                            // (3, 8, 8)
  auto k = L::Cropping2D(std::vector<std::int64_t>{1, 2}, {.data_format = cf, .name = "crop"})(u);  // (3, 6, 4)
  auto a = L::AveragePooling2D(2, {.data_format = cf, .name = "avg"})(k);                       // (3, 3, 2)
  auto f1 = L::Flatten({.data_format = cf, .name = "flat"})(a);                                 // 18
  auto g = L::GlobalAveragePooling2D({.keepdims = true, .data_format = cf, .name = "gap"})(d);  // (5, 1, 1)
  auto f2 = L::Flatten({.data_format = cf, .name = "flat_gap"})(g);                             // 5
  auto r = L::Reshape({5, 4}, {.name = "seq"})(d);                                              // (5, 4)
  auto q = L::MaxPooling1D(2, {.padding = "same", .data_format = cf, .name = "max1d"})(r);      // (5, 2)
  auto f3 = L::GlobalAveragePooling1D({.data_format = cf, .name = "gap1d"})(q);                 // 5
  auto out = L::Dense(3, {.name = "out"})(L::Concatenate({.name = "cat"})({f1, f2, f3}));
  return std::make_shared<Model>(in, out, "channels_first");
}

// The noise layers at inference (SpatialDropout2D, GaussianNoise, GaussianDropout, AlphaDropout) and
// activity penalties in evaluate's loss.
inline ModelPtr noise_layers() {
  auto in = L::Input({4, 4, 3}, {.name = "in"});
  auto c = L::Conv2D(4, {3, 3}, {.padding = "same", .activation = "tanh", .name = "conv"})(in);
  c = L::SpatialDropout2D(0.3, {.name = "sdrop"})(c);
  c = L::GaussianNoise(0.2, {.name = "noise"})(c);
  c = L::GaussianDropout(0.3, {.name = "gdrop"})(c);
  auto f = L::AlphaDropout(0.2, {.name = "adrop"})(L::Flatten({.name = "flat"})(c));
  auto d = L::Dense(6, {.activation = "selu", .activity_regularizer = regularizers::l1_l2(0.01, 0.02), .name = "d1"})(
      f);
  d = L::ActivityRegularization(0.01, 0.005, {.name = "act_reg"})(d);
  auto out = L::Dense(3, {.name = "out"})(d);
  return std::make_shared<Model>(in, out, "noise_layers");
}

// Activity penalties (Conv1D, Dense, ActivityRegularization) in the training loss, its gradients and
// the optimizer steps; the noise layers with rate 0.
inline ModelPtr activity_regularization() {
  auto in = L::Input({5, 3}, {.name = "in"});
  auto c = L::Conv1D(4, 2, {.activation = "tanh", .activity_regularizer = regularizers::l1(0.01), .name = "conv"})(in);
  auto d = L::Dense(8, {.activation = "tanh", .activity_regularizer = regularizers::l1_l2(0.01, 0.02), .name = "d1"})(
      L::Flatten({.name = "flat"})(c));
  d = L::GaussianNoise(0.0, {.name = "noise"})(d);
  d = L::GaussianDropout(0.0, {.name = "gdrop"})(d);
  d = L::AlphaDropout(0.0, {.name = "adrop"})(d);
  d = L::ActivityRegularization(0.02, 0.01, {.name = "act_reg"})(d);
  auto out = L::Dense(3, {.activity_regularizer = regularizers::l2(0.05), .name = "out"})(d);
  return std::make_shared<Model>(in, out, "activity_regularization");
}

}  // namespace tower::golden_models
