// Recurrent layers' weights written in layouts other than LSTM's and GRU's own, converted when a file
// is loaded, as Keras's legacy loader does (preprocess_weights_for_loading): Keras 2's CuDNNLSTM and
// CuDNNGRU (cuDNN's per-gate kernel layout, input and recurrent biases apart) and Keras 1's LSTM
// (12 weights, gates i, c, f, o) and GRU (9 weights). Private to io/.
#pragma once

#include <vector>

#include "tower/core/tensor.h"
#include "tower/layers/layer.h"

namespace tower::io {

// True when the file's weights of `layer` (their shapes, in the file's order) are one of those
// layouts and convert_rnn_weights turns them into the layer's own.
bool converts_rnn_weights(const Layer& layer, const std::vector<Shape>& file_shapes);

// The file's weights (float32, host) in `layer`'s layout; call only when converts_rnn_weights.
std::vector<Tensor> convert_rnn_weights(const Layer& layer, const std::vector<Tensor>& file_weights);

}  // namespace tower::io
