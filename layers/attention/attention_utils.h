// Masks and the masked softmax shared by the attention layers (MultiHeadAttention, Attention,
// AdditiveAttention).
#pragma once

#include <cstdint>

#include "tower/core/graph.h"

namespace tower::layers {

// A Keras mask or attention mask of any dtype as 1 (nonzero: attend) or 0 in `dtype`, as Keras casts
// masks to bool.
SymbolicTensor attention_mask_part(const SymbolicTensor& mask, DType dtype);

// (t, s) of `dtype`: 1 where key position j <= query position i (Keras's causal mask), else 0.
SymbolicTensor causal_mask(Graph& graph, std::int64_t t, std::int64_t s, DType dtype);

// Keras 3's Softmax(mask) over the last axis: logits where mask is 0 become -1e9 (mask broadcasts
// against logits), then the softmax, then the masked probabilities are set to 0 (a fully masked row
// gives zeros rather than a uniform row). mask undefined: a plain softmax.
SymbolicTensor masked_softmax(const SymbolicTensor& logits, const SymbolicTensor& mask);

}  // namespace tower::layers
