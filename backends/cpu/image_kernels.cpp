// CPU resize (tf.image.resize's bilinear and nearest sampling, NHWC) and its gradient; image_transform
// (TF's ImageProjectiveTransformV3, core/image_transform.h) and rotation_transform.
#include <algorithm>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/core/op_names.h"
#include "tower/core/image_transform.h"
#include "tower/core/resize.h"

namespace tower::cpu {

namespace {

// The sizes of one resize and its sampling; the taps of a row or column are computed where they are
// used (a few flops), so a step allocates nothing.
struct Sampling {
  std::int64_t batch, in_h, in_w, channels, out_h, out_w;
  bool bilinear;
  resize::Taps row(std::int64_t oy) const { return taps(oy, in_h, out_h); }
  resize::Taps col(std::int64_t ox) const { return taps(ox, in_w, out_w); }

 private:
  // Nearest sampling reads `lower` with lerp 0.
  resize::Taps taps(std::int64_t i, std::int64_t n_in, std::int64_t n_out) const {
    if (bilinear) return resize::bilinear_taps(i, n_in, n_out);
    const std::int64_t source = resize::nearest_source(i, n_in, n_out);
    return {source, source, 0.0f};
  }
};

Sampling sampling(const KernelContext& ctx, const Shape& x, const Shape& y) {
  return {x[0], x[1], x[2], x[3], y[1], y[2], ctx.attrs().get_string("interpolation") == "bilinear"};
}

// Output rows (n, oy) per chunk so that a chunk writes at least kElementwiseGrain elements.
std::int64_t row_grain(const Sampling& s) {
  return std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, s.out_w * s.channels));
}

// y (batch, out_h, out_w, c) = TF's (top + (bottom - top) · y_lerp), top and bottom lerped along x.
template <typename T>
void resize_forward(KernelContext& ctx, const Sampling& s, const T* x, T* y) {
  const std::int64_t c = s.channels;
  parallel_for(ctx, s.batch * s.out_h, row_grain(s), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t r = lo; r < hi; ++r) {
      const std::int64_t n = r / s.out_h;
      const resize::Taps ty = s.row(r % s.out_h);
      const T* top = x + ((n * s.in_h + ty.lower) * s.in_w) * c;
      const T* bottom = x + ((n * s.in_h + ty.upper) * s.in_w) * c;
      T* out = y + r * s.out_w * c;
      for (std::int64_t ox = 0; ox < s.out_w; ++ox, out += c) {
        const resize::Taps tx = s.col(ox);
        const T *tl = top + tx.lower * c, *tr = top + tx.upper * c;
        const T *bl = bottom + tx.lower * c, *br = bottom + tx.upper * c;
        const T xl = static_cast<T>(tx.lerp), yl = static_cast<T>(ty.lerp);
        for (std::int64_t ch = 0; ch < c; ++ch) {
          const T t = tl[ch] + (tr[ch] - tl[ch]) * xl;
          const T b = bl[ch] + (br[ch] - bl[ch]) * xl;
          out[ch] = t + (b - t) * yl;
        }
      }
    }
  });
}

// dx: each dy goes to its four taps with the forward's weights. Split over images, so no two threads
// add to the same dx element.
template <typename T>
void resize_backward(KernelContext& ctx, const Sampling& s, const T* dy, T* dx) {
  const std::int64_t c = s.channels, image = s.in_h * s.in_w * c;
  const std::int64_t grain = std::max<std::int64_t>(1, row_grain(s) / std::max<std::int64_t>(1, s.out_h));
  parallel_for(ctx, s.batch, grain, [&](std::int64_t n0, std::int64_t n1) {
    std::fill(dx + n0 * image, dx + n1 * image, T(0));
    for (std::int64_t n = n0; n < n1; ++n)
      for (std::int64_t oy = 0; oy < s.out_h; ++oy) {
        const resize::Taps ty = s.row(oy);
        T* top = dx + ((n * s.in_h + ty.lower) * s.in_w) * c;
        T* bottom = dx + ((n * s.in_h + ty.upper) * s.in_w) * c;
        const T* g = dy + ((n * s.out_h + oy) * s.out_w) * c;
        const T yl = static_cast<T>(ty.lerp);
        for (std::int64_t ox = 0; ox < s.out_w; ++ox, g += c) {
          const resize::Taps tx = s.col(ox);
          const T xl = static_cast<T>(tx.lerp);
          T *tl = top + tx.lower * c, *tr = top + tx.upper * c, *bl = bottom + tx.lower * c, *br = bottom + tx.upper * c;
          for (std::int64_t ch = 0; ch < c; ++ch) {
            const T t = g[ch] * (T(1) - yl), b = g[ch] * yl;
            tl[ch] += t * (T(1) - xl);
            tr[ch] += t * xl;
            bl[ch] += b * (T(1) - xl);
            br[ch] += b * xl;
          }
        }
      }
  });
}

