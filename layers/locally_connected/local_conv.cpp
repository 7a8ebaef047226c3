// The unshared convolution of LocallyConnected1D/2D.
#include "tower/layers/locally_connected/local_conv.h"

#include <algorithm>
#include <array>
#include <vector>

#include "tower/core/ops.h"

namespace tower::layers {

std::int64_t local_conv_output_length(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                      const std::string& padding) {
  if (padding == "same") return (in + stride - 1) / stride;
  if (in < kernel) return 0;
  return (in - kernel) / stride + 1;
}

LocalConvGeometry local_conv_geometry(std::int64_t rows, std::int64_t cols, std::int64_t in, std::int64_t kh,
                                      std::int64_t kw, std::int64_t sh, std::int64_t sw, std::int64_t filters,
                                      const std::string& padding, bool channels_first) {
  const bool same = padding == "same";
  return {.rows = rows,
          .cols = cols,
          .in = in,
          .kh = kh,
          .kw = kw,
          .sh = sh,
          .sw = sw,
          .out_rows = local_conv_output_length(rows, kh, sh, padding),
          .out_cols = local_conv_output_length(cols, kw, sw, padding),
          .filters = filters,
          .pad_top = same ? kh / 2 : 0,
          .pad_left = same ? kw / 2 : 0,
          .channels_first = channels_first};
}

Shape local_conv_kernel_shape(const LocalConvGeometry& g, std::int64_t implementation, bool one_d) {
  if (implementation == 1) return Shape{g.out_rows * g.out_cols, g.kh * g.kw * g.in, g.filters};
  if (implementation == 2) {
    if (one_d)
      return g.channels_first ? Shape{g.in, g.cols, g.filters, g.out_cols} : Shape{g.cols, g.in, g.out_cols, g.filters};
    return g.channels_first ? Shape{g.in, g.rows, g.cols, g.filters, g.out_rows, g.out_cols}
                            : Shape{g.rows, g.cols, g.in, g.out_rows, g.out_cols, g.filters};
  }
  // Implementation 3: one value per connected (input position, output position, in, filter).
  std::int64_t connected = 0;
  for (std::int64_t r = 0; r < g.out_rows; ++r)
    for (std::int64_t c = 0; c < g.out_cols; ++c) {
      const std::int64_t r0 = r * g.sh - g.pad_top, c0 = c * g.sw - g.pad_left;
      const std::int64_t nr = std::min(g.rows, r0 + g.kh) - std::max<std::int64_t>(0, r0);
      const std::int64_t nc = std::min(g.cols, c0 + g.kw) - std::max<std::int64_t>(0, c0);
      connected += std::max<std::int64_t>(0, nr) * std::max<std::int64_t>(0, nc);
    }
  return Shape{connected * g.in * g.filters};
}

std::vector<std::int64_t> local_conv_kernel_table(const LocalConvGeometry& g, std::int64_t implementation) {
  const std::int64_t positions = g.out_rows * g.out_cols, features = g.kh * g.kw * g.in;
  const std::int64_t size = positions * features * g.filters;
  // Implementation 3's entries in Keras's order: sorted by (output index, input index), both raveled in the
  // layer's data_format (conv_utils.conv_kernel_idxs), each with the implementation-1 entry it is.
  std::vector<std::array<std::int64_t, 3>> sparse;  // (output index, input index, implementation-1 index)
  std::vector<std::int64_t> table(static_cast<std::size_t>(size), -1);
  for (std::int64_t orow = 0; orow < g.out_rows; ++orow)
    for (std::int64_t ocol = 0; ocol < g.out_cols; ++ocol)
      for (std::int64_t a = 0; a < g.kh; ++a)
        for (std::int64_t b = 0; b < g.kw; ++b) {
          const std::int64_t r = orow * g.sh - g.pad_top + a, c = ocol * g.sw - g.pad_left + b;
          const bool inside = r >= 0 && r < g.rows && c >= 0 && c < g.cols;
          for (std::int64_t i = 0; i < g.in; ++i)
            for (std::int64_t f = 0; f < g.filters; ++f) {
              const std::int64_t at = ((orow * g.out_cols + ocol) * features + (a * g.kw + b) * g.in + i) * g.filters + f;
              if (!inside) continue;  // stays -1: the zero past the Keras kernel
              if (implementation == 2) {
                table[at] = g.channels_first
                                ? ((((i * g.rows + r) * g.cols + c) * g.filters + f) * g.out_rows + orow) * g.out_cols + ocol
                                : ((((r * g.cols + c) * g.in + i) * g.out_rows + orow) * g.out_cols + ocol) * g.filters + f;
              } else {
                const std::int64_t out = g.channels_first ? (f * g.out_rows + orow) * g.out_cols + ocol
                                                          : (orow * g.out_cols + ocol) * g.filters + f;
                const std::int64_t in = g.channels_first ? (i * g.rows + r) * g.cols + c : (r * g.cols + c) * g.in + i;
                sparse.push_back({out, in, at});
              }
            }
        }
  std::int64_t keras_size = 0;
  if (implementation == 2) {
    keras_size = g.rows * g.cols * g.in * g.out_rows * g.out_cols * g.filters;
  } else {
    std::sort(sparse.begin(), sparse.end());
    keras_size = static_cast<std::int64_t>(sparse.size());
    for (std::size_t n = 0; n < sparse.size(); ++n) table[sparse[n][2]] = static_cast<std::int64_t>(n);
  }
  for (auto& t : table)
    if (t < 0) t = keras_size;
  return table;
}

SymbolicTensor local_conv_kernel_from_keras(const SymbolicTensor& kernel, const LocalConvGeometry& g,
                                            std::int64_t implementation) {
  const std::vector<std::int64_t> table = local_conv_kernel_table(g, implementation);
  const std::int64_t n = kernel.shape().num_elements();
  SymbolicTensor flat = ops::reshape(kernel, {n});  // (n,)
  // Window positions outside the input ("same") read one zero appended to the kernel.
  if (std::find(table.begin(), table.end(), n) != table.end()) flat = ops::pad(flat, {0, 1});  // (n + 1,)
  const Shape shape{g.out_rows * g.out_cols, g.kh * g.kw * g.in, g.filters};
  const SymbolicTensor at = kernel.graph().constant(Tensor::from_vector<std::int64_t>(shape, table));
  return ops::gather(flat, at);  // (out_rows * out_cols, kh * kw * in, filters)
}

SymbolicTensor local_conv(const SymbolicTensor& x, const SymbolicTensor& kernel, const LocalConvGeometry& g,
                          std::int64_t implementation) {
  if (implementation == 1)
    return local_conv2d(x, kernel, g.kh, g.kw, g.sh, g.sw, g.out_rows, g.out_cols, g.channels_first);
  SymbolicTensor xp = x;  // (batch, pad_top + rows, pad_left + cols, in); local_conv2d pads the end
  if (g.pad_top > 0 || g.pad_left > 0) xp = ops::pad(x, {0, 0, g.pad_top, 0, g.pad_left, 0, 0, 0});
  return local_conv2d(xp, local_conv_kernel_from_keras(kernel, g, implementation), g.kh, g.kw, g.sh, g.sw,
                      g.out_rows, g.out_cols, /*channels_first_order=*/false);
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
