// Elementwise arithmetic with broadcasting, scale, sum_to/broadcast_like, matmul, batch_matmul and bias_add.
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace ops {

SymbolicTensor add(const SymbolicTensor& a, const SymbolicTensor& b) { return a.graph().add1(op_names::add, {a, b}); }
SymbolicTensor subtract(const SymbolicTensor& a, const SymbolicTensor& b) {
  return a.graph().add1(op_names::subtract, {a, b});
}
SymbolicTensor multiply(const SymbolicTensor& a, const SymbolicTensor& b) {
  return a.graph().add1(op_names::multiply, {a, b});
}
SymbolicTensor divide(const SymbolicTensor& a, const SymbolicTensor& b) {
  return a.graph().add1(op_names::divide, {a, b});
}
SymbolicTensor maximum(const SymbolicTensor& a, const SymbolicTensor& b) {
  return a.graph().add1(op_names::maximum, {a, b});
}
SymbolicTensor minimum(const SymbolicTensor& a, const SymbolicTensor& b) {
  return a.graph().add1(op_names::minimum, {a, b});
}
SymbolicTensor scale(const SymbolicTensor& x, double factor) {
  return x.graph().add1(op_names::scale, {x}, {{"factor", factor}});
}
SymbolicTensor sum_to(const SymbolicTensor& x, const SymbolicTensor& like) {
  if (x.shape() == like.shape() && x.shape().is_fully_known()) return x;
  return x.graph().add1(op_names::sum_to, {x, like});
}
SymbolicTensor broadcast_like(const SymbolicTensor& x, const SymbolicTensor& like) {
  return x.graph().add1(op_names::broadcast_like, {x, like});
}
SymbolicTensor matmul(const SymbolicTensor& a, const SymbolicTensor& b, bool transpose_a, bool transpose_b) {
  return a.graph().add1(op_names::matmul, {a, b}, {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}
SymbolicTensor batch_matmul(const SymbolicTensor& a, const SymbolicTensor& b, bool transpose_a, bool transpose_b) {
  return a.graph().add1(op_names::batch_matmul, {a, b}, {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}
SymbolicTensor dense(const SymbolicTensor& x, const SymbolicTensor& kernel, const SymbolicTensor& bias,
                     const std::string& activation) {
  if (activation != "linear" && activation != "relu")
    raise<ValueError>("dense: activation must be \"linear\" or \"relu\", got \"{}\"; apply others after it", activation);
  return x.graph().add1(op_names::dense, {x, kernel, bias}, {{"activation", activation}});
}

SymbolicTensor bias_add(const SymbolicTensor& x, const SymbolicTensor& bias, const std::string& activation) {
  if (activation != "linear" && activation != "relu")
    raise<ValueError>("bias_add: activation must be \"linear\" or \"relu\", got \"{}\"; apply others after it",
                      activation);
  return x.graph().add1(op_names::bias_add, {x, bias}, {{"activation", activation}});
}
SymbolicTensor bias_add_grad(const SymbolicTensor& dy) { return dy.graph().add1(op_names::bias_add_grad, {dy}); }

}  // namespace ops

namespace {

using Grads = std::vector<SymbolicTensor>;

std::vector<TensorSpec> binary_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  expect_num_inputs(in, 2);
  expect_same_dtype(in[0], in[1], "a", "b");
  return {TensorSpec{broadcast_shapes(in[0].shape, in[1].shape), in[0].dtype}};
}

}  // namespace

namespace ops {
SymbolicTensor compare_mask(const SymbolicTensor& a, const SymbolicTensor& b, const char* mode) {
  return a.graph().add1(op_names::compare_mask, {a, b}, {{"mode", std::string(mode)}});
}
SymbolicTensor greater(const SymbolicTensor& a, const SymbolicTensor& b) { return compare_mask(a, b, "gt"); }
SymbolicTensor greater_equal(const SymbolicTensor& a, const SymbolicTensor& b) { return compare_mask(a, b, "ge"); }
SymbolicTensor less(const SymbolicTensor& a, const SymbolicTensor& b) { return compare_mask(a, b, "lt"); }
SymbolicTensor less_equal(const SymbolicTensor& a, const SymbolicTensor& b) { return compare_mask(a, b, "le"); }
SymbolicTensor equal(const SymbolicTensor& a, const SymbolicTensor& b) { return compare_mask(a, b, "eq"); }
}  // namespace ops

namespace {

Grads min_max_grad(Node& node, const Grads& dy, const char* mode) {
  const auto& a = node.inputs()[0];
  const auto& b = node.inputs()[1];
  auto mask = ops::compare_mask(a, b, mode);
  auto to_a = ops::multiply(dy[0], mask);
  return {ops::sum_to(to_a, a), ops::sum_to(ops::subtract(dy[0], to_a), b)};
}

}  // namespace

void register_math_ops() {
  register_op({.name = op_names::add, .shape = binary_shape, .grad = [](Node& n, const Grads& dy) -> Grads {
                 return {ops::sum_to(dy[0], n.inputs()[0]), ops::sum_to(dy[0], n.inputs()[1])};
               }});
  register_op({.name = op_names::subtract, .shape = binary_shape, .grad = [](Node& n, const Grads& dy) -> Grads {
                 return {ops::sum_to(dy[0], n.inputs()[0]), ops::sum_to(ops::scale(dy[0], -1.0), n.inputs()[1])};
               }});
  register_op({.name = op_names::multiply, .shape = binary_shape, .grad = [](Node& n, const Grads& dy) -> Grads {
                 const auto& a = n.inputs()[0];
                 const auto& b = n.inputs()[1];
                 return {ops::sum_to(ops::multiply(dy[0], b), a), ops::sum_to(ops::multiply(dy[0], a), b)};
               }});
  register_op({.name = op_names::divide, .shape = binary_shape, .grad = [](Node& n, const Grads& dy) -> Grads {
                 const auto& a = n.inputs()[0];
                 const auto& b = n.inputs()[1];
                 auto da = ops::divide(dy[0], b);  // d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b
                 return {ops::sum_to(da, a), ops::sum_to(ops::scale(ops::multiply(da, n.output(0)), -1.0), b)};
               }});
  register_op({.name = op_names::maximum, .shape = binary_shape, .grad = [](Node& n, const Grads& dy) {
                 return min_max_grad(n, dy, "ge");
               }});
  register_op({.name = op_names::minimum, .shape = binary_shape, .grad = [](Node& n, const Grads& dy) {
                 return min_max_grad(n, dy, "le");
               }});
  register_op({.name = op_names::compare_mask, .shape = binary_shape});
  register_op(
      {.name = op_names::scale,
       .shape =
           [](const std::vector<TensorSpec>& in, const Attrs&) {
             expect_num_inputs(in, 1);
             expect_floating(in[0], "x");
             return in;
           },
       .grad = [](Node& n, const Grads& dy) -> Grads { return {ops::scale(dy[0], n.attrs().get_float("factor"))}; }});
  register_op({.name = op_names::sum_to,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     expect_num_inputs(in, 2);
                     // like must broadcast to x's shape.
                     Shape b = broadcast_shapes(in[0].shape, in[1].shape);
                     if (!b.compatible_with(in[0].shape))
                       raise<ShapeError>("{} does not broadcast to {}", in[1].shape.to_string(),
                                         in[0].shape.to_string());
                     return std::vector{TensorSpec{in[1].shape, in[0].dtype}};
                   },
               .grad = [](Node& n, const Grads& dy) -> Grads {
                 return {ops::broadcast_like(dy[0], n.inputs()[0]), {}};
               },
               .alias_when_unchanged = true});
  register_op({.name = op_names::broadcast_like,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     expect_num_inputs(in, 2);
                     Shape b = broadcast_shapes(in[0].shape, in[1].shape);
                     if (!b.compatible_with(in[1].shape))
                       raise<ShapeError>("{} does not broadcast to {}", in[0].shape.to_string(),
                                         in[1].shape.to_string());
                     return std::vector{TensorSpec{in[1].shape, in[0].dtype}};
                   },
               .grad = [](Node& n, const Grads& dy) -> Grads {
                 return {ops::sum_to(dy[0], n.inputs()[0]), {}};
               },
               .alias_when_unchanged = true});
  register_op({.name = op_names::matmul,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs& attrs) {
                     expect_num_inputs(in, 2);
                     expect_rank(in[0], 2, "a");
                     expect_rank(in[1], 2, "b");
                     expect_floating(in[0], "a");
                     expect_same_dtype(in[0], in[1], "a", "b");
                     bool ta = attrs.get_bool("transpose_a"), tb = attrs.get_bool("transpose_b");
                     auto m = in[0].shape[ta ? 1 : 0], ka = in[0].shape[ta ? 0 : 1];
                     auto kb = in[1].shape[tb ? 1 : 0], n = in[1].shape[tb ? 0 : 1];
                     if (!dims_match(ka, kb)) raise<ShapeError>("inner dimensions differ: {} vs {}", ka, kb);
                     return std::vector{TensorSpec{Shape{m, n}, in[0].dtype}};
                   },
               .grad = [](Node& node, const Grads& dy) -> Grads {
                 const auto& a = node.inputs()[0];
                 const auto& b = node.inputs()[1];
                 bool ta = node.attrs().get_bool("transpose_a"), tb = node.attrs().get_bool("transpose_b");
                 const auto& g = dy[0];
                 // y = op(a) op(b): d op(a) = g op(b)^T, d op(b) = op(a)^T g.
                 SymbolicTensor da = ta ? ops::matmul(b, g, tb, true) : ops::matmul(g, b, false, !tb);
                 SymbolicTensor db = tb ? ops::matmul(g, a, true, ta) : ops::matmul(a, g, !ta, false);
                 return {da, db};
               }});
  register_op({.name = op_names::batch_matmul,  // (a (..., m, k), b (..., k, n)) -> (..., m, n)
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs& attrs) {
                     expect_num_inputs(in, 2);
                     expect_min_rank(in[0], 3, "a");
                     expect_min_rank(in[1], 3, "b");
                     expect_floating(in[0], "a");
                     expect_same_dtype(in[0], in[1], "a", "b");
                     const Shape& sa = in[0].shape;
                     const Shape& sb = in[1].shape;
                     if (sa.rank() != sb.rank())
                       raise<ShapeError>("a {} and b {} differ in rank; the batch dimensions must be equal",
                                         sa.to_string(), sb.to_string());
                     const int r = sa.rank();
                     auto dims = sa.dims();
                     for (int d = 0; d + 2 < r; ++d) {
                       if (!dims_match(sa[d], sb[d]))
                         raise<ShapeError>("batch dimension {} differs: a {} vs b {} (no broadcasting)", d,
                                           sa.to_string(), sb.to_string());
                       if (dims[static_cast<std::size_t>(d)] < 0) dims[static_cast<std::size_t>(d)] = sb[d];
                     }
                     bool ta = attrs.get_bool("transpose_a"), tb = attrs.get_bool("transpose_b");
                     auto m = sa[ta ? r - 1 : r - 2], ka = sa[ta ? r - 2 : r - 1];
                     auto kb = sb[tb ? r - 1 : r - 2], n = sb[tb ? r - 2 : r - 1];
                     if (!dims_match(ka, kb)) raise<ShapeError>("inner dimensions differ: {} vs {}", ka, kb);
                     dims[static_cast<std::size_t>(r - 2)] = m;
                     dims[static_cast<std::size_t>(r - 1)] = n;
                     return std::vector{TensorSpec{Shape(dims), in[0].dtype}};
                   },
               .grad = [](Node& node, const Grads& dy) -> Grads {
                 const auto& a = node.inputs()[0];
                 const auto& b = node.inputs()[1];
                 bool ta = node.attrs().get_bool("transpose_a"), tb = node.attrs().get_bool("transpose_b");
                 const auto& g = dy[0];
                 // As matmul's, per batch item: d op(a) = g op(b)^T, d op(b) = op(a)^T g.
                 SymbolicTensor da = ta ? ops::batch_matmul(b, g, tb, true) : ops::batch_matmul(g, b, false, !tb);
                 SymbolicTensor db = tb ? ops::batch_matmul(g, a, true, ta) : ops::batch_matmul(a, g, !ta, false);
                 return {da, db};
               }});
  register_op({.name = op_names::dense,  // (x (m, k), kernel (k, n), bias (n,)) -> (m, n)
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     expect_num_inputs(in, 3);
                     expect_rank(in[0], 2, "x");
                     expect_rank(in[1], 2, "kernel");
                     expect_rank(in[2], 1, "bias");
                     expect_floating(in[0], "x");
                     expect_same_dtype(in[0], in[1], "x", "kernel");
                     expect_same_dtype(in[0], in[2], "x", "bias");
                     if (!dims_match(in[0].shape[1], in[1].shape[0]))
                       raise<ShapeError>("inner dimensions differ: x has {} columns, kernel {} rows", in[0].shape[1],
                                         in[1].shape[0]);
                     if (!dims_match(in[1].shape[1], in[2].shape[0]))
                       raise<ShapeError>("bias has {} elements but the kernel {} columns", in[2].shape[0],
                                         in[1].shape[1]);
                     return std::vector{TensorSpec{Shape{in[0].shape[0], in[1].shape[1]}, in[0].dtype}};
                   },
               .grad = [](Node& node, const Grads& dy) -> Grads {
                 const auto& x = node.inputs()[0];
                 const auto& kernel = node.inputs()[1];
                 const auto dz = node.attrs().get_string("activation") == "relu"
                                     ? ops::bias_add_relu_grad(dy[0], node.output(0))
                                     : Grads{dy[0], ops::bias_add_grad(dy[0])};
                 return {ops::matmul(dz[0], kernel, false, true), ops::matmul(x, dz[0], true, false), dz[1]};
               }});
  register_op({.name = op_names::bias_add,
               .shape =
                   [](const std::vector<TensorSpec>& in, const Attrs&) {
                     expect_num_inputs(in, 2);
                     expect_min_rank(in[0], 1, "x");
                     expect_rank(in[1], 1, "bias");
                     expect_same_dtype(in[0], in[1], "x", "bias");
                     if (!dims_match(in[0].shape.dim(-1), in[1].shape[0]))
                       raise<ShapeError>("bias has {} elements but x's last dimension is {}", in[1].shape[0],
                                         in[0].shape.dim(-1));
                     return std::vector{in[0]};
                   },
               .grad = [](Node& node, const Grads& dy) -> Grads {
                 if (node.attrs().get_string("activation") == "relu") return ops::bias_add_relu_grad(dy[0], node.output(0));
                 return {dy[0], ops::bias_add_grad(dy[0])};
               }});
  register_op({.name = op_names::bias_add_grad, .shape = [](const std::vector<TensorSpec>& in, const Attrs&) {
                 expect_num_inputs(in, 1);
                 expect_min_rank(in[0], 1, "dy");
                 return std::vector{TensorSpec{Shape{in[0].shape.dim(-1)}, in[0].dtype}};
               }});
}

}  // namespace tower
