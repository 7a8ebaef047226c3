// Dot.
#include "tower/layers/merging/dot.h"

#include <numeric>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

namespace {

// x / sqrt(max(sum(x^2 along axis), 1e-14)): Keras 3's normalize (x * min(rsqrt(sum), 1 / 1e-7)).
SymbolicTensor l2_normalize(const SymbolicTensor& x, int axis) {
  Graph& g = x.graph();
  const SymbolicTensor sum = ops::reduce_sum(ops::square(x), {axis}, true);
  const SymbolicTensor floor = g.constant(Tensor::scalar(1e-14, x.dtype()));
  return ops::divide(x, ops::sqrt(ops::maximum(sum, floor)));
}

// dims[from, to) of a shape.
std::vector<std::int64_t> dims_of(const Shape& s, int from, int to) {
  return {s.dims().begin() + from, s.dims().begin() + to};
}

}  // namespace

Dot::Dot(int axes, const DotOptions& options)
    : Layer(options.name, "dot"), axes_{axes, axes}, one_axis_(true), normalize_(options.normalize) {}

Dot::Dot(std::vector<int> axes, const DotOptions& options)
    : Layer(options.name, "dot"), axes_(std::move(axes)), one_axis_(false), normalize_(options.normalize) {
  if (axes_.size() != 2)
    raise<ValueError>("{}: axes must be one axis or two (one per input), got {}", describe(*this), axes_.size());
}

std::pair<int, int> Dot::resolve_axes(const Shape& x, const Shape& y) const {
  if (x.rank() < 2 || y.rank() < 2)
    raise<ShapeError>("{}: inputs need a batch axis and at least one more, got {} and {}", describe(*this),
                      x.to_string(), y.to_string());
  const int a = axes_[0] < 0 ? axes_[0] + x.rank() : axes_[0];
  const int b = axes_[1] < 0 ? axes_[1] + y.rank() : axes_[1];
  if (a <= 0 || a >= x.rank() || b <= 0 || b >= y.rank())
    raise<ValueError>("{}: axes ({}, {}) must name an axis after the batch of inputs {} and {} (the batch axis 0 "
                      "cannot be summed)",
                      describe(*this), axes_[0], axes_[1], x.to_string(), y.to_string());
  for (const Shape* s : {&x, &y})
    for (int d = 1; d < s->rank(); ++d)
      if ((*s)[d] < 0)
        raise<ShapeError>("{}: needs known sizes after the batch axis, got {}", describe(*this), s->to_string());
  if (x[a] != y[b])
    raise<ShapeError>("{}: incompatible inputs: axis {} of {} has {} elements but axis {} of {} has {}",
                      describe(*this), a, x.to_string(), x[a], b, y.to_string(), y[b]);
  return {a, b};
}

void Dot::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.size() != 2)
    raise<ValueError>("{}: must be called on a list of 2 inputs, got {}", describe(*this), input_shapes.size());
  (void)resolve_axes(input_shapes[0], input_shapes[1]);
}

std::vector<SymbolicTensor> Dot::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  if (inputs.size() != 2)
    raise<ValueError>("{}: must be called on a list of 2 inputs, got {}", describe(*this), inputs.size());
  SymbolicTensor x = inputs[0], y = inputs[1];
  // Plain ints, not a structured binding: the lambdas below use them (clang rejects capturing bindings).
  const auto axes = resolve_axes(x.shape(), y.shape());
  const int a = axes.first, b = axes.second;
  if (normalize_) {
    x = l2_normalize(x, a);
    y = l2_normalize(y, b);
  }
  // Keras's batch_dot: x as (batch, rest..., d), y as (batch, d, rest...), one batch_matmul of
  // (batch, prod(x rest), d) by (batch, d, prod(y rest)), then the rest axes unfolded.
  const int rx = x.rank(), ry = y.rank();
  const std::int64_t d = x.shape()[a];
  auto move_axis = [](const SymbolicTensor& t, int from, int to) {
    ops::Ints perm;
    for (int i = 0; i < t.rank(); ++i)
      if (i != from) perm.push_back(i);
    perm.insert(perm.begin() + to, from);
    bool identity = true;
    for (int i = 0; i < t.rank(); ++i) identity = identity && perm[static_cast<std::size_t>(i)] == i;
    return identity ? t : ops::transpose(t, perm);
  };
  const std::vector<std::int64_t> x_rest = [&] {
    auto r = dims_of(x.shape(), 1, rx);
    r.erase(r.begin() + (a - 1));
    return r;
  }();
  const std::vector<std::int64_t> y_rest = [&] {
    auto r = dims_of(y.shape(), 1, ry);
    r.erase(r.begin() + (b - 1));
    return r;
  }();
  auto prod = [](const std::vector<std::int64_t>& v) {
    return std::accumulate(v.begin(), v.end(), std::int64_t{1}, std::multiplies<>());
  };
  const SymbolicTensor x3 = ops::reshape(move_axis(x, a, rx - 1), {-1, prod(x_rest), d});  // (batch, m, d)
  const SymbolicTensor y3 = ops::reshape(move_axis(y, b, 1), {-1, d, prod(y_rest)});       // (batch, d, n)
  std::vector<std::int64_t> out{-1};
  out.insert(out.end(), x_rest.begin(), x_rest.end());
  out.insert(out.end(), y_rest.begin(), y_rest.end());
  if (out.size() == 1) out.push_back(1);  // (batch,) is (batch, 1), as Keras
  return {ops::reshape(ops::batch_matmul(x3, y3), out)};
}

nlohmann::json Dot::get_config() const {
  nlohmann::json axes = one_axis_ ? nlohmann::json(axes_[0]) : nlohmann::json(axes_);
  return layer_config(*this, {{"axes", axes}, {"normalize", normalize_}});
}

LayerPtr Dot::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Dot");
  r.check_common();
  const DotOptions options{.normalize = r.boolean("normalize", false), .name = r.name()};
  if (!r.has("axes")) r.fail("field \"axes\" is required");
  if (r.json()["axes"].is_number_integer()) return r.finish(Dot(r.axis(r.integer("axes"), "axes"), options));
  std::vector<int> axes;
  for (std::int64_t a : r.ints("axes")) axes.push_back(r.axis(a, "axes"));
  return r.finish(Dot(axes, options));
}

}  // namespace tower::layers
