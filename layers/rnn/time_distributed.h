// TimeDistributed: applies one layer to every time step of a sequence, as Keras's TimeDistributed.
#pragma once

#include <string>

#include "tower/layers/core/wrapper.h"

namespace tower::layers {

struct TimeDistributedOptions {
  std::string name;
};

// x: (batch, time, ...) (time may be unknown until run time) with known sizes after it -> (batch, time,
// ...out): the wrapped layer applied to each x[:, t] (batch, ...) -> (batch, ...out) with the same
// weights. The steps are folded into the batch ((batch·time, ...)), the layer called once on them,
// and its output (batch·time, ...out) unfolded. One input and one output.
// Weights: the wrapped layer's, shared with the handle given (Keras's .layer): TimeDistributed(Dense(4))
// has dense/kernel (in, 4) and dense/bias (4,). tf.keras 2 names them time_distributed/kernel:0 when
// the wrapper builds the inner layer; only the names differ: weight files hold them in the wrapper's
// group, in Keras's order, and are matched by position within a layer, by Keras as by tower.
class TimeDistributed : public Wrapper {
 public:
  explicit TimeDistributed(const Layer& layer, const TimeDistributedOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<TimeDistributed>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // get_config(): Wrapper's, {"name", "trainable", "dtype", "layer": {"class_name", "config", ...}};
  // from_config rebuilds "layer" through the registry (custom_objects included).
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "TimeDistributed"; }
};

}  // namespace tower::layers
