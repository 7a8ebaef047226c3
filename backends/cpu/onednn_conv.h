// Private to the CPU backend: float32 conv2d, its backward data and backward filter through oneDNN
// (Debian's libdnnl, built when CMake finds it: TOWER_WITH_ONEDNN). conv_kernels.cpp asks these first
// and runs its own im2col + OpenBLAS loops when they answer false.
#pragma once

#include <cstdint>

#include "tower/backends/cpu/nn_kernels.h"

namespace tower::cpu::onednn {

// One 2-D convolution in NHWC with a (kh, kw, c_in, c_out) kernel, as Keras lays both out.
struct Conv2DShape {
  Window2D w;               // the window over x (batch, in_h, in_w, c_in): w.channels is c_in
  std::int64_t filters;     // c_out
  std::int64_t pad_bottom;  // oneDNN's right padding (may be negative: "valid" rows the window never reaches)
  std::int64_t pad_right;
};

// The shape of the convolution of window w with `filters` outputs, or false where oneDNN is not built
// in, is switched off (TOWER_ONEDNN=0), or is not worth asking (fewer than kMinChannels input
// channels: measured slower than the small-K loops there; groups; empty tensors).
bool conv2d_shape(const Window2D& w, std::int64_t filters, std::int64_t groups, Conv2DShape* shape);

// Each runs the op with the batch split over the device pool (one oneDNN primitive per thread, on its
// images) and answers false, having written nothing, where oneDNN has no primitive for the shape.
// x: (batch, in_h, in_w, c_in), kernel: (kh, kw, c_in, c_out), y / dy: (batch, out_h, out_w, c_out).
bool conv2d_forward(KernelContext& ctx, const Conv2DShape& s, const float* x, const float* kernel, float* y);
bool conv2d_backward_data(KernelContext& ctx, const Conv2DShape& s, const float* dy, const float* kernel,
                          float* dx);
// dkernel: (kh, kw, c_in, c_out); the images' partial sums are added in a fixed order.
bool conv2d_backward_filter(KernelContext& ctx, const Conv2DShape& s, const float* x, const float* dy,
                            float* dkernel);

// Whether the library was built with oneDNN.
bool built_in();
// Tests: false makes conv2d_shape answer false (the own loops run), to compare the two paths.
void set_enabled(bool enabled);

}  // namespace tower::cpu::onednn
