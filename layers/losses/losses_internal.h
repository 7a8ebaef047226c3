// Helpers shared by losses.cpp and metrics.cpp (Keras's losses/loss.py utilities), defined in losses.cpp.
#pragma once

#include <functional>
#include <string>

#include "tower/core/graph.h"

namespace tower::losses::internal {

// A scalar constant of x's dtype (broadcast by the elementwise ops).
SymbolicTensor constant_like(const SymbolicTensor& x, double value);
SymbolicTensor as_dtype(const SymbolicTensor& x, DType dtype);  // a cast only when needed
SymbolicTensor squeeze_last(const SymbolicTensor& x);           // (..., 1) -> (...)
SymbolicTensor expand_last(const SymbolicTensor& x);            // (...) -> (..., 1)
// Keras's squeeze_or_expand_to_same_rank: drops or adds a trailing 1 when the ranks differ by one.
void match_ranks(SymbolicTensor& y_true, SymbolicTensor& y_pred);
// A user's loss or metric function, called as Keras calls one (LossFunctionWrapper; tf.keras 2's
// MeanMetricWrapper for metrics): y_true and y_pred through match_ranks first, so that labels (batch,)
// meet a (batch, 1) output as (batch, 1) and a function ported line by line gives the built-in's numbers.
std::function<SymbolicTensor(const SymbolicTensor&, const SymbolicTensor&)> with_matched_ranks(
    std::function<SymbolicTensor(const SymbolicTensor&, const SymbolicTensor&)> function);
// Per-sample values (batch,): the mean over every axis after the batch.
SymbolicTensor per_sample(const SymbolicTensor& values);
// per_sample of values whose masked steps are left out (Keras's apply_mask): with mask (batch, time)
// of values' rank, values · mask · (steps / unmasked steps), so that the batch mean of the result is
// the unmasked steps' mean. Without a mask of that rank, per_sample(values). sample_weight: undefined,
// one weight per sample (batch,), or one per step of the values ((batch, time) for values (batch, time)),
// multiplied in before the mean, so that the batch mean is Keras's sum(values · weights) / values' size.
SymbolicTensor masked_per_sample(SymbolicTensor values, const SymbolicTensor& mask,
                                 const SymbolicTensor& sample_weight = {});
// True when the shapes have the same rank and agree wherever both dimensions are known.
bool same_shape(const Shape& a, const Shape& b);
// True when `name` (any spelling Loss accepts) is one of tower's own losses, not a user's.
bool is_builtin_loss(const std::string& name);

}  // namespace tower::losses::internal
