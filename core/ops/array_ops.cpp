// Array manipulation ops: reshape, reshape_like, transpose, reverse, concat, slice, split, pad,
// one_hot, gather, and their gradients (slice_grad, gather_grad, plus the internal concat_grad, pad_grad
// used only when unknown dimensions make the contract ops unable to express a gradient).
#include <algorithm>

#include "tower/core/checked.h"
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace ops {

SymbolicTensor reshape(const SymbolicTensor& x, Ints shape) {
  return x.graph().add1(op_names::reshape, {x}, {{"shape", std::move(shape)}});
}

SymbolicTensor reshape_like(const SymbolicTensor& x, const SymbolicTensor& like, int keep, Ints tail) {
  return x.graph().add1(op_names::reshape_like, {x, like},
                        {{"keep", static_cast<std::int64_t>(keep)}, {"tail", std::move(tail)}});
}

SymbolicTensor reverse(const SymbolicTensor& x, int axis) {
  return x.graph().add1(op_names::reverse, {x}, {{"axis", static_cast<std::int64_t>(axis)}});
}

SymbolicTensor transpose(const SymbolicTensor& x, Ints perm) {
  return x.graph().add1(op_names::transpose, {x}, {{"perm", std::move(perm)}});
}

SymbolicTensor concat(const std::vector<SymbolicTensor>& xs, int axis) {
  if (xs.empty() || !xs[0].defined()) raise<ValueError>("concat: needs at least one defined input");
  return xs[0].graph().add1(op_names::concat, xs, {{"axis", static_cast<std::int64_t>(axis)}});
}

SymbolicTensor slice(const SymbolicTensor& x, Ints begin, Ints size) {
  return x.graph().add1(op_names::slice, {x}, {{"begin", std::move(begin)}, {"size", std::move(size)}});
}

SymbolicTensor batch_share(const SymbolicTensor& x, Ints ratios, int share) {
  return x.graph().add1(op_names::batch_share, {x}, {{"ratios", std::move(ratios)}, {"share", std::int64_t{share}}});
}

SymbolicTensor batch_share_start(const SymbolicTensor& x, Ints ratios, int share) {
  return x.graph().add1(op_names::batch_share_start, {x},
                        {{"ratios", std::move(ratios)}, {"share", std::int64_t{share}}});
}

SymbolicTensor batch_share_grad(const SymbolicTensor& dy, const SymbolicTensor& x, Ints ratios, int share) {
  return dy.graph().add1(op_names::batch_share_grad, {dy, x},
                         {{"ratios", std::move(ratios)}, {"share", std::int64_t{share}}});
}

SymbolicTensor slice_grad(const SymbolicTensor& dy, const SymbolicTensor& x, Ints begin) {
  return dy.graph().add1(op_names::slice_grad, {dy, x}, {{"begin", std::move(begin)}});
}

std::vector<SymbolicTensor> split(const SymbolicTensor& x, int axis, Ints sizes) {
  return x.graph().add(op_names::split, {x}, {{"axis", static_cast<std::int64_t>(axis)}, {"sizes", std::move(sizes)}});
}

SymbolicTensor pad(const SymbolicTensor& x, Ints paddings, double value) {
  return x.graph().add1(op_names::pad, {x}, {{"paddings", std::move(paddings)}, {"value", value}});
}

SymbolicTensor one_hot(const SymbolicTensor& indices, std::int64_t depth, DType dtype, double on_value,
                       double off_value) {
  return indices.graph().add1(op_names::one_hot, {indices},
                              {{"depth", depth}, {"dtype", dtype}, {"on_value", on_value}, {"off_value", off_value}});
}

SymbolicTensor hashing_bins(const SymbolicTensor& x, std::int64_t num_bins, bool has_mask, std::int64_t mask_value,
                            bool salted, std::int64_t key0, std::int64_t key1) {
  return x.graph().add1(op_names::hashing_bins, {x},
                        {{"num_bins", num_bins},
                         {"has_mask", has_mask},
                         {"mask_value", mask_value},
                         {"salted", salted},
                         {"key0", key0},
                         {"key1", key1}});
}

SymbolicTensor gather(const SymbolicTensor& params, const SymbolicTensor& indices) {
  return params.graph().add1(op_names::gather, {params, indices});
}

SymbolicTensor gather_grad(const SymbolicTensor& dy, const SymbolicTensor& indices, const SymbolicTensor& params) {
  return dy.graph().add1(op_names::gather_grad, {dy, indices, params});
}

}  // namespace ops

