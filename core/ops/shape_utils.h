// Helpers for op shape functions: contract checks that throw ShapeError/DTypeError with a short reason.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tower/core/graph.h"

namespace tower {

// NumPy broadcasting of two shapes (unknown dims broadcast as unknown); throws ShapeError.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Throws ShapeError unless spec has rank `rank`; `what` names the argument ("kernel").
void expect_rank(const TensorSpec& spec, int rank, const char* what);
void expect_min_rank(const TensorSpec& spec, int rank, const char* what);
void expect_floating(const TensorSpec& spec, const char* what);
void expect_integer(const TensorSpec& spec, const char* what);
void expect_same_dtype(const TensorSpec& a, const TensorSpec& b, const char* what_a, const char* what_b);
void expect_num_inputs(const std::vector<TensorSpec>& inputs, std::size_t count);
// Dimension equality where -1 (unknown) matches anything.
bool dims_match(std::int64_t a, std::int64_t b);
// Normalizes reduction axes (empty = all) to sorted, unique, non-negative axes.
// transpose's perm attribute resolved: empty means the axes reversed (NumPy's default); anything but a
// permutation of 0..rank-1 throws ShapeError.
std::vector<std::int64_t> resolve_perm(const std::vector<std::int64_t>& perm_attr, int rank);
std::vector<int> normalize_axes(const std::vector<std::int64_t>& axes, int rank);

// sum_to's reduction: the axes of x along which `like` was broadcast (x's leading extra axes, and
// those where like has size 1 and x does not).
std::vector<int> sum_to_axes(const Shape& x, const Shape& like);

// A tensor seen as (outer, n, inner) around one axis (softmax's): outer * inner "lanes" of n
// elements, `inner` apart. The last axis (inner == 1) is the common, contiguous case.
struct AxisLanes {
  std::int64_t outer = 1, n = 1, inner = 1;
};
AxisLanes lanes_around(const Shape& shape, int axis_attr, const char* op);

// n split by integer weights (>= 0, at least one > 0) by largest remainder: share i gets
// floor(n w_i / W) and the leftover units go to the largest fractional parts, the lower index first
// among equals. The shares sum to n; a share may be 0. Throws ValueError for bad weights.
std::vector<std::int64_t> largest_remainder_split(std::int64_t n, const std::vector<std::int64_t>& weights);
// Where share `index` of that split starts, and how many it holds.
std::pair<std::int64_t, std::int64_t> share_range(std::int64_t n, const std::vector<std::int64_t>& weights, int index);

// pad's padding before each axis, from its flat (before, after) pairs.
std::vector<std::int64_t> pad_befores(const std::vector<std::int64_t>& paddings);

// ---- window ops (conv, pooling); the geometry itself is core/window.h ----
// A pair of positive integers (strides, dilation_rate, pool_size); ValueError otherwise.
std::pair<std::int64_t, std::int64_t> positive_pair(const Attrs& attrs, const char* key);
// The padding attr: true for "same", false for "valid"; ValueError otherwise.
bool is_same_padding(const Attrs& attrs);
// Output length of one spatial axis (-1 when the input length is unknown). With "valid" padding a
// window (k taps, dilation d) longer than the input has no position: ShapeError naming the fix.
std::int64_t window_out(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t dilation, bool same,
                        const char* what, const char* axis);
// Keras's deconv_output_length, one axis of a transposed convolution: the length whose convolution
// (same strides, padding, dilation) has `in` positions; output_padding < 0 means None (the smallest
// such length, "valid" taking the whole last window). -1 when `in` is unknown.
std::int64_t transpose_length(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t dilation, bool same,
                              std::int64_t output_padding);
// (batch, out_h, out_w, channels) of a 2-D window op on x (batch, h, w, c).
Shape window_output(const Shape& x, std::int64_t kh, std::int64_t kw, const Attrs& attrs, const char* what,
                    bool dilated, std::int64_t channels);

}  // namespace tower
