// Hashing: integer values (or host-side strings) to num_bins bins with TensorFlow's hashes, as Keras's
// Hashing layer: FarmHash Fingerprint64 of the value's decimal string, or SipHash-2-4 keyed by the salt.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "tower/core/tensor.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct HashingOptions {
  std::optional<std::int64_t> mask_value;        // this value gets bin 0, the others 1..num_bins-1
  std::optional<std::string> string_mask_value;  // the same for hash(strings) (Keras's mask_value="")
  std::optional<std::array<std::int64_t, 2>> salt;  // Keras's salt=s is {s, s}: SipHash keyed by it
  std::string output_mode = "int";                  // "int" (int64 bins), "one_hot", "multi_hot", "count"
  bool sparse = false;                              // true is refused
  std::string name;
};

// x: integer (or floating, truncated to int64 as Keras does) (batch, ...) -> int64 bins of the same
// shape (output_mode "int"), or float32 encodings of the bins as CategoryEncoding's (inputs of rank
// 1 or 2). No weights.
class Hashing : public Layer {
 public:
  explicit Hashing(std::int64_t num_bins, const HashingOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Hashing>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Hashing"; }

  // Keras's Hashing on strings, on the host: the bins (n,) int64 of the strings (output_mode "int"
  // only), the same as Keras's layer on a string tensor.
  Tensor hash(const std::vector<std::string>& values) const;
  // One bin of a string (the bytes as given, UTF-8 as TF stores them).
  std::int64_t bin(const std::string& value) const;

  std::int64_t num_bins() const { return num_bins_; }
  const HashingOptions& options() const { return options_; }

 private:
  std::int64_t num_bins_;
  HashingOptions options_;
};

}  // namespace tower::layers
