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
void register_normalization_kernels();  // normalization_kernels.cpp
void register_dropout_kernels();     // dropout_kernels.cpp
void register_image_kernels();       // image_kernels.cpp

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

}  // namespace tower::cpu