namespace {

using Grads = std::vector<SymbolicTensor>;
using Ints = std::vector<std::int64_t>;

std::int64_t count_unknown(const Shape& s) {
  return std::count_if(s.dims().begin(), s.dims().end(), [](std::int64_t d) { return d < 0; });
}

// ---- reshape -------------------------------------------------------------------------------------

// The shape x viewed as (leading..., target...): `leading` are another tensor's dimensions (-1:
// unknown until a Plan is compiled), `target` the wanted ones, whose one -1 is inferred from x's
// element count. The count is checked once x and every dimension are known.
Shape view_shape(const Shape& x, Ints dims, const Ints& target) {
  int infer = -1;  // the position of target's -1 in dims
  for (auto d : target) {
    if (d == -1) {
      if (infer >= 0) raise<ShapeError>("target shape {} has more than one -1", Shape(target).to_string());
      infer = static_cast<int>(dims.size());
    } else if (d < 0) {
      raise<ShapeError>("target shape has a negative dimension {} (only -1, inferred, is allowed)", d);
    }
    dims.push_back(d);
  }
  // Checked: a wrapped product could pass the element count check below. (Errors from shape
  // functions get the op, its inputs and attrs added.)
  std::int64_t known = 1;  // product of the other dimensions
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (static_cast<int>(i) == infer) continue;
    if (dims[i] < 0) return Shape(dims);  // a leading dimension unknown until a Plan is compiled
    known = checked_mul(known, dims[i], "the elements of the target shape", "no tensor can be that large");
  }
  // The batch is unknown at build time: the inferred dimension stays unknown until a Plan is compiled.
  if (!x.is_fully_known()) return Shape(dims);
  const std::int64_t n = x.num_elements();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      raise<ShapeError>("cannot reshape {} ({} elements) into {}: {} is not a multiple of {}", x.to_string(), n,
                        Shape(dims).to_string(), n, known);
    dims[static_cast<std::size_t>(infer)] = n / known;
  } else if (known != n) {
    raise<ShapeError>("cannot reshape {} ({} elements) into {} ({} elements)", x.to_string(), n,
                      Shape(dims).to_string(), known);
  }
  return Shape(dims);
}

std::vector<TensorSpec> reshape_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  return {TensorSpec{view_shape(in[0].shape, {}, attrs.get_ints("shape")), in[0].dtype}};
}

// dy viewed as x: a reshape while x has at most one unknown dimension, else x's shape taken at plan time.
SymbolicTensor viewed_as(const SymbolicTensor& dy, const SymbolicTensor& x) {
  if (count_unknown(x.shape()) <= 1) return ops::reshape(dy, x.shape().dims());  // unknown -> -1
  return ops::reshape_like(dy, x);
}

Grads reshape_grad(Node& node, const Grads& dy) { return {viewed_as(dy[0], node.inputs()[0])}; }

// (x, like) -> x viewed as (like[:keep]..., tail...); without attrs (reshape_grad's) like's whole shape.
std::vector<TensorSpec> reshape_like_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  const Shape& like = in[1].shape;
  const std::int64_t keep = attrs.get_int("keep", -1);
  if (keep < -1 || keep > like.rank())
    raise<ShapeError>("keep {} is out of range for like {} (0..{}, or -1 for all its dimensions)", keep,
                      like.to_string(), like.rank());
  const Ints leading(like.dims().begin(), like.dims().begin() + (keep < 0 ? like.rank() : keep));
  return {TensorSpec{view_shape(in[0].shape, leading, attrs.has("tail") ? attrs.get_ints("tail") : Ints{}),
                     in[0].dtype}};
}

Grads reshape_like_grad(Node& node, const Grads& dy) { return {viewed_as(dy[0], node.inputs()[0]), SymbolicTensor{}}; }

// ---- reverse -------------------------------------------------------------------------------------

std::vector<TensorSpec> reverse_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  if (in[0].shape.rank() == 0) raise<ShapeError>("cannot reverse a scalar; it has no axis");
  in[0].shape.normalize_axis(static_cast<int>(attrs.get_int("axis")), op_names::reverse);
  return {in[0]};
}