// x (batch, h, w, c) -> y (batch, height, width, c).
void resize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  if (y.num_elements() == 0) return;
  const Sampling s = sampling(ctx, x.shape(), y.shape());
  dispatch_floating(y.dtype(), op_names::resize,
                    [&]<typename T>() { resize_forward(ctx, s, x.data<T>(), y.data<T>()); });
}

// (dy, x) -> dx with x's shape.
void resize_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  if (dx.num_elements() == 0) return;
  const Sampling s = sampling(ctx, dx.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::resize_grad,
                    [&]<typename T>() { resize_backward(ctx, s, dy.data<T>(), dx.data<T>()); });
}

image_transform::FillMode fill_mode_of(const KernelContext& ctx) {
  const std::string& mode = ctx.attrs().get_string("fill_mode");
  if (mode == "reflect") return image_transform::FillMode::reflect;
  if (mode == "wrap") return image_transform::FillMode::wrap;
  if (mode == "nearest") return image_transform::FillMode::nearest;
  return image_transform::FillMode::constant;
}

// (images (batch, h, w, c), transforms (batch, 8)) -> y (batch, out_h, out_w, c).
void image_transform_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& transforms = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  if (y.num_elements() == 0) return;
  const std::int64_t batch = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const std::int64_t out_h = y.shape()[1], out_w = y.shape()[2];
  const bool bilinear = ctx.attrs().get_string("interpolation") == "bilinear";
  const image_transform::FillMode mode = fill_mode_of(ctx);
  const auto fill = static_cast<float>(ctx.attrs().get_float("fill_value"));
  dispatch_floating(y.dtype(), op_names::image_transform, [&]<typename T>() {
    const T* in = x.data<T>();
    const T* tr = transforms.data<T>();
    T* out = y.data<T>();
    const std::int64_t grain = std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, out_w * c));
    parallel_for(ctx, batch * out_h, grain, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t r = lo; r < hi; ++r) {
        const std::int64_t n = r / out_h, oy = r % out_h;
        float t[8];
        for (int k = 0; k < 8; ++k) t[k] = static_cast<float>(tr[n * 8 + k]);  // TF casts transforms to float32
        const T* image = in + n * h * w * c;
        T* row = out + r * out_w * c;
        for (std::int64_t ox = 0; ox < out_w; ++ox)
          for (std::int64_t ch = 0; ch < c; ++ch)
            row[ox * c + ch] =
                static_cast<T>(image_transform::transformed_pixel(image, h, w, c, ch, t, ox, oy, bilinear, mode, fill));
      }
    });
  });
}

// angles (batch, 1) -> (batch, 8).
void rotation_transform_kernel(KernelContext& ctx) {
  const Tensor& angles = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const std::int64_t height = ctx.attrs().get_int("height"), width = ctx.attrs().get_int("width");
  dispatch_floating(y.dtype(), op_names::rotation_transform, [&]<typename T>() {
    const T* a = angles.data<T>();
    T* out = y.data<T>();
    for (std::int64_t n = 0; n < angles.shape()[0]; ++n) {
      float t[8];
      image_transform::rotation_matrix(static_cast<float>(a[n]), height, width, t);
      for (int k = 0; k < 8; ++k) out[n * 8 + k] = static_cast<T>(t[k]);
    }
  });
}

}  // namespace

void register_image_kernels() {
  register_kernel(op_names::resize, DeviceKind::cpu, resize_kernel);
  register_kernel(op_names::resize_grad, DeviceKind::cpu, resize_grad_kernel);
  register_kernel(op_names::image_transform, DeviceKind::cpu, image_transform_kernel);
  register_kernel(op_names::rotation_transform, DeviceKind::cpu, rotation_transform_kernel);
}

}  // namespace tower::cpu
