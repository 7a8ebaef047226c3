// The per-pixel mapping of TF's ImageProjectiveTransformV3 (keras.ops.image.affine_transform on the TF
// backend): where output pixel (x, y) samples its image, how fill modes fold that point back inside, and
// nearest or bilinear sampling. One copy for the CPU and CUDA kernels: inline functions with no tower
// includes, host and device code when nvcc compiles it (as core/resize.h).
#pragma once

#include <math.h>

#include <cstdint>

#ifdef __CUDACC__
#define TOWER_HOST_DEVICE __host__ __device__
#else
#define TOWER_HOST_DEVICE
#endif

namespace tower::image_transform {

enum class FillMode : int { reflect = 0, wrap = 1, constant = 2, nearest = 3 };

TOWER_HOST_DEVICE inline float clamp_to(float v, std::int64_t len) {
  const float hi = static_cast<float>(len - 1);
  return v < 0.0f ? 0.0f : (v > hi ? hi : v);
}

// TF's MapCoordinate: reflect folds [abcd] into dcba|abcd|dcba, wrap into abcd|abcd|abcd, nearest clamps,
// constant leaves the point (reads outside then give the fill value). Computed in float with int64
// truncations where TF truncates.
TOWER_HOST_DEVICE inline float map_coordinate(float in, std::int64_t len, FillMode mode) {
  if (mode == FillMode::constant) return in;
  if (mode == FillMode::reflect) {
    if (in < 0.0f) {
      if (len <= 1) {
        in = 0.0f;
      } else {
        const std::int64_t sz2 = 2 * len;
        const float fsz2 = static_cast<float>(sz2);
        if (in < -fsz2) in = fsz2 * static_cast<float>(static_cast<std::int64_t>(-in / fsz2)) + in;
        in = (in < static_cast<float>(-len)) ? in + fsz2 : -in - 1.0f;
      }
    } else if (in > static_cast<float>(len - 1)) {
      if (len <= 1) {
        in = 0.0f;
      } else {
        const float fsz2 = static_cast<float>(2 * len);
        in -= fsz2 * static_cast<float>(static_cast<std::int64_t>(in / fsz2));
        if (in >= static_cast<float>(len)) in = fsz2 - in - 1.0f;
      }
    }
  } else if (mode == FillMode::wrap) {
    if (in < 0.0f) {
      if (len <= 1) {
        in = 0.0f;
      } else {
        const float sz = static_cast<float>(len - 1);
        in += static_cast<float>(len) * static_cast<float>(static_cast<std::int64_t>(-in / sz) + 1);
      }
    } else if (in > static_cast<float>(len - 1)) {
      if (len <= 1) {
        in = 0.0f;
      } else {
        const float sz = static_cast<float>(len - 1);
        in -= static_cast<float>(len) * static_cast<float>(static_cast<std::int64_t>(in / sz));
      }
    }
  }
  return clamp_to(in, len);  // reflect, wrap and nearest
}

// One image (height, width, channels) of T, channel `ch`: the value at integer (y, x), or fill outside.
template <typename T>
TOWER_HOST_DEVICE inline float read_or_fill(const T* image, std::int64_t height, std::int64_t width,
                                            std::int64_t channels, std::int64_t ch, std::int64_t y, std::int64_t x,
                                            float fill) {
  return (0 <= y && y < height && 0 <= x && x < width) ? static_cast<float>(image[(y * width + x) * channels + ch])
                                                       : fill;
}

// Output pixel (ox, oy), channel ch, of an image (height, width, channels) under transform t[8]
// (a0 a1 a2 a3 a4 a5 a6 a7): it samples ((a0 x + a1 y + a2) / k, (a3 x + a4 y + a5) / k),
// k = a6 x + a7 y + 1 (k == 0: the fill value), mapped by the fill mode, then read nearest
// (round half away from zero) or bilinear (neighbours outside read the fill value), in float as TF.
template <typename T>
TOWER_HOST_DEVICE inline float transformed_pixel(const T* image, std::int64_t height, std::int64_t width,
                                                 std::int64_t channels, std::int64_t ch, const float* t,
                                                 std::int64_t ox, std::int64_t oy, bool bilinear, FillMode mode,
                                                 float fill) {
  const float x_out = static_cast<float>(ox), y_out = static_cast<float>(oy);
  const float k = t[6] * x_out + t[7] * y_out + 1.0f;
  if (k == 0.0f) return fill;
  const float x = map_coordinate((t[0] * x_out + t[1] * y_out + t[2]) / k, width, mode);
  const float y = map_coordinate((t[3] * x_out + t[4] * y_out + t[5]) / k, height, mode);
  if (!bilinear)
    return read_or_fill(image, height, width, channels, ch, static_cast<std::int64_t>(roundf(y)),
                        static_cast<std::int64_t>(roundf(x)), fill);
  const float y_floor = floorf(y), x_floor = floorf(x);
  const float y_ceil = y_floor + 1.0f, x_ceil = x_floor + 1.0f;
  const auto y0 = static_cast<std::int64_t>(y_floor), x0 = static_cast<std::int64_t>(x_floor);
  const auto y1 = static_cast<std::int64_t>(y_ceil), x1 = static_cast<std::int64_t>(x_ceil);
  const float top = (x_ceil - x) * read_or_fill(image, height, width, channels, ch, y0, x0, fill) +
                    (x - x_floor) * read_or_fill(image, height, width, channels, ch, y0, x1, fill);
  const float bottom = (x_ceil - x) * read_or_fill(image, height, width, channels, ch, y1, x0, fill) +
                       (x - x_floor) * read_or_fill(image, height, width, channels, ch, y1, x1, fill);
  return (y_ceil - y) * top + (y - y_floor) * bottom;
}

// Keras's rotation matrix about the image centre ((width - 1) / 2, (height - 1) / 2) for an angle in
// radians (BaseImagePreprocessingLayer._compute_affine_matrix with scale 1, no shear or translation),
// written to t[8].
TOWER_HOST_DEVICE inline void rotation_matrix(float angle, std::int64_t height, std::int64_t width, float* t) {
  const float cx = 0.5f * static_cast<float>(width - 1), cy = 0.5f * static_cast<float>(height - 1);
  const float c = cosf(angle), s = sinf(angle);
  t[0] = c;
  t[1] = -s;
  t[2] = cx - cx * c - cy * (-s);
  t[3] = s;
  t[4] = c;
  t[5] = cy - cx * s - cy * c;
  t[6] = 0.0f;
  t[7] = 0.0f;
}

}  // namespace tower::image_transform
