// Scaled dot-product attention per batch item and head, and its gradient: MultiHeadAttention's
// products and softmax as one op. Kernels in backends/cpu/attention_kernels.cpp and
// backends/cuda/attention_ops.cpp.
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace {

using Specs = std::vector<TensorSpec>;
using Grads = std::vector<SymbolicTensor>;

// Sizes of q (B, T, N, H), k (B, S, N, H), v (B, S, N, Hv); -1 where unknown.
struct AttentionDims {
  std::int64_t batch, t, s, heads, h, hv;
};

// Two sizes of one axis that must agree: the known one (or -1).
std::int64_t agree(std::int64_t a, std::int64_t b, const char* what, const Specs& in) {
  if (!dims_match(a, b))
    raise<ShapeError>("q {}, k {} and v {} disagree on {}", in[0].shape.to_string(), in[1].shape.to_string(),
                      in[2].shape.to_string(), what);
  return a >= 0 ? a : b;
}

AttentionDims attention_dims(const Specs& in) {
  expect_rank(in[0], 4, "q (batch, T, heads, key_dim)");
  expect_rank(in[1], 4, "k (batch, S, heads, key_dim)");
  expect_rank(in[2], 4, "v (batch, S, heads, value_dim)");
  expect_floating(in[0], "q");
  expect_same_dtype(in[0], in[1], "q", "k");
  expect_same_dtype(in[0], in[2], "q", "v");
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  AttentionDims d{};
  d.batch = agree(agree(q[0], k[0], "the batch", in), v[0], "the batch", in);
  d.t = q[1];
  d.s = agree(k[1], v[1], "the key/value steps", in);
  d.heads = agree(agree(q[2], k[2], "the heads", in), v[2], "the heads", in);
  d.h = agree(q[3], k[3], "key_dim", in);
  d.hv = v[3];
  return d;
}

double scale_attr(const Attrs& attrs) {
  const double scale = attrs.get_float("scale");
  if (!(scale > 0.0)) raise<ValueError>("scale must be positive, got {}", scale);
  return scale;
}

// The optional mask (batch or 1, heads or 1, T, S), q's dtype.
void expect_mask(const TensorSpec& q, const TensorSpec& m, const AttentionDims& d) {
  expect_same_dtype(q, m, "q", "mask");
  const bool fits = m.shape.rank() == 4 && (m.shape[0] == 1 || dims_match(m.shape[0], d.batch)) &&
                    (m.shape[1] == 1 || dims_match(m.shape[1], d.heads)) && dims_match(m.shape[2], d.t) &&
                    dims_match(m.shape[3], d.s);
  if (!fits)
    raise<ShapeError>("the mask must be (batch or 1, heads or 1, T, S) = ({} or 1, {} or 1, {}, {}), got {}",
                      d.batch, d.heads, d.t, d.s, m.shape.to_string());
}

Specs attention_shape(const Specs& in, const Attrs& attrs) {  // (q, k, v[, mask])
  if (in.size() != 3 && in.size() != 4)
    raise<ValueError>("dot_product_attention takes q, k, v and an optional mask, got {} inputs", in.size());
  scale_attr(attrs);
  const AttentionDims d = attention_dims(in);
  if (in.size() == 4) expect_mask(in[0], in[3], d);
  return {TensorSpec{Shape{d.batch, d.t, d.heads, d.hv}, in[0].dtype},
          TensorSpec{Shape{d.batch, d.heads, d.t, d.s}, in[0].dtype}};
}

Specs attention_grad_shape(const Specs& in, const Attrs& attrs) {  // (do, q, k, v, p[, mask])
  if (in.size() != 5 && in.size() != 6)
    raise<ValueError>("dot_product_attention_grad takes do, q, k, v, p and an optional mask, got {} inputs",
                      in.size());
  scale_attr(attrs);
  const Specs qkv(in.begin() + 1, in.begin() + 4);
  const AttentionDims d = attention_dims(qkv);
  if (in.size() == 6) expect_mask(in[1], in[5], d);
  const Shape out{d.batch, d.t, d.heads, d.hv}, p{d.batch, d.heads, d.t, d.s};
  expect_same_dtype(in[1], in[0], "q", "do");
  expect_same_dtype(in[1], in[4], "q", "p");
  if (!in[0].shape.compatible_with(out) || !in[4].shape.compatible_with(p))
    raise<ShapeError>("do {} and p {} must be {} and {}", in[0].shape.to_string(), in[4].shape.to_string(),
                      out.to_string(), p.to_string());
  return {in[1], in[2], in[3]};
}

Grads attention_grad_fn(Node& node, const Grads& g) {
  if (g[1].defined())
    raise<ValueError>("dot_product_attention: its probabilities output is not differentiable; build the softmax "
                      "from ops (batch_matmul, softmax) to train through the attention scores");
  const auto& in = node.inputs();
  Grads out(in.size());  // the mask has none
  if (!g[0].defined()) return out;
  auto r = ops::dot_product_attention_grad(g[0], in[0], in[1], in[2], node.output(1),
                                           in.size() > 3 ? in[3] : SymbolicTensor(), node.attrs().get_float("scale"));
  out[0] = r[0], out[1] = r[1], out[2] = r[2];
  return out;
}

}  // namespace

namespace ops {

std::vector<SymbolicTensor> dot_product_attention(const SymbolicTensor& q, const SymbolicTensor& k,
                                                  const SymbolicTensor& v, const SymbolicTensor& mask, double scale) {
  std::vector<SymbolicTensor> inputs{q, k, v};
  if (mask.defined()) inputs.push_back(mask);
  return q.graph().add(op_names::dot_product_attention, inputs, {{"scale", scale}});
}

std::vector<SymbolicTensor> dot_product_attention_grad(const SymbolicTensor& d_out, const SymbolicTensor& q,
                                                       const SymbolicTensor& k, const SymbolicTensor& v,
                                                       const SymbolicTensor& probabilities,
                                                       const SymbolicTensor& mask, double scale) {
  std::vector<SymbolicTensor> inputs{d_out, q, k, v, probabilities};
  if (mask.defined()) inputs.push_back(mask);
  return q.graph().add(op_names::dot_product_attention_grad, inputs, {{"scale", scale}});
}

}  // namespace ops

void register_attention_ops() {
  register_op({.name = op_names::dot_product_attention, .shape = attention_shape, .grad = attention_grad_fn});
  register_op({.name = op_names::dot_product_attention_grad, .shape = attention_grad_shape});
}

}  // namespace tower
