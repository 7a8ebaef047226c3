// CategoryEncoding and encode_categorical.
#include "tower/layers/preprocessing/category_encoding.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

void check_output_mode(const Layer& layer, const std::string& mode, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), mode) == allowed.end())
    raise<ValueError>("{}: invalid output_mode \"{}\"; expected one of \"{}\"", describe(layer), mode,
                      fmt::join(allowed, "\", \""));
}

SymbolicTensor encode_categorical(const Layer& layer, const SymbolicTensor& input, const std::string& output_mode,
                                  std::int64_t depth, const std::optional<SymbolicTensor>& count_weights) {
  SymbolicTensor x = input;
  if (is_floating(x.dtype())) x = ops::cast(x, DType::int64);  // as tf.cast: truncation
  const Shape& shape = x.shape();
  const int rank = shape.rank();
  if (rank < 1 || rank > 2)
    raise<ShapeError>("{}: expected integer inputs of rank 1 (batch,) or 2 (batch, k), got {}", describe(layer),
                      shape.to_string());
  if (count_weights && output_mode != "count")
    raise<ValueError>("{}: count_weights is only used with output_mode=\"count\", not \"{}\"", describe(layer),
                      output_mode);
  if (output_mode == "one_hot") {
    if (rank == 2 && shape[1] == 1) x = ops::reshape(x, {-1});  // (batch, 1) -> (batch,)
    return ops::one_hot(x, depth);
  }
  const int axis = rank == 2 ? 1 : 0;  // Keras: a rank-1 input is one sample
  SymbolicTensor encoded = ops::one_hot(x, depth);  // (..., k, depth)
  if (output_mode == "multi_hot") return ops::reduce_max(encoded, {axis});
  if (count_weights) {
    SymbolicTensor w = *count_weights;
    if (w.shape().rank() != rank || (rank == 2 && shape[1] >= 0 && w.shape()[1] >= 0 && w.shape()[1] != shape[1]))
      raise<ShapeError>("{}: count_weights {} must have the shape of the inputs {}", describe(layer),
                        w.shape().to_string(), shape.to_string());
    if (w.dtype() != DType::float32) w = ops::cast(w, DType::float32);
    encoded = ops::multiply(encoded, ops::reshape_like(w, w, -1, {1})  /* (batch, k, 1) */);
  }
  return ops::reduce_sum(encoded, {axis});
}

CategoryEncoding::CategoryEncoding(std::int64_t num_tokens, const CategoryEncodingOptions& options)
    : Layer(options.name, "category_encoding"), num_tokens_(num_tokens), options_(options) {
  if (options_.output_mode == "binary") options_.output_mode = "multi_hot";  // Keras's old name
  check_output_mode(*this, options_.output_mode, {"count", "one_hot", "multi_hot"});
  if (num_tokens < 1)
    raise<ValueError>("{}: num_tokens must be >= 1, got {} (unknown vocabularies: use IntegerLookup)",
                      describe(*this), num_tokens);
  if (options_.sparse)
    raise<ValueError>("{}: sparse=True is not supported (tower has no sparse tensors); use sparse=False",
                      describe(*this));
}

std::vector<SymbolicTensor> CategoryEncoding::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  if (inputs.empty() || inputs.size() > 2)
    raise<ValueError>("{}: expected the ids and optionally count_weights, got {} inputs", describe(*this),
                      inputs.size());
  std::optional<SymbolicTensor> weights;
  if (inputs.size() == 2) weights = inputs[1];
  return {encode_categorical(*this, inputs[0], options_.output_mode, num_tokens_, weights)};
}

nlohmann::json CategoryEncoding::get_config() const {
  return layer_config(*this, {{"num_tokens", num_tokens_}, {"output_mode", options_.output_mode}, {"sparse", false}});
}

LayerPtr CategoryEncoding::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "CategoryEncoding");
  r.check_common();
  if (!r.has("num_tokens")) r.fail("num_tokens must be set (unknown vocabularies: use IntegerLookup)");
  return r.finish(CategoryEncoding(r.integer("num_tokens"), {.output_mode = r.string("output_mode", "multi_hot"),
                                                             .sparse = r.boolean("sparse", false),
                                                             .name = r.name()}));
}

}  // namespace tower::layers
