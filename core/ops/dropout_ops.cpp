// The dropout op: a random mask scaled by 1 / (1 - rate), and its gradient. Kernels in
// backends/cpu/dropout_kernels.cpp and backends/cuda/dropout_ops.cpp.
#include <fmt/ranges.h>

#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace {

using Specs = std::vector<TensorSpec>;
using Grads = std::vector<SymbolicTensor>;

// ---- dropout ------------------------------------------------------------------------------------------

Specs dropout_shape(const Specs& in, const Attrs& attrs) {
  if (in.size() != 1 && in.size() != 2)
    raise<ValueError>("dropout takes x and an optional row offset, got {} inputs", in.size());
  expect_floating(in[0], "x");
  if (in.size() == 2 && (in[1].dtype != DType::int64 || in[1].shape.rank() != 0))
    raise<ValueError>("dropout: the row offset must be an int64 scalar, got {}", in[1].to_string());
  double rate = attrs.get_float("rate");
  if (!(rate >= 0.0 && rate < 1.0))
    raise<ValueError>("rate must be in [0, 1), got {}; it is the fraction of inputs to drop", rate);
  attrs.get_int("seed");
  return {in[0], in[0]};
}

Grads dropout_grad(Node& node, const Grads& g) {
  Grads out(node.inputs().size());                                   // the row offset has none
  if (g[0].defined()) out[0] = ops::multiply(g[0], node.output(1));  // the mask holds 0 or 1 / (1 - rate)
  return out;
}

}  // namespace

namespace ops {

std::vector<SymbolicTensor> dropout(const SymbolicTensor& x, double rate, std::uint64_t seed,
                                    const SymbolicTensor& row_offset) {
  // The attr stores the seed's 64 bits; kernels read them back as uint64.
  std::vector<SymbolicTensor> inputs{x};
  if (row_offset.defined()) inputs.push_back(row_offset);
  return x.graph().add(op_names::dropout, inputs, {{"rate", rate}, {"seed", static_cast<std::int64_t>(seed)}});
}

}  // namespace ops

void register_dropout_ops() { register_op({.name = op_names::dropout, .shape = dropout_shape, .grad = dropout_grad}); }

}  // namespace tower
