// Embedding.
#include "tower/layers/core/embedding.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Embedding::Embedding(std::int64_t input_dim, std::int64_t output_dim, const EmbeddingOptions& options)
    : Layer(options.name, "embedding"), input_dim_(input_dim), output_dim_(output_dim), options_(options) {
  set_activity_regularizer(options.activity_regularizer);
  if (input_dim <= 0 || output_dim <= 0)
    raise<ValueError>("{}: input_dim and output_dim must be positive, got input_dim={} and output_dim={}",
                      describe(*this), input_dim, output_dim);
}

void Embedding::build(const std::vector<Shape>&) {
  set_constraint(add_weight("embeddings", {input_dim_, output_dim_}, options_.embeddings_initializer,
                            options_.embeddings_regularizer),
                 options_.embeddings_constraint);
}

std::vector<SymbolicTensor> Embedding::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor indices = inputs.at(0);  // (batch, ...)
  if (indices.rank() < 1) raise<ShapeError>("{}: expected indices with a batch axis, got a scalar", describe(*this));
  if (indices.dtype() != DType::int32 && indices.dtype() != DType::int64) indices = ops::cast(indices, DType::int32);
  return {ops::gather(read(ctx, weight("embeddings")), indices)};  // (batch, ..., output_dim)
}

std::vector<SymbolicTensor> Embedding::compute_mask(const std::vector<SymbolicTensor>& inputs,
                                                    const std::vector<SymbolicTensor>&) const {
  if (!options_.mask_zero) return {};
  const SymbolicTensor ids = ops::cast(inputs.at(0), DType::float32);
  return {ops::subtract(ops::ones_like(ids), ops::compare_mask(ids, ops::zeros_like(ids), "eq"))};
}

nlohmann::json Embedding::get_config() const {
  return layer_config(*this, {{"input_dim", input_dim_},
                              {"output_dim", output_dim_},
                              {"embeddings_initializer", options_.embeddings_initializer.get_config()},
                              {"embeddings_regularizer", options_.embeddings_regularizer.get_config()},
                              {"activity_regularizer", nullptr},
                              {"embeddings_constraint", options_.embeddings_constraint.get_config()},
                              {"mask_zero", options_.mask_zero},
                              {"input_length", nullptr}});
}

LayerPtr Embedding::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Embedding");
  r.check_common();
  r.expect("lora_rank", nullptr, "LoRA");
  r.expect("quantization_config", nullptr, "quantized layers");
  r.expect("sparse", false, "sparse gradients");
  EmbeddingOptions options{.embeddings_initializer = r.initializer("embeddings_initializer", "uniform"),
                           .embeddings_regularizer = r.regularizer("embeddings_regularizer"),
                           .embeddings_constraint = r.constraint("embeddings_constraint"),
                           .mask_zero = r.boolean("mask_zero", false),
                           .name = r.name()};
  return r.finish(Embedding(r.integer("input_dim"), r.integer("output_dim"), options));
}

}  // namespace tower::layers
