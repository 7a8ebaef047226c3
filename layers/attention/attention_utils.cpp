// Masks and the masked softmax of the attention layers.
#include "tower/layers/attention/attention_utils.h"

#include <vector>

#include "tower/core/ops.h"

namespace tower::layers {

SymbolicTensor attention_mask_part(const SymbolicTensor& mask, DType dtype) {
  Graph& g = mask.graph();
  const SymbolicTensor m = mask.dtype() == dtype ? mask : ops::cast(mask, dtype);
  return ops::subtract(g.constant(Tensor::scalar(1.0, dtype)), ops::equal(m, g.constant(Tensor::scalar(0.0, dtype))));
}

SymbolicTensor causal_mask(Graph& graph, std::int64_t t, std::int64_t s, DType dtype) {
  return graph.constant(dispatch_floating(dtype, "causal_mask", [&]<typename T>() {
    std::vector<T> values(static_cast<std::size_t>(t * s), T(0));
    for (std::int64_t i = 0; i < t; ++i)
      for (std::int64_t j = 0; j <= i && j < s; ++j) values[static_cast<std::size_t>(i * s + j)] = T(1);
    return Tensor::from_vector<T>({t, s}, values);
  }));
}

SymbolicTensor masked_softmax(const SymbolicTensor& logits, const SymbolicTensor& mask) {
  if (!mask.defined()) return ops::softmax(logits, -1);
  Graph& g = logits.graph();
  // where(mask, logits, -1e9) as logits * mask + (mask - 1) * 1e9: exact for a 0/1 mask.
  const SymbolicTensor one = g.constant(Tensor::scalar(1.0, logits.dtype()));
  const SymbolicTensor padded =
      ops::add(ops::multiply(logits, mask), ops::scale(ops::subtract(mask, one), 1e9));
  return ops::multiply(ops::softmax(padded, -1), mask);
}

}  // namespace tower::layers
