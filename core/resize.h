// The sampling of tf.image.resize (TF 2, half-pixel centers, no antialiasing), which Keras's
// UpSampling2D (bilinear) and Resizing use: for each output row (or column), the input rows it
// reads and their weights. One copy for the CPU and CUDA kernels: inline functions with no tower
// includes, host and device code when nvcc compiles it.
#pragma once

#include <math.h>

#include <cstdint>

#ifdef __CUDACC__
#define TOWER_HOST_DEVICE __host__ __device__
#else
#define TOWER_HOST_DEVICE
#endif

namespace tower::resize {

// Output index i of `out` reads input `lower` with weight 1 - lerp and `upper` with weight lerp.
struct Taps {
  std::int64_t lower = 0, upper = 0;
  float lerp = 0.0f;
};

// Bilinear (TF's compute_interpolation_weights with HalfPixelScaler, in float as TF computes it):
// source = (i + 0.5) · in / out - 0.5, lower = max(floor(source), 0), upper = min(ceil(source), in - 1),
// lerp = source - floor(source).
TOWER_HOST_DEVICE inline Taps bilinear_taps(std::int64_t i, std::int64_t in, std::int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float source = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
  const float floor_source = floorf(source);
  const auto lower = static_cast<std::int64_t>(floor_source), upper = static_cast<std::int64_t>(ceilf(source));
  Taps t;
  t.lower = lower < 0 ? 0 : lower;
  t.upper = upper < in - 1 ? upper : in - 1;
  t.lerp = source - floor_source;
  return t;
}

// Nearest (TF's ResizeNearestNeighbor with half_pixel_centers): min(floor((i + 0.5) · in / out), in - 1).
TOWER_HOST_DEVICE inline std::int64_t nearest_source(std::int64_t i, std::int64_t in, std::int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const auto source = static_cast<std::int64_t>((static_cast<float>(i) + 0.5f) * scale);  // >= 0: truncation floors
  return source < in - 1 ? source : in - 1;
}

}  // namespace tower::resize
