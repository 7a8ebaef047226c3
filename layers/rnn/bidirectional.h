// Bidirectional: runs a recurrent layer over the sequence forwards and a copy backwards and merges
// their outputs, as Keras's Bidirectional.
#pragma once

#include <optional>
#include <string>

#include "tower/layers/core/wrapper.h"

namespace tower::layers {

struct BidirectionalOptions {
  // "concat" (on the last axis), "sum", "mul", "ave", or std::nullopt (Keras's None): both outputs.
  std::optional<std::string> merge_mode = "concat";
  // The layer that reads the sequence backwards (Keras's backward_layer); by default a copy of the
  // wrapped layer with go_backwards flipped. It must be recurrent, with the other go_backwards and the
  // same return_sequences and return_state. Like the wrapped layer it serves as a template: the
  // weights are those of a copy made from its config.
  std::optional<LayerRef> backward_layer;
  std::string name;
};

// x: (batch, time, features) (time may be unknown until run time), then optionally the initial states:
// Keras's initial_state list, its first half for the forward layer (h, and c for LSTM) and its second
// half for the backward one, each (batch, units).
// -> the forward output y and the backward output y_rev ((batch, units), or (batch, time, units) with
// return_sequences, y_rev then put back in forward time order) merged by merge_mode, or both with
// merge_mode None; then with return_state the forward layer's final states and the backward layer's.
// The wrapped layer (SimpleRNN, LSTM, GRU) is not run itself: as Keras, the wrapper makes a forward copy
// "forward_<name>" and a backward one "backward_<name>" from its config. Weights: the forward copy's
// then the backward copy's, with Keras's names, e.g. bidirectional/forward_lstm/lstm_cell/kernel:0
// (tower names the copies "<wrapper>/forward_<name>", so that their weights are named as Keras's).
class Bidirectional : public Wrapper {
 public:
  explicit Bidirectional(const Layer& layer, const BidirectionalOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  // With return_sequences the output sequence(s) keep the input's mask (Keras).
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Bidirectional>(*this); }
  // tf.keras 2's: {"name", "trainable", "dtype", "layer": {...}, "merge_mode": "concat" or null}, and
  // "backward_layer": {...} when one was given; from_config rebuilds both through the registry.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Bidirectional"; }

  const LayerPtr& forward_layer() const { return forward_; }
  const LayerPtr& backward_layer() const { return backward_; }
  const std::optional<std::string>& merge_mode() const { return merge_mode_; }

 protected:
  std::vector<LayerPtr> sublayers() const override { return {forward_, backward_}; }

 private:
  std::optional<std::string> merge_mode_;
  LayerPtr backward_given_;  // the user's backward_layer (for get_config), or null
  LayerPtr forward_, backward_;
};

}  // namespace tower::layers