// ---- transpose -----------------------------------------------------------------------------------

std::vector<TensorSpec> transpose_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  const Shape& x = in[0].shape;
  Ints perm = resolve_perm(attrs.get_ints("perm"), x.rank());
  Ints out;
  for (auto p : perm) out.push_back(x[static_cast<int>(p)]);
  return {TensorSpec{Shape(out), in[0].dtype}};
}

Grads transpose_grad(Node& node, const Grads& dy) {
  Ints perm = resolve_perm(node.attrs().get_ints("perm"), node.inputs()[0].rank());
  Ints inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return {ops::transpose(dy[0], inverse)};
}

// ---- concat --------------------------------------------------------------------------------------

std::vector<TensorSpec> concat_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  if (in.empty()) raise<ValueError>("needs at least one input");
  const Shape& first = in[0].shape;
  if (first.rank() == 0) raise<ShapeError>("cannot concatenate scalars; reshape them to (1,) first");
  int axis = first.normalize_axis(static_cast<int>(attrs.get_int("axis")), op_names::concat);
  Ints out = first.dims();
  for (std::size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    expect_same_dtype(in[0], in[i], "input 0", fmt::format("input {}", i).c_str());
    if (s.rank() != first.rank())
      raise<ShapeError>("input {} has rank {}, input 0 has rank {}; all inputs need the same rank", i, s.rank(),
                        first.rank());
    for (int d = 0; d < first.rank(); ++d) {
      auto& o = out[static_cast<std::size_t>(d)];
      if (d == axis) {
        o = (o < 0 || s[d] < 0) ? -1 : checked_add(o, s[d], "the length of the joined axis", "no tensor can be that large");
      } else {
        if (!dims_match(o, s[d]))
          raise<ShapeError>("input {} has shape {}, which differs from {} outside axis {}", i, s.to_string(),
                            first.to_string(), axis);
        if (o < 0) o = s[d];
      }
    }
  }
  return {TensorSpec{Shape(out), in[0].dtype}};
}

Grads concat_grad(Node& node, const Grads& dy) {
  const auto& xs = node.inputs();
  int rank = xs[0].rank();
  int axis = xs[0].shape().normalize_axis(static_cast<int>(node.attrs().get_int("axis")));
  bool offsets_known = std::all_of(xs.begin(), xs.end(), [&](const SymbolicTensor& x) { return x.shape()[axis] >= 0; });
  if (!offsets_known) {
    // Along an unknown axis (the batch) the offsets are known only at plan time.
    std::vector<SymbolicTensor> inputs{dy[0]};
    inputs.insert(inputs.end(), xs.begin(), xs.end());
    return dy[0].graph().add(op_names::concat_grad, inputs, {{"axis", static_cast<std::int64_t>(axis)}});
  }
  Grads out;
  std::int64_t offset = 0;
  for (const auto& x : xs) {
    Ints begin(static_cast<std::size_t>(rank), 0), size(static_cast<std::size_t>(rank), -1);
    begin[static_cast<std::size_t>(axis)] = offset;
    size[static_cast<std::size_t>(axis)] = x.shape()[axis];
    out.push_back(ops::slice(dy[0], begin, size));
    offset += x.shape()[axis];
  }
  return out;
}

std::vector<TensorSpec> concat_grad_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  if (in.size() < 2) raise<ValueError>("needs dy and at least one forward input");
  std::vector<TensorSpec> xs(in.begin() + 1, in.end());
  TensorSpec y = concat_shape(xs, attrs)[0];
  if (!in[0].shape.compatible_with(y.shape))
    raise<ShapeError>("dy of shape {} does not match the concatenation's shape {}", in[0].shape.to_string(),
                      y.shape.to_string());
  std::vector<TensorSpec> out;
  for (const auto& x : xs) out.push_back({x.shape, in[0].dtype});
  return out;
}

// ---- batch_share and batch_share_grad --------------------------------------------------------------

