// Shape-function helpers.
#include "tower/core/ops/shape_utils.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>

#include "tower/core/checked.h"
#include "tower/core/error.h"
#include "tower/core/window.h"

namespace tower {

bool dims_match(std::int64_t a, std::int64_t b) { return a < 0 || b < 0 || a == b; }

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  int rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> out(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da == 1) out[static_cast<std::size_t>(i)] = db;
    else if (db == 1) out[static_cast<std::size_t>(i)] = da;
    else if (da < 0) out[static_cast<std::size_t>(i)] = db;  // unknown broadcasts to the known size
    else if (db < 0 || da == db) out[static_cast<std::size_t>(i)] = da;
    else raise<ShapeError>("shapes {} and {} cannot be broadcast together", a.to_string(), b.to_string());
  }
  return Shape(std::move(out));
}

void expect_rank(const TensorSpec& spec, int rank, const char* what) {
  if (spec.shape.rank() != rank)
    raise<ShapeError>("{} must have rank {}, got shape {}", what, rank, spec.shape.to_string());
}

void expect_min_rank(const TensorSpec& spec, int rank, const char* what) {
  if (spec.shape.rank() < rank)
    raise<ShapeError>("{} must have rank {} or more, got shape {}", what, rank, spec.shape.to_string());
}

void expect_floating(const TensorSpec& spec, const char* what) {
  if (!is_floating(spec.dtype)) raise<DTypeError>("{} must be a float tensor, got {}", what, dtype_name(spec.dtype));
}

void expect_integer(const TensorSpec& spec, const char* what) {
  if (!is_integer(spec.dtype)) raise<DTypeError>("{} must be an integer tensor, got {}", what, dtype_name(spec.dtype));
}

void expect_same_dtype(const TensorSpec& a, const TensorSpec& b, const char* what_a, const char* what_b) {
  if (a.dtype != b.dtype)
    raise<DTypeError>("{} and {} must have the same dtype, got {} and {}", what_a, what_b, dtype_name(a.dtype),
                      dtype_name(b.dtype));
}

void expect_num_inputs(const std::vector<TensorSpec>& inputs, std::size_t count) {
  if (inputs.size() != count) raise<ValueError>("expected {} inputs, got {}", count, inputs.size());
}

std::vector<int> normalize_axes(const std::vector<std::int64_t>& axes, int rank) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (auto a : axes) {
    auto n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank) raise<ShapeError>("axis {} is out of range for rank {}", a, rank);
    out.push_back(static_cast<int>(n));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::int64_t> resolve_perm(const std::vector<std::int64_t>& perm_attr, int rank) {
  std::vector<std::int64_t> perm = perm_attr;
  if (perm.empty()) {  // NumPy's default: reverse the axes
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int>(perm.size()) != rank)
    raise<ShapeError>("perm [{}] has {} entries for a tensor of rank {}", fmt::join(perm_attr, ", "), perm.size(),
                      rank);
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (auto p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<std::size_t>(p)])
      raise<ShapeError>("perm [{}] is not a permutation of 0..{}", fmt::join(perm_attr, ", "), rank - 1);
    seen[static_cast<std::size_t>(p)] = true;
  }
  return perm;
}

std::vector<int> sum_to_axes(const Shape& x, const Shape& like) {
  std::vector<int> axes;
  const int lead = x.rank() - like.rank();
  for (int d = 0; d < x.rank(); ++d)
    if (d < lead || (like[d - lead] == 1 && x[d] != 1)) axes.push_back(d);
  return axes;
}

AxisLanes lanes_around(const Shape& shape, int axis_attr, const char* op) {
  const int axis = shape.normalize_axis(axis_attr, op);
  AxisLanes l;
  for (int i = 0; i < axis; ++i) l.outer *= shape[i];
  l.n = shape[axis];
  for (int i = axis + 1; i < shape.rank(); ++i) l.inner *= shape[i];
  return l;
}

std::vector<std::int64_t> pad_befores(const std::vector<std::int64_t>& paddings) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < paddings.size(); i += 2) out.push_back(paddings[i]);
  return out;
}

