// The unshared convolution of tf.keras 2's LocallyConnected1D/2D (implementation 1), composed of existing ops.
#pragma once

#include <cstdint>

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

// Keras's "valid" output length, conv_utils.conv_output_length: (in - k) / s + 1, or <= 0 when the
// window does not fit.
std::int64_t local_conv_output_length(std::int64_t in, std::int64_t kernel, std::int64_t stride);

}  // namespace tower::layers
