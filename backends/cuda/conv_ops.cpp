// The CUDA kernel table entries of conv2d, conv2d_backward_data and conv2d_backward_filter, on cuDNN,
// and of conv3d and its ops: the same kernels, which read a rank-5 x as NDHWC (cuDNN's Nd descriptors).
//
// Layout: x, y, dx, dy stay NHWC (CUDNN_TENSOR_NHWC; NDHWC strides for 3-D). Keras's kernel (kh, kw, in,
// out) (HWIO) is no cuDNN filter format, so it is copied to (out, kh, kw, in) (KRSC, cuDNN's NHWC filter
// format; (out, kd, kh, kw, in) for 3-D) before use, and dkernel is computed in KRSC and copied back.
// Padding: cuDNN pads symmetrically; TF's "same" puts the odd row/column at the end, so that extra
// part goes into an explicit zero-padded copy of x (and dx is computed padded and cropped); see
// cudnn_conv_plan.h.
// Algorithms: cudnnGet*Algorithm_v7 (heuristics: no trial runs, no extra buffers), the first one in
// its order whose workspace fits the device's budget, cached per device and geometry; FFT and
// Winograd algorithms are left out (their rounding breaks parity with the CPU).
// Float32 runs with CUDNN_FMA_MATH (no TF32 or tensor-op conversions), so results match the CPU.
#include <cudnn.h>

#include <vector>

#include "tower/backends/cuda/array_copies.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/cudnn_conv_plan.h"
#include "tower/backends/cuda/cudnn_descriptors.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

// One convolution as cuDNN runs it: the geometry, its plan and the descriptors. x's descriptor has
// the padded extent when the plan pads explicitly.
struct CudnnConv {
  ConvGeometry g;
  CudnnConvPlan plan;
  cudnnDataType_t type;
  TensorDescriptor x;  // (batch, [padded_d,] padded_h, padded_w, in_c)
  TensorDescriptor y;  // (batch, [out_d,] out_h, out_w, out_c)
  FilterDescriptor w;  // (out_c, [kd,] kh, kw, in_c / groups)
  ConvolutionDescriptor conv;
};

// The Nd descriptors of a conv3d (g.spatial == 3) in c, and a check of cuDNN's output size.
void set_conv3d(const KernelContext& ctx, CudnnConv& c, const Shape& y) {
  const ConvGeometry& g = c.g;
  const CudnnConvPlan& plan = c.plan;
  c.x = ndhwc_tensor(g.batch, plan.padded_d, plan.padded_h, plan.padded_w, g.in_c, c.type);
  c.y = ndhwc_tensor(g.batch, g.out_d, g.out_h, g.out_w, g.out_c, c.type);
  c.w = ktrsc_filter(g.out_c, g.kernel_d, g.kernel_h, g.kernel_w, g.in_c / g.groups, c.type);
  const int pads[3] = {static_cast<int>(plan.pad_d), static_cast<int>(plan.pad_h), static_cast<int>(plan.pad_w)};
  const int strides[3] = {static_cast<int>(g.stride_d), static_cast<int>(g.stride_h), static_cast<int>(g.stride_w)};
  const int dilation[3] = {static_cast<int>(g.dilation_d), static_cast<int>(g.dilation_h),
                           static_cast<int>(g.dilation_w)};
  CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(c.conv.get(), 3, pads, strides, dilation, CUDNN_CROSS_CORRELATION, c.type));
  int out[5] = {};  // (n, c, d, h, w)
  CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(c.conv.get(), c.x.get(), c.w.get(), 5, out));
  if (out[0] != g.batch || out[1] != g.out_c || out[2] != g.out_d || out[3] != g.out_h || out[4] != g.out_w)
    raise<ShapeError>("{} on {}: cuDNN computes an output ({}, {}, {}, {}, {}) but the node's is {}", ctx.node.op(),
                      ctx.device.name(), out[0], out[2], out[3], out[4], out[1], y.to_string());
}