std::vector<std::int64_t> largest_remainder_split(std::int64_t n, const std::vector<std::int64_t>& weights) {
  std::int64_t total = 0;
  for (auto w : weights) {
    if (w < 0) raise<ValueError>("split weights must be >= 0, got [{}]", fmt::join(weights, ", "));
    total = checked_add(
        total, w, [&] { return fmt::format("the sum of the split weights [{}]", fmt::join(weights, ", ")); },
        "give smaller weights: only their proportions count (3:2 is 60 % and 40 %)");
  }
  if (weights.empty() || total == 0)
    raise<ValueError>("split weights need at least one entry above 0, got [{}]", fmt::join(weights, ", "));
  if (n < 0) raise<ValueError>("cannot split {} items", n);
  // n * w_i in 128 bits: both are below 2^63, so the product is exact and the shares are as the
  // formula says for any n and weights (in 64 bits n * w overflowed for a huge weight).
  std::vector<std::int64_t> shares(weights.size()), remainders(weights.size());
  std::vector<std::size_t> order(weights.size());
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const __int128 part = static_cast<__int128>(n) * weights[i];
    shares[i] = static_cast<std::int64_t>(part / total);  // <= n
    remainders[i] = static_cast<std::int64_t>(part % total);
    given += shares[i];  // <= n: the shares' floors
    order[i] = i;
  }
  // The leftover units to the largest remainders (n w_i mod W), the lower index first among equals.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
  for (std::size_t k = 0; given < n; ++k, ++given) ++shares[order[k]];
  return shares;
}

std::pair<std::int64_t, std::int64_t> share_range(std::int64_t n, const std::vector<std::int64_t>& weights, int index) {
  const auto shares = largest_remainder_split(n, weights);
  if (index < 0 || index >= static_cast<int>(shares.size()))
    raise<ValueError>("share {} does not exist: the split has {} shares", index, shares.size());
  std::int64_t begin = 0;
  for (int i = 0; i < index; ++i) begin += shares[static_cast<std::size_t>(i)];
  return {begin, shares[static_cast<std::size_t>(index)]};
}

// A pair of positive integers (strides, dilation_rate, pool_size); ValueError otherwise.
std::pair<std::int64_t, std::int64_t> positive_pair(const Attrs& attrs, const char* key) {
  const auto& v = attrs.get_ints(key);
  if (v.size() != 2 || v[0] < 1 || v[1] < 1)
    raise<ValueError>("{} must be two positive integers, got [{}]", key, fmt::join(v, ", "));
  return {v[0], v[1]};
}

bool is_same_padding(const Attrs& attrs) {
  const auto& padding = attrs.get_string("padding");
  if (padding == "same") return true;
  if (padding == "valid") return false;
  raise<ValueError>("padding must be \"same\" or \"valid\", got \"{}\"", padding);
}

// Output length of one spatial axis (-1 when the input length is unknown). With "valid" padding a
// window (k taps, dilation d) longer than the input has no position: ShapeError naming the fix.
std::int64_t window_out(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t dilation, bool same,
                        const char* what, const char* axis) {
  // The geometry (core/window.h, CUDA code too) computes unchecked, so a window whose span, or an input
  // padded by it, does not fit in 64 bits is refused here, where every window op's shape comes from.
  const char* fix = "use a smaller window or dilation";
  const std::int64_t span_checked =
      checked_add(checked_mul(k - 1, dilation, "the span of a window, (size - 1) * dilation + 1", fix), 1,
                  "the span of a window, (size - 1) * dilation + 1", fix);
  if (in >= 0 && same) (void)checked_add(in, span_checked, "an input padded for a window", fix);
  const auto padding = same ? window::Padding::same : window::Padding::valid;
  const std::int64_t out = window::output_length(in, k, stride, dilation, padding);
  const std::int64_t span = window::span(k, dilation);
  if (out == 0)
    raise<ShapeError>(
        "the {} spans {} along the {} (size {}, dilation {}) but the input {} is only {} with "
        "padding \"valid\"; use padding \"same\", a smaller {} or a larger input",
        what, span, axis, k, dilation, axis, in, what);
  return out;
}

// (batch, out_h, out_w) of a 2-D window op on x (batch, h, w, c).
std::int64_t transpose_length(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t dilation, bool same,
                              std::int64_t output_padding) {
  if (in < 0) return -1;
  const std::int64_t span = window::span(k, dilation);
  if (output_padding < 0) return same ? in * stride : in * stride + std::max<std::int64_t>(span - stride, 0);
  return (in - 1) * stride + span - 2 * (same ? span / 2 : 0) + output_padding;
}

Shape window_output(const Shape& x, std::int64_t kh, std::int64_t kw, const Attrs& attrs, const char* what,
                    bool dilated, std::int64_t channels) {
  auto [sh, sw] = positive_pair(attrs, "strides");
  std::int64_t dh = 1, dw = 1;
  if (dilated) std::tie(dh, dw) = positive_pair(attrs, "dilation_rate");
  const bool same = is_same_padding(attrs);
  return Shape{x[0], window_out(x[1], kh, sh, dh, same, what, "height"),
               window_out(x[2], kw, sw, dw, same, what, "width"), channels};
}

}  // namespace tower