std::vector<TensorSpec> batch_share_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  expect_min_rank(in[0], 1, "x");
  auto dims = in[0].shape.dims();
  const auto share = static_cast<int>(attrs.get_int("share"));
  const auto [begin, count] = share_range(std::max<std::int64_t>(dims[0], 0), attrs.get_ints("ratios"), share);
  if (dims[0] >= 0) dims[0] = count;  // an unknown batch stays unknown
  return {TensorSpec{Shape(dims), in[0].dtype}};
}

std::vector<TensorSpec> batch_share_start_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  expect_min_rank(in[0], 1, "x");
  share_range(0, attrs.get_ints("ratios"), static_cast<int>(attrs.get_int("share")));  // checks the ratios
  return {TensorSpec{Shape{}, DType::int64}};
}

std::vector<TensorSpec> batch_share_grad_shape(const std::vector<TensorSpec>& in, const Attrs&) {  // (dy, x)
  expect_num_inputs(in, 2);
  expect_same_dtype(in[0], in[1], "dy", "x");
  return {in[1]};
}

// ---- slice and slice_grad ------------------------------------------------------------------------

std::vector<TensorSpec> slice_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  const Shape& x = in[0].shape;
  const Ints& begin = attrs.get_ints("begin");
  const Ints& size = attrs.get_ints("size");
  if (static_cast<int>(begin.size()) != x.rank() || static_cast<int>(size.size()) != x.rank())
    raise<ShapeError>("begin [{}] and size [{}] need one entry per axis of {}", fmt::join(begin, ", "),
                      fmt::join(size, ", "), x.to_string());
  Ints out;
  for (int i = 0; i < x.rank(); ++i) {
    auto b = begin[static_cast<std::size_t>(i)], s = size[static_cast<std::size_t>(i)];
    if (b < 0) raise<ShapeError>("begin [{}] has a negative entry on axis {}", fmt::join(begin, ", "), i);
    if (s < -1) raise<ShapeError>("size [{}] has an entry below -1 on axis {}", fmt::join(size, ", "), i);
    if (x[i] >= 0) {
      if (b > x[i] || (s >= 0 && s > x[i] - b))  // not b + s, which a huge size overflows
        raise<ShapeError>("slice begin [{}] size [{}] reaches past axis {} of {}", fmt::join(begin, ", "),
                          fmt::join(size, ", "), i, x.to_string());
      out.push_back(s < 0 ? x[i] - b : s);
    } else {
      out.push_back(s);  // -1 on an unknown axis stays unknown
    }
  }
  return {TensorSpec{Shape(out), in[0].dtype}};
}

std::vector<TensorSpec> slice_grad_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 2);
  const Shape& dy = in[0].shape;
  const Shape& x = in[1].shape;
  expect_same_dtype(in[0], in[1], "dy", "x");
  const Ints& begin = attrs.get_ints("begin");
  if (dy.rank() != x.rank() || static_cast<int>(begin.size()) != x.rank())
    raise<ShapeError>("dy {}, x {} and begin [{}] need the same rank", dy.to_string(), x.to_string(),
                      fmt::join(begin, ", "));
  for (int i = 0; i < x.rank(); ++i) {
    auto b = begin[static_cast<std::size_t>(i)];
    if (b < 0) raise<ShapeError>("begin [{}] has a negative entry on axis {}", fmt::join(begin, ", "), i);
    if (x[i] >= 0 && dy[i] >= 0 && (b > x[i] || dy[i] > x[i] - b))
      raise<ShapeError>("dy {} placed at [{}] reaches past axis {} of {}", dy.to_string(), fmt::join(begin, ", "), i,
                        x.to_string());
  }
  return {TensorSpec{x, in[0].dtype}};
}

// ---- split ---------------------------------------------------------------------------------------

std::vector<TensorSpec> split_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  const Shape& x = in[0].shape;
  if (x.rank() == 0) raise<ShapeError>("cannot split a scalar");
  int axis = x.normalize_axis(static_cast<int>(attrs.get_int("axis")), op_names::split);
  const Ints& sizes = attrs.get_ints("sizes");
  if (sizes.empty()) raise<ValueError>("sizes is empty; give the length of each piece");
  std::int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0) raise<ShapeError>("sizes [{}] has a negative entry", fmt::join(sizes, ", "));
    total = checked_add(total, s, "the sum of the sizes", "give the lengths of the pieces of the axis");
  }
  if (x[axis] >= 0 && total != x[axis])
    raise<ShapeError>("sizes [{}] add up to {}, but axis {} of {} has length {}", fmt::join(sizes, ", "), total, axis,
                      x.to_string(), x[axis]);
  std::vector<TensorSpec> out;
  for (auto s : sizes) {
    Shape piece = x;
    piece[axis] = s;
    out.push_back({piece, in[0].dtype});
  }
  return out;
}

