// RAII owners of cuDNN's tensor, filter and convolution descriptors (movable, not copyable), set up
// for tower's NHWC tensors in each ConvLayout (cudnn_conv_plan.h).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/cudnn_conv_plan.h"
#include "tower/core/dtype.h"

namespace tower::cuda {

// CUDNN_DATA_FLOAT, _DOUBLE, _HALF or _BFLOAT16; DTypeError for a dtype that is not floating.
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

// A convolution's x or y whose NHWC dims are (n, [d,] h, w, c), as `layout` shows it to cuDNN: nhwc and
// nhwc_strided describe tower's NHWC memory (CUDNN_TENSOR_NHWC, or cuDNN's (n, c, [d,] h, w) order with
// NHWC strides, cudnnSetTensor4dDescriptorEx / cudnnSetTensorNdDescriptor); nchw a packed channels-first copy.
TensorDescriptor conv_tensor(ConvLayout layout, const std::vector<std::int64_t>& nhwc_dims, cudnnDataType_t type);
// A convolution's filter of out_c filters over in_c channels (per group) with the spatial extents
// ([kd,] kh, kw): KRSC memory (CUDNN_TENSOR_NHWC) for nhwc, KCRS (CUDNN_TENSOR_NCHW) otherwise.
FilterDescriptor conv_filter(ConvLayout layout, std::int64_t out_c, std::int64_t in_c,
                             const std::vector<std::int64_t>& spatial, cudnnDataType_t type);

}  // namespace tower::cuda
