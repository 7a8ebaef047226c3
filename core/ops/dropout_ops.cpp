// The dropout op (a random mask scaled by 1 / (1 - rate), and its gradient) and the random tensors
// random_uniform and random_normal. Kernels in backends/cpu/dropout_kernels.cpp and
// backends/cuda/dropout_ops.cpp.
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

// ---- random_uniform, random_normal ---------------------------------------------------------------

Specs random_shape(const char* op, const Specs& in, const Attrs& attrs) {
  if (in.size() != 1 && in.size() != 2)
    raise<ValueError>("{} takes a tensor giving the shape and dtype and an optional row offset, got {} inputs", op,
                      in.size());
  expect_floating(in[0], "x");
  if (in.size() == 2 && (in[1].dtype != DType::int64 || in[1].shape.rank() != 0))
    raise<ValueError>("{}: the row offset must be an int64 scalar, got {}", op, in[1].to_string());
  attrs.get_int("seed");
  std::vector<std::int64_t> dims = attrs.get_ints("shape");
  for (std::size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] >= 0) continue;
    if (dims[a] != -1 || static_cast<int>(a) >= in[0].shape.rank())
      raise<ValueError>("{}: shape {} has entry {} at axis {}; entries are sizes, or -1 for x's size on an axis x "
                        "has (x: {})",
                        op, fmt::format("{}", dims), dims[a], a, in[0].to_string());
    dims[a] = in[0].shape[static_cast<int>(a)];
  }
  return {TensorSpec{Shape(dims), in[0].dtype}};
}

Specs random_uniform_shape(const Specs& in, const Attrs& attrs) {
  const double lo = attrs.get_float("minval"), hi = attrs.get_float("maxval");
  if (!(lo <= hi)) raise<ValueError>("random_uniform: minval {} must not exceed maxval {}", lo, hi);
  return random_shape(op_names::random_uniform, in, attrs);
}

Specs random_normal_shape(const Specs& in, const Attrs& attrs) {
  const double stddev = attrs.get_float("stddev");
  attrs.get_float("mean");
  if (!(stddev >= 0.0)) raise<ValueError>("random_normal: stddev must be >= 0, got {}", stddev);
  return random_shape(op_names::random_normal, in, attrs);
}

Grads no_grad(Node& node, const Grads&) { return Grads(node.inputs().size()); }  // x gives only the shape

std::vector<std::int64_t> full_shape(const SymbolicTensor& x, const std::vector<std::int64_t>& shape) {
  return shape.empty() ? std::vector<std::int64_t>(static_cast<std::size_t>(x.rank()), -1) : shape;
}

SymbolicTensor random_op(const char* op, const SymbolicTensor& x, Attrs attrs, std::uint64_t seed,
                         const SymbolicTensor& row_offset, const std::vector<std::int64_t>& shape) {
  std::vector<SymbolicTensor> inputs{x};
  if (row_offset.defined()) inputs.push_back(row_offset);
  attrs.set("seed", static_cast<std::int64_t>(seed));
  attrs.set("shape", full_shape(x, shape));
  return x.graph().add(op, inputs, std::move(attrs))[0];
}

}  // namespace

namespace ops {

SymbolicTensor random_uniform(const SymbolicTensor& x, double minval, double maxval, std::uint64_t seed,
                              const SymbolicTensor& row_offset, const std::vector<std::int64_t>& shape) {
  return random_op(op_names::random_uniform, x, Attrs{{"minval", minval}, {"maxval", maxval}}, seed, row_offset,
                   shape);
}

SymbolicTensor random_normal(const SymbolicTensor& x, double mean, double stddev, std::uint64_t seed,
                             const SymbolicTensor& row_offset, const std::vector<std::int64_t>& shape) {
  return random_op(op_names::random_normal, x, Attrs{{"mean", mean}, {"stddev", stddev}}, seed, row_offset, shape);
}

std::vector<SymbolicTensor> dropout(const SymbolicTensor& x, double rate, std::uint64_t seed,
                                    const SymbolicTensor& row_offset) {
  // The attr stores the seed's 64 bits; kernels read them back as uint64.
  std::vector<SymbolicTensor> inputs{x};
  if (row_offset.defined()) inputs.push_back(row_offset);
  return x.graph().add(op_names::dropout, inputs, {{"rate", rate}, {"seed", static_cast<std::int64_t>(seed)}});
}

}  // namespace ops

void register_dropout_ops() {
  register_op({.name = op_names::dropout, .shape = dropout_shape, .grad = dropout_grad});
  register_op({.name = op_names::random_uniform, .shape = random_uniform_shape, .grad = no_grad});
  register_op({.name = op_names::random_normal, .shape = random_normal_shape, .grad = no_grad});
}

}  // namespace tower
