// TimeDistributed.
#include "tower/layers/rnn/time_distributed.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/registry.h"

namespace tower::layers {

namespace {

// (batch, time, d...) -> (batch, d...): what the wrapped layer sees per step. Checks the rank.
Shape step_shape(const Layer& self, const Shape& in) {
  if (in.rank() < 3)
    raise<ShapeError>("{}: expected input (batch, time, ...) of rank 3 or more, got {}; the wrapped layer runs on "
                      "each x[:, t]",
                      describe(self), in.to_string());
  std::vector<std::int64_t> dims{-1};
  dims.insert(dims.end(), in.dims().begin() + 2, in.dims().end());
  return Shape(dims);
}

}  // namespace

TimeDistributed::TimeDistributed(const Layer& layer, const TimeDistributedOptions& options)
    : Wrapper(layer, options.name, "time_distributed") {}

void TimeDistributed::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.size() != 1)
    raise<ValueError>("{}: takes one input, got {}", describe(*this), input_shapes.size());
  WeightNameScope scope(name());  // Keras's names: "time_distributed/kernel:0"
  layer_->ensure_built({step_shape(*this, input_shapes[0])});
}

std::vector<SymbolicTensor> TimeDistributed::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  if (inputs.size() != 1) raise<ValueError>("{}: takes one input, got {}", describe(*this), inputs.size());
  const SymbolicTensor& x = inputs[0];  // (batch, time, d...)
  const Shape step = step_shape(*this, x.shape());
  for (int axis = 2; axis < x.rank(); ++axis)
    if (x.shape().dim(axis) < 0)
      raise<ShapeError>("{}: needs known sizes after the time axis, got input {} (axis {} unknown)", describe(*this),
                        x.shape().to_string(), axis);

  const SymbolicTensor steps = ops::reshape(x, step.dims());  // (batch·time, d...)
  const std::vector<SymbolicTensor> ys = layer_->apply(ctx, {steps});
  if (ys.size() != 1)
    raise<ValueError>("{}: the wrapped layer {} returns {} outputs; TimeDistributed takes a layer with one output",
                      describe(*this), describe(*layer_), ys.size());
  const Shape& out = ys[0].shape();  // (batch·time, out...)
  if (out.rank() < 1) raise<ShapeError>("{}: the wrapped layer {} gives a scalar", describe(*this), describe(*layer_));
  std::vector<std::int64_t> tail;
  for (int axis = 1; axis < out.rank(); ++axis) {
    if (out.dim(axis) < 0)
      raise<ShapeError>("{}: the wrapped layer {} gives output {} of unknown size after the batch; TimeDistributed "
                        "needs it known to restore the time axis",
                        describe(*this), describe(*layer_), out.to_string());
    tail.push_back(out.dim(axis));
  }
  // Batch and time may both be unknown until a Plan is compiled: reshape_like takes them from x then.
  return {ops::reshape_like(ys[0], x, 2, tail)};  // (batch, time, out...)
}

LayerPtr TimeDistributed::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "TimeDistributed");
  r.check_common();
  if (!r.has("layer")) r.fail("needs \"layer\": the wrapped layer's {\"class_name\", \"config\"}");
  return r.finish(TimeDistributed(*layer_from_config(config.at("layer")), {.name = r.name()}));
}

}  // namespace tower::layers
