// Launchers of the CUDA resize kernels (tf.image.resize's bilinear and nearest sampling, NHWC,
// core/resize.h) and their gradient, and of image_transform and rotation_transform
// (core/image_transform.h). Plain pointers only; each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// x (batch, in_h, in_w, channels) resized to (batch, out_h, out_w, channels).
struct ResizeGeometry {
  std::int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
  bool bilinear = true;  // else nearest
};

// One thread per output element.
template <typename T>
cudaError_t launch_resize(const T* x, T* y, const ResizeGeometry& g, cudaStream_t stream);
// dx (batch, in_h, in_w, channels) from dy: one thread per dx element gathers the outputs that read
// it (no atomics: the same sums on every run).
template <typename T>
cudaError_t launch_resize_grad(const T* dy, T* dx, const ResizeGeometry& g, cudaStream_t stream);

// images (batch, in_h, in_w, channels) sampled through transforms (batch, 8) into (batch, out_h, out_w,
// channels). fill_mode: image_transform::FillMode as an int.
struct TransformGeometry {
  std::int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
  bool bilinear = true;  // else nearest
  int fill_mode = 0;
  float fill_value = 0.0f;
};

// One thread per output element.
template <typename T>
cudaError_t launch_image_transform(const T* x, const T* transforms, T* y, const TransformGeometry& g,
                                   cudaStream_t stream);
// angles (batch, 1) -> transforms (batch, 8) rotating a (height, width) image about its centre.
template <typename T>
cudaError_t launch_rotation_transform(const T* angles, T* transforms, std::int64_t batch, std::int64_t height,
                                      std::int64_t width, cudaStream_t stream);

}  // namespace tower::cuda
