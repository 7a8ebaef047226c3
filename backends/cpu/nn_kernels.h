// Private to the CPU backend: registration of the nn kernel files and the 2-D window geometry
// (strides, dilation, TF-style "same"/"valid" padding) that conv and pooling kernels share.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tower/core/op_registry.h"
#include "tower/core/window.h"

namespace tower::cpu {

void register_conv_kernels();        // conv_kernels.cpp
void register_pool_kernels();        // pool_kernels.cpp
void register_conv3d_kernels();      // conv3d_kernels.cpp
void register_pool3d_kernels();      // pool3d_kernels.cpp
void register_normalization_kernels();  // normalization_kernels.cpp
void register_dropout_kernels();     // dropout_kernels.cpp
void register_image_kernels();       // image_kernels.cpp

// One window position of a max-pool gradient over its c channels: where `in` equals the window's max
// and no earlier position did (`done`, 0/1 per channel, updated), dy goes to dx. Branch-free on
// unaliased pointers, so that it vectorizes (with -fno-trapping-math, see CMakeLists.txt). kAdd false
// (windows that never overlap) writes 0 + the routed dy over dx, the same numbers without zeroing
// dx first.
template <bool kAdd = true, typename T>
void route_max(const T* __restrict in, const T* __restrict max, const T* __restrict grad, T* __restrict out,
               T* __restrict done, std::int64_t c) {
  for (std::int64_t e = 0; e < c; ++e) {
    const T g = grad[e], before = done[e];  // loaded unconditionally, so that the selects if-convert
    const T hit = in[e] == max[e] ? T(1) - before : T(0);
    // A select: an infinite dy of another window stays out.
    out[e] = (kAdd ? out[e] : T(0)) + (hit != T(0) ? g : T(0));
    done[e] = before + hit;
  }
}

// Where the windows of a conv or pooling op over x (batch, in_h, in_w, c) sit. Output position
// (oy, ox) reads input rows oy * stride_h - pad_top + i * dilation_h, i < kernel_h (columns alike).
struct Window2D {
  std::int64_t batch, in_h, in_w, channels;
  std::int64_t out_h, out_w;
  std::int64_t kernel_h, kernel_w, stride_h, stride_w, dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_left = 0;
};

// Below about this many FLOPs a convolution runs on one thread: waking the pool would cost more.
inline constexpr std::int64_t kParallelFlops = 1 << 20;

// depthwise_kernels.cpp: conv2d with one input channel per group. w: the window over x (batch, h, w, c)
// with all c channels; m: filters per channel; kernel (kh, kw, 1, c·m); y and dy (batch, oh, ow, c·m).
template <typename T>
void depthwise_conv2d(KernelContext& ctx, const Window2D& w, std::int64_t m, const T* x, const T* kernel, T* y);
template <typename T>
void depthwise_conv2d_backward_data(KernelContext& ctx, const Window2D& w, std::int64_t m, const T* dy,
                                    const T* kernel, T* dx);
template <typename T>
void depthwise_conv2d_backward_filter(KernelContext& ctx, const Window2D& w, std::int64_t m, const T* x, const T* dy,
                                      T* dkernel);

// The window geometry from the node's attrs, the x shape (batch, h, w, c), the window size and the
// output size the shape function gave. "same" pads as TF (window::same_padding): the smaller half before.
inline Window2D make_window(const KernelContext& ctx, const Shape& x, std::int64_t kernel_h, std::int64_t kernel_w,
                            std::int64_t out_h, std::int64_t out_w) {
  const Attrs& attrs = ctx.attrs();
  Window2D w{.batch = x[0],
             .in_h = x[1],
             .in_w = x[2],
             .channels = x[3],
             .out_h = out_h,
             .out_w = out_w,
             .kernel_h = kernel_h,
             .kernel_w = kernel_w,
             .stride_h = attrs.get_ints("strides")[0],
             .stride_w = attrs.get_ints("strides")[1]};
  if (attrs.has("dilation_rate")) {
    w.dilation_h = attrs.get_ints("dilation_rate")[0];
    w.dilation_w = attrs.get_ints("dilation_rate")[1];
  }
  if (attrs.get_string("padding") == "same") {
    w.pad_top = window::same_padding(w.in_h, out_h, kernel_h, w.stride_h, w.dilation_h).before;
    w.pad_left = window::same_padding(w.in_w, out_w, kernel_w, w.stride_w, w.dilation_w).before;
  }
  return w;
}

// Where the windows of a 3-D conv or pooling op over x (batch, d, h, w, c) sit: along axis a (depth,
// height, width) output o reads input o * stride[a] - pad[a] + i * dilation[a], i < kernel[a].
struct Window3D {
  std::int64_t batch = 0, channels = 0;
  std::int64_t in[3] = {}, out[3] = {}, kernel[3] = {}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  std::int64_t pad[3] = {};  // before; TF's "same" rule (window::same_padding), the smaller half before
};

// The 3-D window geometry from the node's attrs (strides, padding, dilation_rate if any), x (batch, d,
// h, w, c), the window and the output (batch, od, oh, ow, c') the shape function gave.
inline Window3D make_window3d(const KernelContext& ctx, const Shape& x, const std::int64_t* kernel, const Shape& y) {
  const Attrs& attrs = ctx.attrs();
  Window3D w{.batch = x[0], .channels = x[4]};
  const bool same = attrs.get_string("padding") == "same";
  for (int a = 0; a < 3; ++a) {
    w.in[a] = x[a + 1];
    w.out[a] = y[a + 1];
    w.kernel[a] = kernel[a];
    w.stride[a] = attrs.get_ints("strides")[a];
    if (attrs.has("dilation_rate")) w.dilation[a] = attrs.get_ints("dilation_rate")[a];
    if (same) w.pad[a] = window::same_padding(w.in[a], w.out[a], w.kernel[a], w.stride[a], w.dilation[a]).before;
  }
  return w;
}

}  // namespace tower::cpu
