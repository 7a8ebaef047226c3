// The unshared convolution of tf.keras 2's LocallyConnected1D/2D, composed of existing ops, and the
// kernel layouts of its three implementations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/core/graph.h"

namespace tower::layers {

// tf.keras's backend.local_conv on a channels-last x (batch, rows, cols, in) with a per-position kernel
// (out_rows * out_cols, kh * kw * in, filters) -> (batch, out_rows, out_cols, filters), "valid" padding.
// Each position's patch is flattened as Keras flattens it: (kh, kw, in) for channels_last layers,
// (in, kh, kw) when `channels_first_order` (the layer's data_format is channels_first). The patches are
// kh * kw strided slices concatenated on the channels, then one batched matmul over the positions, so
// every device with those ops runs it and the gradients come from theirs.
SymbolicTensor local_conv2d(const SymbolicTensor& x, const SymbolicTensor& kernel, std::int64_t kernel_rows,
                            std::int64_t kernel_cols, std::int64_t stride_rows, std::int64_t stride_cols,
                            std::int64_t out_rows, std::int64_t out_cols, bool channels_first_order);

// Keras's conv_utils.conv_output_length: "valid" (in - k) / s + 1 (<= 0 when the window does not
// fit), "same" ceil(in / s).
std::int64_t local_conv_output_length(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                      const std::string& padding = "valid");

// One LocallyConnected layer's geometry on its channels-last input; a 1-D layer is rows = kh = sh = 1.
// Output position (r, c) sees the input rows r * sh - pad_top + [0, kh) and columns c * sw - pad_left +
// [0, kw), those inside the input (Keras's conv_utils.conv_connected_inputs: "same" shifts the window
// by k // 2, "valid" not at all).
struct LocalConvGeometry {
  std::int64_t rows, cols, in;           // the input (channels last)
  std::int64_t kh, kw, sh, sw;           // window and strides
  std::int64_t out_rows, out_cols, filters;
  std::int64_t pad_top = 0, pad_left = 0;  // "same": kh / 2, kw / 2
  bool channels_first = false;           // the layer's data_format, which Keras's layouts 2 and 3 follow
};

LocalConvGeometry local_conv_geometry(std::int64_t rows, std::int64_t cols, std::int64_t in, std::int64_t kh,
                                      std::int64_t kw, std::int64_t sh, std::int64_t sw, std::int64_t filters,
                                      const std::string& padding, bool channels_first);

// The shape of tf.keras's kernel:
//   implementation 1: (out_rows * out_cols, kh * kw * in, filters)
//   implementation 2: the dense masked kernel, (rows, cols, in, out_rows, out_cols, filters), or
//                     (in, rows, cols, filters, out_rows, out_cols) with channels_first; 1-D layers drop
//                     rows and out_rows: (steps, in, out_steps, filters) / (in, steps, filters, out_steps)
//   implementation 3: (number of connected (output, input) pairs,), the values of the sparse kernel in
//                     the order of its sorted (output index, input index) pairs
Shape local_conv_kernel_shape(const LocalConvGeometry& g, std::int64_t implementation, bool one_d);

// For implementations 2 and 3: for each entry of the implementation-1 kernel (out_rows * out_cols,
// kh * kw * in, filters) (patches flattened as (kh, kw, in)), the index into the flat Keras kernel it is,
// or the Keras kernel's size where the window lies outside the input ("same" padding: a zero weight).
std::vector<std::int64_t> local_conv_kernel_table(const LocalConvGeometry& g, std::int64_t implementation);

// tf.keras's kernel of implementation 2 or 3 as the implementation-1 kernel (out_rows * out_cols,
// kh * kw * in, filters), patches flattened (kh, kw, in) whatever the data_format: one gather, so the
// gradients reach the stored kernel (zero on implementation 2's masked entries, as Keras's mask makes them).
SymbolicTensor local_conv_kernel_from_keras(const SymbolicTensor& kernel, const LocalConvGeometry& g,
                                            std::int64_t implementation);

// The unshared convolution of a channels-last x (batch, rows, cols, in) with tf.keras's kernel of any
// implementation -> (batch, out_rows, out_cols, filters); "same" pads x with zeros first.
SymbolicTensor local_conv(const SymbolicTensor& x, const SymbolicTensor& kernel, const LocalConvGeometry& g,
                          std::int64_t implementation);

}  // namespace tower::layers