Grads split_grad(Node& node, const Grads& dy) {
  bool any = std::any_of(dy.begin(), dy.end(), [](const SymbolicTensor& g) { return g.defined(); });
  if (!any) return {SymbolicTensor{}};
  std::vector<SymbolicTensor> pieces;
  for (int k = 0; k < node.num_outputs(); ++k)
    pieces.push_back(dy[static_cast<std::size_t>(k)].defined() ? dy[static_cast<std::size_t>(k)]
                                                               : ops::zeros_like(node.output(k)));
  return {ops::concat(pieces, static_cast<int>(node.attrs().get_int("axis")))};
}

// ---- pad -----------------------------------------------------------------------------------------

// out[i] = in[i] + sign * (before_i + after_i), unknown staying unknown.
Shape padded(const Shape& x, const Ints& paddings, int sign, const char* what) {
  if (static_cast<int>(paddings.size()) != 2 * x.rank())
    raise<ShapeError>("paddings [{}] needs one (before, after) pair per axis of {} ({} entries)",
                      fmt::join(paddings, ", "), x.to_string(), 2 * x.rank());
  Ints out;
  for (int i = 0; i < x.rank(); ++i) {
    auto b = paddings[static_cast<std::size_t>(2 * i)], a = paddings[static_cast<std::size_t>(2 * i + 1)];
    if (b < 0 || a < 0) raise<ShapeError>("paddings [{}] has a negative entry", fmt::join(paddings, ", "));
    if (x[i] < 0) {
      out.push_back(-1);
      continue;
    }
    auto d = checked_add(x[i], sign * checked_add(b, a, "the paddings of an axis"), "an axis with its paddings",
                         "use smaller paddings");
    if (d < 0) raise<ShapeError>("{} of shape {} is smaller than its paddings [{}]", what, x.to_string(), fmt::join(paddings, ", "));
    out.push_back(d);
  }
  return Shape(out);
}

std::vector<TensorSpec> pad_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  return {TensorSpec{padded(in[0].shape, attrs.get_ints("paddings"), +1, "x"), in[0].dtype}};
}

std::vector<TensorSpec> pad_grad_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  return {TensorSpec{padded(in[0].shape, attrs.get_ints("paddings"), -1, "dy"), in[0].dtype}};
}

Grads pad_grad(Node& node, const Grads& dy) {
  const Shape& x = node.inputs()[0].shape();
  const Ints& paddings = node.attrs().get_ints("paddings");
  Ints begin, size;
  for (int i = 0; i < x.rank(); ++i) {
    auto after = paddings[static_cast<std::size_t>(2 * i + 1)];
    begin.push_back(paddings[static_cast<std::size_t>(2 * i)]);
    if (x[i] >= 0) {
      size.push_back(x[i]);
    } else if (after == 0) {
      size.push_back(-1);  // to the end of dy's axis
    } else {
      // An unknown axis padded at its end: slice cannot say where x ends, so strip the padding.
      return {dy[0].graph().add1(op_names::pad_grad, {dy[0]}, {{"paddings", paddings}})};
    }
  }
  return {ops::slice(dy[0], begin, size)};
}

// ---- one_hot -------------------------------------------------------------------------------------

std::vector<TensorSpec> one_hot_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  expect_integer(in[0], "indices");
  auto depth = attrs.get_int("depth");
  if (depth < 0) raise<ValueError>("depth must be >= 0, got {}", depth);
  DType dtype = attrs.get_dtype("dtype");
  if (dtype == DType::float16 || dtype == DType::bfloat16)
    raise<DTypeError>("dtype {} is not supported (use float32, float64 or an integer type)", dtype_name(dtype));
  Ints out = in[0].shape.dims();
  out.push_back(depth);
  return {TensorSpec{Shape(out), dtype}};
}

// ---- hashing_bins --------------------------------------------------------------------------------

