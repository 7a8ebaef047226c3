// Merge.
#include "tower/layers/merging/merge.h"

#include <algorithm>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Merge::Merge(std::string class_name, const MergeOptions& options)
    : Layer(options.name, to_snake_case(class_name)), class_name_(std::move(class_name)) {}

void Merge::check_shapes(const std::vector<Shape>& shapes) const {
  if (shapes.empty()) raise<ValueError>("{}: needs a list of at least one input, got none", describe(*this));
  for (std::size_t i = 0; i < shapes.size(); ++i)
    if (shapes[i].rank() < 1)
      raise<ShapeError>("{}: input {} is a scalar; inputs need a batch axis", describe(*this), i);
  // Every pair, axes aligned from the end of the non-batch part, as Keras's _compute_elementwise_op_output_shape.
  for (std::size_t i = 1; i < shapes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const Shape &a = shapes[j], &b = shapes[i];
      bool ok = a[0] < 0 || b[0] < 0 || a[0] == b[0];  // batch sizes
      for (int k = 1; ok && k < std::min(a.rank(), b.rank()); ++k) {
        std::int64_t da = a.dim(-k), db = b.dim(-k);
        ok = da < 0 || db < 0 || da == db || da == 1 || db == 1;
      }
      if (!ok)
        raise<ShapeError>(
            "{}: input {} has shape {} but input {} has shape {}; merged inputs need the same size on "
            "every axis but the batch (or size 1, which broadcasts)",
            describe(*this), j, a.to_string(), i, b.to_string());
    }
}

std::vector<SymbolicTensor> Merge::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  std::vector<Shape> shapes;
  for (const auto& x : inputs) shapes.push_back(x.shape());
  check_shapes(shapes);
  int rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.rank());
  std::vector<SymbolicTensor> aligned;
  for (const auto& x : inputs) {
    if (x.rank() == rank) {
      aligned.push_back(x);
      continue;
    }
    // (batch, d...) -> (batch, 1, ..., 1, d...), so that broadcasting lines up the non-batch axes.
    std::vector<std::int64_t> dims{-1};
    dims.insert(dims.end(), static_cast<std::size_t>(rank - x.rank()), 1);
    dims.insert(dims.end(), x.shape().dims().begin() + 1, x.shape().dims().end());
    aligned.push_back(ops::reshape(x, dims));
  }
  return {merge(aligned)};
}

SymbolicTensor Merge::fold(const std::vector<SymbolicTensor>& inputs, BinaryOp op) {
  SymbolicTensor y = inputs.at(0);
  for (std::size_t i = 1; i < inputs.size(); ++i) y = op(y, inputs[i]);
  return y;
}

std::vector<SymbolicTensor> Merge::compute_mask(const std::vector<SymbolicTensor>&,
                                                const std::vector<SymbolicTensor>& masks) const {
  SymbolicTensor all;
  for (const auto& m : masks)
    if (m.defined()) all = all.defined() ? ops::multiply(all, m) : m;
  return {all};
}

}  // namespace tower::layers