// x: (batch, h, w, c_in), kernel: (kh, kw, c_in / groups, c_out), y: (batch, oh, ow, c_out); or rank 5
// with a depth axis first (conv3d).
CudnnConv make_conv(const KernelContext& ctx, const Shape& x, const Shape& kernel, const Shape& y, DType dtype) {
  const Attrs& attrs = ctx.attrs();
  const ConvGeometry g = conv_geometry(x, kernel, y, attrs.get_ints("strides"),
                                       attrs.has("dilation_rate") ? attrs.get_ints("dilation_rate") : std::vector<std::int64_t>{},
                                       attrs.get_string("padding") == "same", dtype, attrs.get_int("groups", 1));
  const CudnnConvPlan plan = plan_cudnn_conv(g);
  const cudnnDataType_t type = cudnn_data_type(dtype, ctx.node.op().c_str());
  if (g.spatial == 3) {
    CudnnConv c{.g = g, .plan = plan, .type = type};
    set_conv3d(ctx, c, y);
    CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), type == CUDNN_DATA_FLOAT ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(c.conv.get(), static_cast<int>(g.groups)));
    return c;
  }
  CudnnConv c{.g = g,
              .plan = plan,
              .type = type,
              .x = nhwc_tensor(g.batch, plan.padded_h, plan.padded_w, g.in_c, type),
              .y = nhwc_tensor(g.batch, g.out_h, g.out_w, g.out_c, type),
              .w = krsc_filter(g.out_c, g.kernel_h, g.kernel_w, g.in_c / g.groups, type),
              .conv = ConvolutionDescriptor()};
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      c.conv.get(), static_cast<int>(plan.pad_h), static_cast<int>(plan.pad_w), static_cast<int>(g.stride_h),
      static_cast<int>(g.stride_w), static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w),
      CUDNN_CROSS_CORRELATION, type));
  CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), type == CUDNN_DATA_FLOAT ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH));
  CUDNN_CHECK(cudnnSetConvolutionGroupCount(c.conv.get(), static_cast<int>(g.groups)));
  int n = 0, channels = 0, h = 0, w = 0;
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(c.conv.get(), c.x.get(), c.w.get(), &n, &channels, &h, &w));
  if (n != g.batch || channels != g.out_c || h != g.out_h || w != g.out_w)
    raise<ShapeError>("{} on {}: cuDNN computes an output ({}, {}, {}, {}) but the node's is {}", ctx.node.op(),
                      ctx.device.name(), n, h, w, channels, y.to_string());
  return c;
}

// Tensor-op math would let cuDNN round float32 to TF32: only FMA (or default, with the descriptor's
// FMA math) algorithms qualify for float32.
bool math_allowed(cudnnMathType_t math, cudnnDataType_t type) {
  return type != CUDNN_DATA_FLOAT || math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH;
}

