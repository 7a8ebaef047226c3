// Recurrent weights in CuDNNLSTM / CuDNNGRU and Keras 1 layouts -> LSTM and GRU (rnn_weights_internal.h).
#include "tower/io/rnn_weights_internal.h"

#include <cstdint>

#include "tower/core/error.h"
#include "tower/layers/rnn/gru.h"
#include "tower/layers/rnn/lstm.h"

namespace tower::io {

namespace {

enum class Source { none, cudnn_lstm, cudnn_gru, keras1_lstm, keras1_gru };

Source source_of(const Layer& layer, const std::vector<Shape>& shapes) {
  const auto* lstm = dynamic_cast<const layers::LSTM*>(&layer);
  const auto* gru = dynamic_cast<const layers::GRU*>(&layer);
  if (!lstm && !gru) return Source::none;
  const std::int64_t units = lstm ? lstm->units() : gru->units();
  if (lstm && shapes.size() == 12) return Source::keras1_lstm;
  if (gru && shapes.size() == 9) return Source::keras1_gru;
  if (shapes.size() != 3) return Source::none;
  // cuDNN keeps an input and a recurrent bias per gate, one after the other: (2·gates·units,).
  if (lstm && shapes[2] == Shape{8 * units}) return Source::cudnn_lstm;
  if (gru && shapes[2] == Shape{6 * units}) return Source::cudnn_gru;
  return Source::none;
}

std::vector<float> values(const Tensor& t) { return t.to(cpu_device()).to_vector<float>(); }

// Keras's transform_kernels: `fn` applied to each gate's (rows, units) column block of a (rows,
// gates·units) kernel.
template <typename F>
Tensor per_gate(const Tensor& kernel, int gates, F fn) {
  const std::int64_t rows = kernel.shape()[0], width = kernel.shape()[1], units = width / gates;
  const auto in = values(kernel);
  std::vector<float> out(in.size());
  std::vector<float> block(static_cast<std::size_t>(rows * units));
  for (int g = 0; g < gates; ++g) {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < units; ++j) block[r * units + j] = in[r * width + g * units + j];
    const std::vector<float> converted = fn(block, rows, units);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < units; ++j) out[r * width + g * units + j] = converted[r * units + j];
  }
  return Tensor::from_vector<float>(kernel.shape(), out);
}

// cuDNN's input kernel of one gate -> Keras's: k.T.reshape(k.shape, order="F") (Keras's
// transpose_input(from_cudnn=True)). k.T read column-major is k read row-major, so element (i, j)
// of the result is k's row-major element i + j·rows.
std::vector<float> input_from_cudnn(const std::vector<float>& k, std::int64_t rows, std::int64_t units) {
  std::vector<float> out(k.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < units; ++j) out[i * units + j] = k[i + j * rows];
  return out;
}

// cuDNN's recurrent kernel of one gate (units, units) is Keras's transposed.
std::vector<float> transposed(const std::vector<float>& k, std::int64_t rows, std::int64_t units) {
  std::vector<float> out(k.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < units; ++j) out[i * units + j] = k[j * rows + i];
  return out;
}

// The weights a, b, c, ... concatenated along their last axis.
Tensor concat_last(const std::vector<Tensor>& parts) {
  const std::int64_t rows = parts[0].shape().rank() == 1 ? 1 : parts[0].shape()[0];
  std::vector<std::vector<float>> vals;
  std::int64_t width = 0;
  for (const auto& p : parts) {
    vals.push_back(values(p));
    width += p.shape().dim(-1);
  }
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(rows * width));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const std::int64_t w = parts[k].shape().dim(-1);
      out.insert(out.end(), vals[k].begin() + r * w, vals[k].begin() + (r + 1) * w);
    }
  return Tensor::from_vector<float>(parts[0].shape().rank() == 1 ? Shape{width} : Shape{rows, width}, out);
}

}  // namespace

bool converts_rnn_weights(const Layer& layer, const std::vector<Shape>& file_shapes) {
  return source_of(layer, file_shapes) != Source::none;
}

std::vector<Tensor> convert_rnn_weights(const Layer& layer, const std::vector<Tensor>& w) {
  std::vector<Shape> shapes;
  for (const auto& t : w) shapes.push_back(t.shape());
  switch (source_of(layer, shapes)) {
    case Source::cudnn_lstm: {  // the two biases summed
      const auto b = values(w[2]);
      const std::size_t half = b.size() / 2;
      std::vector<float> bias(half);
      for (std::size_t k = 0; k < half; ++k) bias[k] = b[k] + b[half + k];
      return {per_gate(w[0], 4, input_from_cudnn), per_gate(w[1], 4, transposed),
              Tensor::from_vector<float>(Shape{static_cast<std::int64_t>(half)}, bias)};
    }
    case Source::cudnn_gru: {  // GRU(reset_after=True)'s (2, 3·units) bias: the input's, then the recurrent's
      if (!*dynamic_cast<const layers::GRU&>(layer).options().reset_after)
        raise<ValueError>("GRU \"{}\": the file holds CuDNNGRU weights, which only a GRU with reset_after=true "
                          "takes (cuDNN applies the reset gate after the recurrent product)",
                          layer.name());
      const std::int64_t width = w[2].shape()[0] / 2;
      return {per_gate(w[0], 3, input_from_cudnn), per_gate(w[1], 3, transposed),
              Tensor::from_vector<float>(Shape{2, width}, values(w[2]))};
    }
    case Source::keras1_lstm:  // W, U, b per gate in the order i, c, f, o
      return {concat_last({w[0], w[6], w[3], w[9]}), concat_last({w[1], w[7], w[4], w[10]}),
              concat_last({w[2], w[8], w[5], w[11]})};
    case Source::keras1_gru:  // W, U, b per gate in the order z, r, h
      return {concat_last({w[0], w[3], w[6]}), concat_last({w[1], w[4], w[7]}), concat_last({w[2], w[5], w[8]})};
    case Source::none: break;
  }
  return w;
}

}  // namespace tower::io
