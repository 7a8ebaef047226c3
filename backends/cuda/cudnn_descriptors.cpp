// cuDNN descriptors for tower's NHWC tensors and KRSC filters.
#include "tower/backends/cuda/cudnn_descriptors.h"

#include <limits>

#include "tower/core/error.h"

namespace tower::cuda {

namespace {

int to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    raise<ShapeError>("cuDNN: the {} dimension {} does not fit cuDNN's int dimensions", what, v);
  return static_cast<int>(v);
}

}  // namespace

cudnnDataType_t cudnn_data_type(DType dtype, const char* op) {
  switch (dtype) {
    case DType::float32: return CUDNN_DATA_FLOAT;
    case DType::float64: return CUDNN_DATA_DOUBLE;
    default: raise<DTypeError>("{} on the GPU: dtype {} is not supported; use float32 or float64", op, dtype_name(dtype));
  }
}

TensorDescriptor nhwc_tensor(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, cudnnDataType_t type) {
  TensorDescriptor d;
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NHWC, type, to_int(n, "batch"), to_int(c, "channel"),
                                         to_int(h, "height"), to_int(w, "width")));
  return d;
}

FilterDescriptor krsc_filter(std::int64_t k, std::int64_t r, std::int64_t s, std::int64_t c, cudnnDataType_t type) {
  FilterDescriptor d;
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.get(), type, CUDNN_TENSOR_NHWC, to_int(k, "filter"),
                                         to_int(c, "input channel"), to_int(r, "kernel height"),
                                         to_int(s, "kernel width")));
  return d;
}

TensorDescriptor ndhwc_tensor(std::int64_t n, std::int64_t d, std::int64_t h, std::int64_t w, std::int64_t c,
                              cudnnDataType_t type) {
  TensorDescriptor desc;
  // Dimensions in cuDNN's (n, c, d, h, w) order, strides of the NDHWC layout in memory.
  const int dims[5] = {to_int(n, "batch"), to_int(c, "channel"), to_int(d, "depth"), to_int(h, "height"),
                       to_int(w, "width")};
  const int strides[5] = {to_int(d * h * w * c, "volume"), 1, to_int(h * w * c, "plane"), to_int(w * c, "row"),
                          to_int(c, "channel")};
  CUDNN_CHECK(cudnnSetTensorNdDescriptor(desc.get(), type, 5, dims, strides));
  return desc;
}

FilterDescriptor ktrsc_filter(std::int64_t k, std::int64_t t, std::int64_t r, std::int64_t s, std::int64_t c,
                              cudnnDataType_t type) {
  FilterDescriptor desc;
  const int dims[5] = {to_int(k, "filter"), to_int(c, "input channel"), to_int(t, "kernel depth"),
                       to_int(r, "kernel height"), to_int(s, "kernel width")};
  CUDNN_CHECK(cudnnSetFilterNdDescriptor(desc.get(), type, CUDNN_TENSOR_NHWC, 5, dims));
  return desc;
}

}  // namespace tower::cuda