// FFT and Winograd algorithms transform the operands and round differently from a direct sum (errors
// near 1e-4 relative in float32): left out, so that results match the CPU within 1e-5.
bool direct_sum(cudnnConvolutionFwdAlgo_t a) {
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD && a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool direct_sum(cudnnConvolutionBwdDataAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool direct_sum(cudnnConvolutionBwdFilterAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

std::size_t budget_of(CudaDevice& gpu) {
  std::size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const CachingAllocatorStats s = gpu.allocator_stats();
  return workspace_budget(free_bytes, s.reserved, s.in_use, gpu.memory_limit());
}

// The cached algorithm of (geometry, pass), else chosen from cuDNN's perf results: `size_of(algo,
// &bytes)` asks cuDNN for an algorithm's exact workspace.
template <typename Perf, typename SizeOf>
AlgoChoice choose(CudaDevice& gpu, const KernelContext& ctx, const CudnnConv& c, ConvPass pass,
                  const std::vector<Perf>& perf, SizeOf&& size_of) {
  std::vector<AlgoCandidate> candidates;
  for (const Perf& p : perf) {
    AlgoCandidate candidate{.algo = static_cast<int>(p.algo),
                            .supported = p.status == CUDNN_STATUS_SUCCESS &&
                                         math_allowed(p.mathType, c.type) && direct_sum(p.algo)};
    if (candidate.supported) candidate.supported = size_of(p.algo, &candidate.workspace_bytes) == CUDNN_STATUS_SUCCESS;
    candidates.push_back(candidate);
  }
  const auto choice = choose_algorithm(candidates, budget_of(gpu));
  if (!choice)
    raise<DeviceError>(
        "{} on {}: cuDNN has no algorithm for x ({}, {}, {}, {}), a {}x{} kernel to {} channels in {} group(s), "
        "strides ({}, {}), dilation ({}, {}) in {} (pass {})",
        ctx.node.op(), ctx.device.name(), c.g.batch, c.g.in_h, c.g.in_w, c.g.in_c, c.g.kernel_h, c.g.kernel_w,
        c.g.out_c, c.g.groups, c.g.stride_h, c.g.stride_w, c.g.dilation_h, c.g.dilation_w, dtype_name(c.g.dtype),
        static_cast<int>(pass));
  return *choice;
}

AlgoChoice forward_algorithm(CudaDevice& gpu, const KernelContext& ctx, const CudnnConv& c) {
  return gpu.conv_algorithms().get_or_choose({c.g, ConvPass::forward}, [&] {
    cudnnHandle_t h = gpu.cudnn();
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(count));
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, c.x.get(), c.w.get(), c.conv.get(), c.y.get(), count,
                                                       &returned, perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return choose(gpu, ctx, c, ConvPass::forward, perf, [&](cudnnConvolutionFwdAlgo_t algo, std::size_t* bytes) {
      return cudnnGetConvolutionForwardWorkspaceSize(h, c.x.get(), c.w.get(), c.conv.get(), c.y.get(), algo, bytes);
    });
  });
}

AlgoChoice backward_data_algorithm(CudaDevice& gpu, const KernelContext& ctx, const CudnnConv& c) {
  return gpu.conv_algorithms().get_or_choose({c.g, ConvPass::backward_data}, [&] {
    cudnnHandle_t h = gpu.cudnn();
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(count));
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c.w.get(), c.y.get(), c.conv.get(), c.x.get(), count,
                                                            &returned, perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return choose(gpu, ctx, c, ConvPass::backward_data, perf,
                  [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) {
                    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, c.w.get(), c.y.get(), c.conv.get(),
                                                                        c.x.get(), algo, bytes);
                  });
  });
}

AlgoChoice backward_filter_algorithm(CudaDevice& gpu, const KernelContext& ctx, const CudnnConv& c) {
  return gpu.conv_algorithms().get_or_choose({c.g, ConvPass::backward_filter}, [&] {
    cudnnHandle_t h = gpu.cudnn();
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(count));
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, c.x.get(), c.y.get(), c.conv.get(), c.w.get(), count,
                                                              &returned, perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return choose(gpu, ctx, c, ConvPass::backward_filter, perf,
                  [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) {
                    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, c.x.get(), c.y.get(), c.conv.get(),
                                                                          c.w.get(), algo, bytes);
                  });
  });
}

// Device buffers a convolution needs for one call; freed (back to the caching allocator) on return,
// which is safe as everything runs in order on the device's one stream.
Tensor scratch(CudaDevice& gpu, Shape shape, DType dtype) { return Tensor(std::move(shape), dtype, gpu); }

// The algorithm's workspace (bytes), allocated through the device so that the caching allocator
// accounts for it; undefined when the algorithm needs none.
Tensor workspace_for(CudaDevice& gpu, const AlgoChoice& algo) {
  if (algo.workspace_bytes == 0) return {};
  return scratch(gpu, {static_cast<std::int64_t>(algo.workspace_bytes)}, DType::uint8);
}

void* workspace_ptr(const Tensor& workspace) { return workspace.defined() ? workspace.raw_data() : nullptr; }

// cuDNN's KRSC filter shape: (out, kh, kw, in / groups), or (out, kd, kh, kw, in / groups) for conv3d.
Shape krsc_shape(const CudnnConv& c) {
  const ConvGeometry& g = c.g;
  if (g.spatial == 3) return {g.out_c, g.kernel_d, g.kernel_h, g.kernel_w, g.in_c / g.groups};
  return {g.out_c, g.kernel_h, g.kernel_w, g.in_c / g.groups};
}

