// Embedding.
#include "layers/embedding.h"

#include "core/error.h"
#include "core/ops.h"
#include "layers/layer_utils.h"

namespace tower::layers {

Embedding::Embedding(std::int64_t input_dim, std::int64_t output_dim, const EmbeddingOptions& options)
    : Layer(options.name, "embedding"), input_dim_(input_dim), output_dim_(output_dim), options_(options) {
  if (input_dim <= 0 || output_dim <= 0)
    raise<ValueError>("{}: input_dim and output_dim must be positive, got input_dim={} and output_dim={}",
                      describe(*this), input_dim, output_dim);
}

void Embedding::build(const std::vector<Shape>&) {
  add_weight("embeddings", {input_dim_, output_dim_}, options_.embeddings_initializer, options_.embeddings_regularizer);
}

std::vector<SymbolicTensor> Embedding::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor indices = inputs.at(0);  // (batch, ...)
  if (indices.rank() < 1) raise<ShapeError>("{}: expected indices with a batch axis, got a scalar", describe(*this));
  if (indices.dtype() != DType::int32 && indices.dtype() != DType::int64) indices = ops::cast(indices, DType::int32);
  return {ops::gather(read(ctx, weight("embeddings")), indices)};  // (batch, ..., output_dim)
}

}  // namespace tower::layers
