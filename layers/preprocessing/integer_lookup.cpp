// IntegerLookup.
#include "tower/layers/preprocessing/integer_lookup.h"

#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/preprocessing/category_encoding.h"

namespace tower::layers {

IntegerLookup::IntegerLookup(const IntegerLookupOptions& options)
    : Layer(options.name, "integer_lookup"), table_(options, "IntegerLookup") {
  check_output_mode(*this, options.output_mode, {"int", "one_hot", "multi_hot", "count", "tf_idf"});
  if (options.invert && options.output_mode != "int")
    raise<ValueError>("{}: invert=True needs output_mode=\"int\"", describe(*this));
  if (options.salt && options.oov_method != "farmhash")  // Keras's rule for integer tokens
    raise<ValueError>("{}: salt can only be used with oov_method=\"farmhash\", got oov_method=\"{}\"",
                      describe(*this), options.oov_method);
}

void IntegerLookup::adapt(const Tensor& data) {
  if (is_floating(data.dtype()))
    raise<DTypeError>("{}: adapt() takes integer tokens, got {}", describe(*this), dtype_name(data.dtype()));
  // For tf_idf's document counts, as Keras: the rows of the first axis are the documents; a 1-D
  // tensor is one document.
  const std::int64_t documents = data.shape().rank() >= 2 ? data.shape()[0] : 1;
  table_.adapt(data.to_vector<std::int64_t>(), documents);
}

namespace {
SymbolicTensor constant(const SymbolicTensor& like, const std::vector<double>& values) {
  return like.graph().constant(
      Tensor::from_vector<double>(Shape{static_cast<std::int64_t>(values.size())}, values));
}
SymbolicTensor scalar(const SymbolicTensor& like, double value) { return like.graph().constant(Tensor::scalar(value, DType::float64)); }
}  // namespace

std::vector<SymbolicTensor> IntegerLookup::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  if (inputs.size() != 1) raise<ValueError>("{}: expected one input, got {}", describe(*this), inputs.size());
  const SymbolicTensor x = ops::cast(inputs[0], DType::float64);  // (batch, ...), tokens or indices
  const auto& opts = table_.options();
  const auto one = [&] { return scalar(x, 1.0); };
  if (opts.invert) {
    // index -> token: a gather from the table, the OOV token outside it.
    std::vector<double> table;
    for (std::int64_t t : table_.get_vocabulary()) table.push_back(static_cast<double>(t));
    const double last = static_cast<double>(table.size() - 1);
    const SymbolicTensor inside =
        ops::multiply(ops::greater_equal(x, scalar(x, 0.0)), ops::less_equal(x, scalar(x, last)));
    const SymbolicTensor at = ops::cast(ops::minimum(ops::maximum(x, scalar(x, 0.0)), scalar(x, last)), DType::int64);
    const SymbolicTensor token = ops::gather(constant(x, table), at);
    const SymbolicTensor oov = ops::scale(ops::subtract(one(), inside), static_cast<double>(opts.oov_token));
    return {ops::cast(ops::add(ops::multiply(inside, token), oov), DType::int64)};
  }
  // token -> index: which vocabulary entry equals x ((..., V) of 0/1), else the OOV index (or -1).
  const double oov_index = opts.num_oov_indices ? static_cast<double>(table_.oov_index()) : -1.0;
  SymbolicTensor index = ops::add(ops::scale(x, 0.0), scalar(x, oov_index));
  if (opts.num_oov_indices > 1) {  // the token's bucket among the OOV indices (LookupTable::oov_bucket)
    const double n = static_cast<double>(opts.num_oov_indices);
    SymbolicTensor bucket;
    if (opts.oov_method == "floormod") {  // x - n·trunc(x / n), + n when negative (exact below 2^52)
      const SymbolicTensor whole = ops::cast(ops::cast(ops::scale(x, 1.0 / n), DType::int64), DType::float64);
      bucket = ops::subtract(x, ops::scale(whole, n));
      bucket = ops::add(bucket, ops::scale(ops::less(bucket, scalar(x, 0.0)), n));
    } else {
      const auto salt = table_.salt();
      bucket = ops::cast(ops::hashing_bins(ops::cast(inputs[0], DType::int64), opts.num_oov_indices, false, 0,
                                           opts.salt.has_value(), salt[0], salt[1]),
                         DType::float64);
    }
    index = ops::add(index, bucket);
  }
  if (!table_.tokens().empty()) {
    std::vector<double> vocab;
    for (std::int64_t t : table_.tokens()) vocab.push_back(static_cast<double>(t));
    std::vector<std::int64_t> with_axis = x.shape().dims();
    with_axis.push_back(1);
    const SymbolicTensor hits = ops::equal(ops::reshape(x, with_axis), constant(x, vocab));  // (..., V)
    const SymbolicTensor found = ops::reduce_max(hits, {-1});
    const SymbolicTensor at = ops::add(ops::cast(ops::argmax(hits, -1), DType::float64),
                                       scalar(x, static_cast<double>(table_.special_tokens())));
    index = ops::add(ops::multiply(found, at), ops::multiply(ops::subtract(one(), found), index));
  }
  if (opts.mask_token) {  // the mask token's index is 0 in "int"; -1 elsewhere, which the encodings leave out
    const SymbolicTensor masked = ops::equal(x, scalar(x, static_cast<double>(*opts.mask_token)));
    index = ops::multiply(index, ops::subtract(one(), masked));
    if (!table_.mask_indexed()) index = ops::subtract(index, masked);
  }
  const SymbolicTensor indices = ops::cast(index, DType::int64);
  if (opts.output_mode == "int") return {indices};
  if (opts.output_mode != "tf_idf") return {encode_categorical(*this, indices, opts.output_mode, table_.vocabulary_size())};
  // tf_idf: the counts times each index's inverse document frequency.
  const std::vector<float>& idf = table_.idf_weights();
  const SymbolicTensor weights =
      x.graph().constant(Tensor::from_vector<float>(Shape{static_cast<std::int64_t>(idf.size())}, idf));
  return {ops::multiply(encode_categorical(*this, indices, "count", table_.vocabulary_size()), weights)};
}

nlohmann::json IntegerLookup::get_config() const {
  const auto& o = table_.options();
  nlohmann::json optional_int = nullptr;
  if (o.mask_token) optional_int = *o.mask_token;
  return layer_config(*this, {{"invert", o.invert},
                              {"max_tokens", o.max_tokens ? nlohmann::json(*o.max_tokens) : nlohmann::json(nullptr)},
                              {"num_oov_indices", o.num_oov_indices},
                              {"oov_token", o.oov_token},
                              {"mask_token", optional_int},
                              {"output_mode", o.output_mode},
                              {"sparse", false},
                              {"pad_to_max_tokens", false},
                              {"vocabulary_dtype", "int64"},
                              {"idf_weights", lookup_idf_config(table_)},
                              {"vocabulary", table_.tokens()},
                              {"vocabulary_size", table_.vocabulary_size()},
                              {"oov_method", o.oov_method},
                              {"salt", o.salt ? nlohmann::json(*o.salt) : nlohmann::json(nullptr)}});
}

LayerPtr IntegerLookup::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "IntegerLookup");
  r.check_common();
  IntegerLookupOptions options;
  read_lookup_options(r, config, options);
  return r.finish(IntegerLookup(options));
}

}  // namespace tower::layers