// Keras's kernel (kh, kw, in, out) as cuDNN's KRSC (out, kh, kw, in) (a depth axis alike), and back.
Tensor to_krsc(CudaDevice& gpu, const CudnnConv& c, const Tensor& hwio) {
  Tensor krsc = scratch(gpu, krsc_shape(c), hwio.dtype());
  transpose(gpu, op_names::conv2d, hwio, krsc,
            c.g.spatial == 3 ? std::vector<std::int64_t>{4, 0, 1, 2, 3} : std::vector<std::int64_t>{3, 0, 1, 2});
  return krsc;
}

std::vector<std::int64_t> from_krsc_perm(const CudnnConv& c) {
  return c.g.spatial == 3 ? std::vector<std::int64_t>{1, 2, 3, 4, 0} : std::vector<std::int64_t>{1, 2, 3, 0};
}

// x's padded extent (batch, [padded_d,] padded_h, padded_w, c) and where x sits in it.
Shape padded_shape(const CudnnConv& c) {
  if (c.g.spatial == 3) return {c.g.batch, c.plan.padded_d, c.plan.padded_h, c.plan.padded_w, c.g.in_c};
  return {c.g.batch, c.plan.padded_h, c.plan.padded_w, c.g.in_c};
}
std::vector<std::int64_t> padded_origin(const CudnnConv& c) {
  if (c.g.spatial == 3) return {0, c.plan.extra_front, c.plan.extra_top, c.plan.extra_left, 0};
  return {0, c.plan.extra_top, c.plan.extra_left, 0};
}
std::vector<std::int64_t> zero_origin(const CudnnConv& c) { return std::vector<std::int64_t>(c.g.spatial + 2, 0); }

// x inside zeros of the padded extent (the plan's explicit part of TF's "same" padding).
Tensor padded_copy(CudaDevice& gpu, const CudnnConv& c, const Tensor& x) {
  Tensor padded = scratch(gpu, padded_shape(c), x.dtype());
  CUDA_CHECK(cudaMemsetAsync(padded.raw_data(), 0, padded.nbytes(), gpu.stream()));
  copy_box(gpu, op_names::conv2d, x, zero_origin(c), padded, padded_origin(c), x.shape().dims());
  return padded;
}

// cuDNN's scaling factors: double for double data, else float.
struct Scale {
  float f;
  double d;
  const void* of(cudnnDataType_t type) const { return type == CUDNN_DATA_DOUBLE ? static_cast<const void*>(&d) : &f; }
};
constexpr Scale kOne{1.0f, 1.0}, kZero{0.0f, 0.0};

// y = conv2d(x, kernel). x: (batch, h, w, c_in), kernel: (kh, kw, c_in, c_out) -> y: (batch, oh, ow, c_out).
void conv2d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  if (y.num_elements() == 0) return;
  if (x.num_elements() == 0 || kernel.num_elements() == 0) {  // no input channels: sums of nothing
    CUDA_CHECK(cudaMemsetAsync(y.raw_data(), 0, y.nbytes(), gpu.stream()));
    return;
  }
  const CudnnConv c = make_conv(ctx, x.shape(), kernel.shape(), y.shape(), y.dtype());
  const AlgoChoice algo = forward_algorithm(gpu, ctx, c);
  dispatch_floating(y.dtype(), op_names::conv2d, [&]<typename T>() {
    const Tensor w = to_krsc(gpu, c, kernel);
    const Tensor padded = c.plan.explicit_padding ? padded_copy(gpu, c, x) : Tensor();
    const T* px = c.plan.explicit_padding ? padded.data<T>() : x.data<T>();
    Tensor workspace = workspace_for(gpu, algo);
    CUDNN_CHECK(cudnnConvolutionForward(gpu.cudnn(), kOne.of(c.type), c.x.get(), px, c.w.get(), w.data<T>(),
                                        c.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo),
                                        workspace_ptr(workspace), algo.workspace_bytes, kZero.of(c.type), c.y.get(),
                                        y.data<T>()));
  });
}

