// Private to the CPU backend: float32 work that oneDNN (Debian's libdnnl, built in when CMake finds it:
// TOWER_WITH_ONEDNN) does faster than OpenBLAS and tower's own loops on this machine's AVX-512 cores
// (docs/benchmarks.md): conv2d, its backward data and backward filter, and single-threaded sgemm.
// The callers ask these first and run their own code when they answer false.
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
// bias (c_out,), when not null, is added to y (then max(y, 0) when relu) as the output is written.
bool conv2d_forward(KernelContext& ctx, const Conv2DShape& s, const float* x, const float* kernel, float* y,
                    const float* bias = nullptr, bool relu = false);
bool conv2d_backward_data(KernelContext& ctx, const Conv2DShape& s, const float* dy, const float* kernel,
                          float* dx);
// dkernel: (kh, kw, c_in, c_out); the images' partial sums are added in a fixed order.
bool conv2d_backward_filter(KernelContext& ctx, const Conv2DShape& s, const float* x, const float* dy,
                            float* dkernel);

// c (m, n) = op(a) op(b) + beta c, row-major, on the calling thread (as cblas_sgemm with OpenBLAS at
// one thread); false, having done nothing, for products with a side under kMinGemmSide (OpenBLAS measured
// faster there) or without oneDNN.
bool sgemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
           float* c, int ldc);

// Whether the library was built with oneDNN.
bool built_in();
// Tests: false makes conv2d_shape answer false (the own loops run), to compare the two paths.
void set_enabled(bool enabled);

}  // namespace tower::cpu::onednn
