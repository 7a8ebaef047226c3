// cuDNN descriptors for tower's NHWC tensors (or their NCHW copies) and KRSC or KCRS filters.
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
    case DType::float16: return CUDNN_DATA_HALF;
    case DType::bfloat16: return CUDNN_DATA_BFLOAT16;
    default:
      raise<DTypeError>("{} on the GPU: dtype {} is not supported; use a floating dtype", op, dtype_name(dtype));
  }
}

TensorDescriptor nhwc_tensor(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, cudnnDataType_t type) {
  TensorDescriptor d;
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NHWC, type, to_int(n, "batch"), to_int(c, "channel"),
                                         to_int(h, "height"), to_int(w, "width")));
  return d;
}

TensorDescriptor conv_tensor(ConvLayout layout, const std::vector<std::int64_t>& nhwc_dims, cudnnDataType_t type) {
  const int rank = static_cast<int>(nhwc_dims.size());
  if (rank != 4 && rank != 5) raise<ShapeError>("cuDNN: a convolution tensor of rank {}; expected 4 or 5", rank);
  const std::int64_t n = nhwc_dims[0], c = nhwc_dims[static_cast<std::size_t>(rank - 1)];
  if (layout == ConvLayout::nhwc && rank == 4) return nhwc_tensor(n, nhwc_dims[1], nhwc_dims[2], c, type);
  // cuDNN's order (n, c, spatial...); the strides of NHWC memory, or of a packed NCHW copy.
  std::vector<std::int64_t> dims{n, c}, strides(static_cast<std::size_t>(rank));
  for (int a = 1; a < rank - 1; ++a) dims.push_back(nhwc_dims[static_cast<std::size_t>(a)]);
  if (layout == ConvLayout::nchw) {
    std::int64_t stride = 1;
    for (int a = rank - 1; a >= 0; --a) {
      strides[static_cast<std::size_t>(a)] = stride;
      stride *= dims[static_cast<std::size_t>(a)];
    }
  } else {
    std::int64_t stride = c;  // the channel is innermost in memory
    strides[1] = 1;
    for (int a = rank - 1; a >= 2; --a) {
      strides[static_cast<std::size_t>(a)] = stride;
      stride *= dims[static_cast<std::size_t>(a)];
    }
    strides[0] = stride;
  }
  int d[5] = {}, st[5] = {};
  for (int a = 0; a < rank; ++a) {
    d[a] = to_int(dims[static_cast<std::size_t>(a)], "tensor");
    st[a] = to_int(strides[static_cast<std::size_t>(a)], "stride");
  }
  TensorDescriptor desc;
  if (rank == 4)
    CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(desc.get(), type, d[0], d[1], d[2], d[3], st[0], st[1], st[2], st[3]));
  else
    CUDNN_CHECK(cudnnSetTensorNdDescriptor(desc.get(), type, rank, d, st));
  return desc;
}

FilterDescriptor conv_filter(ConvLayout layout, std::int64_t out_c, std::int64_t in_c,
                             const std::vector<std::int64_t>& spatial, cudnnDataType_t type) {
  const int rank = static_cast<int>(spatial.size()) + 2;
  if (rank != 4 && rank != 5) raise<ShapeError>("cuDNN: a convolution filter of rank {}; expected 4 or 5", rank);
  // cuDNN's filter dims are (k, c, spatial...) whatever the format; the format says the memory order.
  int dims[5] = {to_int(out_c, "filter"), to_int(in_c, "input channel")};
  for (std::size_t a = 0; a < spatial.size(); ++a) dims[a + 2] = to_int(spatial[a], "kernel");
  FilterDescriptor desc;
  CUDNN_CHECK(cudnnSetFilterNdDescriptor(desc.get(), type, layout == ConvLayout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                         rank, dims));
  return desc;
}

}  // namespace tower::cuda