// dx = the gradient of conv2d with respect to x. (dy, kernel, x) -> dx: x's shape.
void conv2d_backward_data_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  if (dx.num_elements() == 0) return;
  if (dy.num_elements() == 0 || kernel.num_elements() == 0) {  // no filters or no outputs: nothing flows back
    CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), gpu.stream()));
    return;
  }
  const CudnnConv c = make_conv(ctx, dx.shape(), kernel.shape(), dy.shape(), dx.dtype());
  const AlgoChoice algo = backward_data_algorithm(gpu, ctx, c);
  dispatch_floating(dx.dtype(), op_names::conv2d_backward_data, [&]<typename T>() {
    const Tensor w = to_krsc(gpu, c, kernel);
    Tensor padded;  // (batch, padded_h, padded_w, c_in): dx of the padded copy of x
    if (c.plan.explicit_padding) padded = scratch(gpu, padded_shape(c), dx.dtype());
    T* out = c.plan.explicit_padding ? padded.data<T>() : dx.data<T>();
    Tensor workspace = workspace_for(gpu, algo);
    CUDNN_CHECK(cudnnConvolutionBackwardData(gpu.cudnn(), kOne.of(c.type), c.w.get(), w.data<T>(), c.y.get(),
                                             dy.data<T>(), c.conv.get(),
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo),
                                             workspace_ptr(workspace), algo.workspace_bytes, kZero.of(c.type),
                                             c.x.get(), out));
    if (c.plan.explicit_padding)
      copy_box(gpu, op_names::conv2d_backward_data, padded, padded_origin(c), dx, zero_origin(c), dx.shape().dims());
  });
}

// dkernel = the gradient of conv2d with respect to the kernel. (x, dy, kernel) -> dkernel: (kh, kw, c_in, c_out).
void conv2d_backward_filter_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dk = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  if (dk.num_elements() == 0) return;
  if (x.num_elements() == 0 || dy.num_elements() == 0) {  // an empty batch or no output positions
    CUDA_CHECK(cudaMemsetAsync(dk.raw_data(), 0, dk.nbytes(), gpu.stream()));
    return;
  }
  const CudnnConv c = make_conv(ctx, x.shape(), dk.shape(), dy.shape(), dk.dtype());
  const AlgoChoice algo = backward_filter_algorithm(gpu, ctx, c);
  dispatch_floating(dk.dtype(), op_names::conv2d_backward_filter, [&]<typename T>() {
    const Tensor padded = c.plan.explicit_padding ? padded_copy(gpu, c, x) : Tensor();
    const T* px = c.plan.explicit_padding ? padded.data<T>() : x.data<T>();
    Tensor w = scratch(gpu, krsc_shape(c), dk.dtype());  // KRSC
    Tensor workspace = workspace_for(gpu, algo);
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(gpu.cudnn(), kOne.of(c.type), c.x.get(), px, c.y.get(), dy.data<T>(),
                                               c.conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo),
                                               workspace_ptr(workspace), algo.workspace_bytes, kZero.of(c.type),
                                               c.w.get(), w.data<T>()));
    transpose(gpu, op_names::conv2d_backward_filter, w, dk, from_krsc_perm(c));  // KRSC -> Keras's HWIO
  });
}

}  // namespace

void register_conv_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel(op_names::conv2d, cuda, conv2d_kernel);
  register_kernel(op_names::conv2d_backward_data, cuda, conv2d_backward_data_kernel);
  register_kernel(op_names::conv2d_backward_filter, cuda, conv2d_backward_filter_kernel);
  register_kernel(op_names::conv2d_transpose, cuda, conv2d_backward_data_kernel);  // (x, kernel): dy's place
  // conv3d: the same kernels on rank-5 tensors.
  register_kernel(op_names::conv3d, cuda, conv2d_kernel);
  register_kernel(op_names::conv3d_backward_data, cuda, conv2d_backward_data_kernel);
  register_kernel(op_names::conv3d_backward_filter, cuda, conv2d_backward_filter_kernel);
  register_kernel(op_names::conv3d_transpose, cuda, conv2d_backward_data_kernel);
}

}  // namespace tower::cuda
