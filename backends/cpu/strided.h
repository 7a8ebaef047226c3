// Row-wise iteration over broadcast or reduced operands: the index arithmetic the CPU's
// elementwise and reduction kernels share.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tower/core/shape.h"

namespace tower::cpu {

using Dims = std::vector<std::int64_t>;

// broadcast_strides (core/shape.h) gives the strides of a broadcast operand.

// Calls fn(row_offsets, length) for rows [row_begin, row_end) of an iteration over `dims`, where a
// row runs along the last dimension. row_offsets[k] is operand k's element offset at the row start
// (operand k has strides strides[k]); along the row, operand k advances by strides[k].back().
template <std::size_t N, typename F>
void for_each_row(const Dims& dims, const std::array<const Dims*, N>& strides, std::int64_t row_begin,
                  std::int64_t row_end, F&& fn) {
  const int rank = static_cast<int>(dims.size());
  if (rank == 0) {
    std::array<std::int64_t, N> zero{};
    if (row_begin < row_end) fn(zero, std::int64_t{1});
    return;
  }
  const std::int64_t len = dims[static_cast<std::size_t>(rank - 1)];
  // Odometer over the outer dims, started at row_begin.
  Dims index(static_cast<std::size_t>(rank), 0);
  std::int64_t r = row_begin;
  for (int d = rank - 2; d >= 0; --d) {
    index[static_cast<std::size_t>(d)] = r % dims[static_cast<std::size_t>(d)];
    r /= dims[static_cast<std::size_t>(d)];
  }
  std::array<std::int64_t, N> offsets{};
  for (std::size_t k = 0; k < N; ++k)
    for (int d = 0; d < rank - 1; ++d) offsets[k] += index[static_cast<std::size_t>(d)] * (*strides[k])[static_cast<std::size_t>(d)];
  for (std::int64_t row = row_begin; row < row_end; ++row) {
    fn(offsets, len);
    for (int d = rank - 2; d >= 0; --d) {
      auto du = static_cast<std::size_t>(d);
      ++index[du];
      for (std::size_t k = 0; k < N; ++k) offsets[k] += (*strides[k])[du];
      if (index[du] < dims[du]) break;
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= index[du] * (*strides[k])[du];
      index[du] = 0;
    }
  }
}

inline std::int64_t num_rows(const Dims& dims) {
  std::int64_t n = 1;
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) n *= dims[i];
  return dims.empty() ? 1 : n;
}

// A reduction of `in` over `axes` seen as (outer, reduced, inner) when the reduced axes are
// consecutive (after dropping size-1 axes); `contiguous` is false otherwise.
struct ReduceLayout {
  std::int64_t outer = 1, reduced = 1, inner = 1;
  bool contiguous = true;
};
ReduceLayout reduce_layout(const Shape& in, const std::vector<int>& axes);

// Strides that map an element of `in` to its slot in the reduction output (0 along reduced axes),
// with in's rank: out_strides[d] is the keepdims output's stride, or 0 if d is reduced.
Dims reduced_strides(const Shape& in, const std::vector<int>& axes);

}  // namespace tower::cpu

namespace tower {
struct KernelContext;
class Tensor;
}  // namespace tower

namespace tower::cpu {
// out = sum of x over `axes` (sorted, unique); out holds x.num_elements() / reduced elements
// (any shape with that count). Defined in reduce_kernels.cpp; sum_to and bias_add_grad use it.
void sum_over_axes(KernelContext& ctx, const Tensor& x, const std::vector<int>& axes, Tensor& out);
}  // namespace tower::cpu
