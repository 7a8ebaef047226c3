// Window geometry of convolution and pooling ops along any number of spatial axes: TF/Keras
// "valid"/"same" padding, output lengths, padding before/after, which outputs see an input position.
// One copy for the shape functions (core/ops), the CPU kernels and the CUDA kernels and cuDNN plans:
// constexpr functions only, no tower includes, host and device code when nvcc compiles it.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define TOWER_HOST_DEVICE __host__ __device__
#else
#define TOWER_HOST_DEVICE
#endif

namespace tower::window {

enum class Padding { valid, same };

// Rows (or columns) of zeros before and after the input along one axis.
struct Pad {
  std::int64_t before = 0, after = 0;
  constexpr bool operator==(const Pad&) const = default;
};

// Input positions one window covers: k taps, d apart.
TOWER_HOST_DEVICE constexpr std::int64_t span(std::int64_t k, std::int64_t dilation) { return (k - 1) * dilation + 1; }

// Output length along one axis; -1 when the input length is unknown (-1). "same": ceil(in / stride);
// "valid": the windows that fit, 0 when the window is longer than the input (a shape function
// refuses that with a message naming the fix).
TOWER_HOST_DEVICE constexpr std::int64_t output_length(std::int64_t in, std::int64_t k, std::int64_t stride,
                                                       std::int64_t dilation, Padding padding) {
  if (in < 0) return -1;
  if (padding == Padding::same) return in / stride + (in % stride != 0);  // in + stride - 1 overflowed a huge stride
  const std::int64_t s = span(k, dilation);
  return s > in ? 0 : (in - s) / stride + 1;
}

// TF's "same" padding for `out` outputs: total = max((out - 1) * stride + span - in, 0), the smaller
// half before (cuDNN pads symmetrically, so the CUDA conv adds the odd row itself).
TOWER_HOST_DEVICE constexpr Pad same_padding(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                                             std::int64_t dilation) {
  const std::int64_t need = (out - 1) * stride + span(k, dilation) - in;
  const std::int64_t total = need > 0 ? need : 0;
  return {total / 2, total - total / 2};
}

TOWER_HOST_DEVICE constexpr Pad padding_of(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                                           std::int64_t dilation, Padding padding) {
  return padding == Padding::same ? same_padding(in, out, k, stride, dilation) : Pad{};
}

// The first input position of output o's window (negative: it starts in the padding).
TOWER_HOST_DEVICE constexpr std::int64_t window_start(std::int64_t o, std::int64_t stride, std::int64_t pad_before) {
  return o * stride - pad_before;
}

// [lo, hi): a half-open range of positions.
struct Range {
  std::int64_t lo = 0, hi = 0;
  TOWER_HOST_DEVICE constexpr std::int64_t size() const { return hi > lo ? hi - lo : 0; }
};

// The part of output o's window (k long, no dilation) inside an input of length `in`.
TOWER_HOST_DEVICE constexpr Range window_inside(std::int64_t o, std::int64_t k, std::int64_t stride,
                                                std::int64_t pad_before, std::int64_t in) {
  const std::int64_t start = window_start(o, stride, pad_before);
  return {start > 0 ? start : 0, start + k < in ? start + k : in};
}

// The outputs whose windows (k long, no dilation) contain input position i, clipped to [0, out):
// o * s - pad <= i < o * s - pad + k  <=>  (i + pad - k) / s < o <= (i + pad) / s.
TOWER_HOST_DEVICE constexpr Range windows_containing(std::int64_t i, std::int64_t k, std::int64_t stride,
                                                     std::int64_t pad_before, std::int64_t out) {
  const std::int64_t top = i + pad_before;  // >= 0 for a position inside the input
  const std::int64_t lo = top - k + 1 <= 0 ? 0 : (top - k + 1 + stride - 1) / stride;
  const std::int64_t hi = top / stride + 1;
  return {lo, hi < out ? hi : out};
}

// The geometry of an N-dimensional window op (N = 1, 2, 3 for Conv1D/2D/3D and their pooling), axis by
// axis: input and output lengths, window size, strides, dilation and padding.
template <int N>
struct Geometry {
  std::int64_t in[N] = {}, out[N] = {}, kernel[N] = {}, stride[N] = {}, dilation[N] = {};
  Pad pad[N] = {};
};

// From the input lengths, window, strides and dilation (null: 1): the output lengths and padding.
template <int N>
TOWER_HOST_DEVICE constexpr Geometry<N> make_geometry(const std::int64_t* in, const std::int64_t* kernel,
                                                      const std::int64_t* stride, const std::int64_t* dilation,
                                                      Padding padding) {
  Geometry<N> g;
  for (int a = 0; a < N; ++a) {
    g.in[a] = in[a];
    g.kernel[a] = kernel[a];
    g.stride[a] = stride[a];
    g.dilation[a] = dilation ? dilation[a] : 1;
    g.out[a] = output_length(g.in[a], g.kernel[a], g.stride[a], g.dilation[a], padding);
    g.pad[a] = padding_of(g.in[a], g.out[a], g.kernel[a], g.stride[a], g.dilation[a], padding);
  }
  return g;
}

}  // namespace tower::window