std::vector<TensorSpec> hashing_bins_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  if (in[0].dtype == DType::float16 || in[0].dtype == DType::bfloat16)
    raise<DTypeError>("x must be an integer, float32 or float64 tensor, got {}", dtype_name(in[0].dtype));
  if (attrs.get_int("num_bins") <= 0) raise<ValueError>("num_bins must be > 0, got {}", attrs.get_int("num_bins"));
  return {TensorSpec{in[0].shape, DType::int64}};
}

// ---- gather and gather_grad ----------------------------------------------------------------------

Shape gathered(const Shape& params, const Shape& indices) {
  Ints out = indices.dims();
  out.insert(out.end(), params.dims().begin() + 1, params.dims().end());
  return Shape(out);
}

std::vector<TensorSpec> gather_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 2);
  expect_min_rank(in[0], 1, "params");
  expect_integer(in[1], "indices");
  return {TensorSpec{gathered(in[0].shape, in[1].shape), in[0].dtype}};
}

std::vector<TensorSpec> gather_grad_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 3);
  expect_min_rank(in[2], 1, "params");
  expect_integer(in[1], "indices");
  expect_same_dtype(in[0], in[2], "dy", "params");
  Shape want = gathered(in[2].shape, in[1].shape);
  if (!in[0].shape.compatible_with(want))
    raise<ShapeError>("dy has shape {}, expected {} (indices shape + params shape[1:])", in[0].shape.to_string(),
                      want.to_string());
  return {TensorSpec{in[2].shape, in[0].dtype}};
}

}  // namespace

void register_array_ops() {
  register_op({.name = op_names::reshape, .shape = reshape_shape, .grad = reshape_grad, .alias_input = 0});
  // x viewed with like's leading dims (all of them for reshape gradients whose input has several unknown dims).
  register_op(
      {.name = op_names::reshape_like, .shape = reshape_like_shape, .grad = reshape_like_grad, .alias_input = 0});
  register_op({.name = op_names::transpose, .shape = transpose_shape, .grad = transpose_grad});
  register_op({.name = op_names::reverse, .shape = reverse_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {ops::reverse(dy[0], static_cast<int>(node.attrs().get_int("axis")))};
               }});
  register_op({.name = op_names::concat, .shape = concat_shape, .grad = concat_grad});
  // Internal: (dy, x_0, ..., x_n-1) -> pieces of dy shaped like each x_i (concat along an unknown axis).
  register_op({.name = op_names::concat_grad, .shape = concat_grad_shape});
  register_op({.name = op_names::slice, .shape = slice_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {ops::slice_grad(dy[0], node.inputs()[0], node.attrs().get_ints("begin"))};
               }});
  register_op({.name = op_names::slice_grad, .shape = slice_grad_shape});
  register_op({.name = op_names::batch_share,
               .shape = batch_share_shape,
               .grad = [](Node& node, const Grads& dy) -> Grads {
                 return {ops::batch_share_grad(dy[0], node.inputs()[0], node.attrs().get_ints("ratios"),
                                               static_cast<int>(node.attrs().get_int("share")))};
               }});
  // Internal: dy placed at its share's rows inside zeros of x's shape.
  register_op({.name = op_names::batch_share_grad, .shape = batch_share_grad_shape});
  register_op({.name = op_names::batch_share_start, .shape = batch_share_start_shape});
  register_op({.name = op_names::split, .shape = split_shape, .grad = split_grad});
  register_op({.name = op_names::pad, .shape = pad_shape, .grad = pad_grad});
  // Internal: dy with the paddings stripped (pad gradients on unknown axes padded at the end).
  register_op({.name = op_names::pad_grad, .shape = pad_grad_shape});
  register_op({.name = op_names::one_hot, .shape = one_hot_shape});
  register_op({.name = op_names::hashing_bins, .shape = hashing_bins_shape});
  register_op({.name = op_names::gather, .shape = gather_shape, .grad = [](Node& node, const Grads& dy) -> Grads {
                 const auto& params = node.inputs()[0];
                 const auto& indices = node.inputs()[1];
                 return {ops::gather_grad(dy[0], indices, params), SymbolicTensor{}};
               }});
  register_op({.name = op_names::gather_grad, .shape = gather_grad_shape});
}

}  // namespace tower
