// The unshared convolution of LocallyConnected1D/2D.
#include "tower/layers/locally_connected/local_conv.h"

#include <algorithm>
#include <vector>

#include "tower/core/ops.h"

namespace tower::layers {

std::int64_t local_conv_output_length(std::int64_t in, std::int64_t kernel, std::int64_t stride) {
  if (in < kernel) return 0;
  return (in - kernel) / stride + 1;
}

SymbolicTensor local_conv2d(const SymbolicTensor& x, const SymbolicTensor& kernel, std::int64_t kh, std::int64_t kw,
                            std::int64_t sh, std::int64_t sw, std::int64_t oh, std::int64_t ow,
                            bool channels_first_order) {
  const std::int64_t rows = x.shape().dim(1), cols = x.shape().dim(2), in = x.shape().dim(3);
  const std::int64_t filters = kernel.shape().dim(2), positions = oh * ow, features = kh * kw * in;
  // With strides, each kernel offset takes oh * sh rows (ow * sw columns) and keeps every sh-th: pad the
  // end so that the last offset's block fits; the padding is never kept.
  SymbolicTensor xp = x;  // (batch, rows', cols', in)
  const std::int64_t pad_rows = std::max<std::int64_t>(0, kh - 1 + oh * sh - rows);
  const std::int64_t pad_cols = std::max<std::int64_t>(0, kw - 1 + ow * sw - cols);
  if (pad_rows > 0 || pad_cols > 0) xp = ops::pad(x, {0, 0, 0, pad_rows, 0, pad_cols, 0, 0});
  std::vector<SymbolicTensor> pieces;  // kh * kw of (batch, oh, ow, in): x[:, i + sh * r, j + sw * c, :]
  for (std::int64_t i = 0; i < kh; ++i)
    for (std::int64_t j = 0; j < kw; ++j) {
      SymbolicTensor p = ops::slice(xp, {0, i, j, 0}, {-1, oh * sh, ow * sw, in});  // (batch, oh*sh, ow*sw, in)
      if (sh > 1 || sw > 1) {
        p = ops::reshape(p, {-1, oh, sh, ow, sw, in});
        p = ops::slice(p, {0, 0, 0, 0, 0, 0}, {-1, oh, 1, ow, 1, in});  // (batch, oh, 1, ow, 1, in)
        p = ops::reshape(p, {-1, oh, ow, in});
      }
      pieces.push_back(p);
    }
  SymbolicTensor patches = pieces.size() == 1 ? pieces[0] : ops::concat(pieces, -1);  // (batch, oh, ow, kh*kw*in)
  if (channels_first_order && in > 1 && kh * kw > 1) {
    // Keras flattens a channels_first patch as (in, kh, kw).
    patches = ops::reshape(patches, {-1, positions, kh * kw, in});
    patches = ops::transpose(patches, {0, 1, 3, 2});  // (batch, positions, in, kh*kw)
  }
  patches = ops::reshape(patches, {-1, positions, features});  // (batch, positions, features)
  patches = ops::transpose(patches, {1, 0, 2});                // (positions, batch, features)
  SymbolicTensor y = ops::batch_matmul(patches, kernel);       // (positions, batch, filters)
  y = ops::transpose(y, {1, 0, 2});                            // (batch, positions, filters)
  return ops::reshape(y, {-1, oh, ow, filters});
}

}  // namespace tower::layers
