// RAII owners of cuDNN's tensor, filter and convolution descriptors (movable, not copyable), set up
// for tower's NHWC layout.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <utility>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/core/dtype.h"

namespace tower::cuda {

// CUDNN_DATA_FLOAT or CUDNN_DATA_DOUBLE; DTypeError for any other dtype.
cudnnDataType_t cudnn_data_type(DType dtype, const char* op);

// One descriptor of type H, destroyed with Destroy.
template <typename H, cudnnStatus_t (*Create)(H*), cudnnStatus_t (*Destroy)(H)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { CUDNN_CHECK(Create(&handle_)); }
  ~CudnnDescriptor() {
    if (handle_) Destroy(handle_);
  }
  CudnnDescriptor(CudnnDescriptor&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  H get() const { return handle_; }

 private:
  H handle_ = nullptr;
};

using TensorDescriptor =
    CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                              cudnnDestroyConvolutionDescriptor>;

// An NHWC tensor (n, h, w, c). ShapeError when a dimension does not fit cuDNN's int.
TensorDescriptor nhwc_tensor(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, cudnnDataType_t type);
// A filter (k, r, s, c) in memory (KRSC: cuDNN's CUDNN_TENSOR_NHWC filter format).
FilterDescriptor krsc_filter(std::int64_t k, std::int64_t r, std::int64_t s, std::int64_t c, cudnnDataType_t type);

// An NDHWC tensor (n, d, h, w, c), through cudnnSetTensorNdDescriptor with NDHWC strides.
TensorDescriptor ndhwc_tensor(std::int64_t n, std::int64_t d, std::int64_t h, std::int64_t w, std::int64_t c,
                              cudnnDataType_t type);
// A 3-D filter (k, t, r, s, c) in memory (cuDNN's CUDNN_TENSOR_NHWC filter format with a depth axis).
FilterDescriptor ktrsc_filter(std::int64_t k, std::int64_t t, std::int64_t r, std::int64_t s, std::int64_t c,
                              cudnnDataType_t type);

}  // namespace tower::cuda
