// Merge: the base of the layers that combine several inputs (Add, Subtract, Multiply, Average,
// Maximum, Concatenate), as Keras's Merge: input checks, and ranks aligned after the batch axis.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct MergeOptions {
  std::string name;
};

// Elementwise merges: inputs (batch, ...) whose shapes match on every axis but the batch, where a
// size 1 broadcasts and a lower-rank input gets size-1 axes after its batch axis, as Keras does.
// No weights.
class Merge : public Layer {
 public:
  void build(const std::vector<Shape>& input_shapes) override { check_shapes(input_shapes); }
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::string class_name() const override { return class_name_; }
  // The inputs' masks combined: a step counts where every input that has a mask keeps it (Keras).
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;

 protected:
  // class_name: Keras's ("Add"); the default name is its snake case.
  Merge(std::string class_name, const MergeOptions& options);
  // Throws ShapeError/ValueError naming the inputs that do not fit. The default is the elementwise rule.
  virtual void check_shapes(const std::vector<Shape>& shapes) const;
  // Combines the checked inputs, all of one rank.
  virtual SymbolicTensor merge(const std::vector<SymbolicTensor>& inputs) const = 0;
  // op(...op(op(x0, x1), x2)..., xn).
  using BinaryOp = SymbolicTensor (*)(const SymbolicTensor&, const SymbolicTensor&);
  static SymbolicTensor fold(const std::vector<SymbolicTensor>& inputs, BinaryOp op);

 private:
  std::string class_name_;
};

}  // namespace tower::layers
