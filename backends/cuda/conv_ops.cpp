// The CUDA kernel table entries of conv2d, conv2d_backward_data and conv2d_backward_filter, on cuDNN,
// and of conv3d and its ops: the same kernels, which read a rank-5 x as NDHWC (cuDNN's Nd descriptors).
//
// Layout (cudnn_conv_plan.h, ConvLayout): x, y, dx, dy stay NHWC (CUDNN_TENSOR_NHWC; NDHWC strides for
// 3-D). Keras's kernel (kh, kw, in, out) (HWIO) is no cuDNN filter format, so it is copied to (out, kh, kw,
// in) (KRSC, cuDNN's NHWC filter format; (out, kd, kh, kw, in) for 3-D) before use, and dkernel is
// computed in KRSC and copied back. When cuDNN offers no algorithm for that (float64 always: cuDNN has
// almost none with an NHWC filter), the filter is KCRS (NCHW format) with x and y still described as NHWC
// through strides; failing that, x and y are transposed to NCHW copies.
// Padding: cuDNN pads symmetrically; TF's "same" puts the odd row/column at the end, so that extra
// part goes into an explicit zero-padded copy of x (and dx is computed padded and cropped); see
// cudnn_conv_plan.h.
// Algorithms: cudnnGet*Algorithm_v7 (heuristics: no trial runs, no extra buffers), the first
// deterministic one in its order whose workspace fits the device's budget (else the first that fits),
// cached per device and geometry with its layout; FFT and Winograd algorithms are left out (their
// rounding breaks parity with the CPU). TOWER_CUDNN_LOG=1 prints every candidate and the choice once
// per geometry and pass.
// Float32 runs with CUDNN_FMA_MATH (no TF32 or tensor-op conversions), so results match the CPU, unless
// config::enable_tensor_float_32_execution(true): then TF32 tensor-op algorithms qualify too.
// float16 and bfloat16 (mixed precision; half_ops.cpp sends them here) run natively: half tensors, float32
// accumulation (the convolution descriptor's compute type), tensor-op algorithms admitted.
#include <cudnn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tower/backends/cuda/array_copies.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/cudnn_conv_plan.h"
#include "tower/backends/cuda/cudnn_descriptors.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/math_launchers.h"
#include "tower/core/config.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

// One convolution as cuDNN runs it: the geometry, its plan, the layout and the descriptors. x's
// descriptor has the padded extent when the plan pads explicitly.
struct CudnnConv {
  ConvGeometry g;
  CudnnConvPlan plan;
  ConvLayout layout = ConvLayout::nhwc;
  cudnnDataType_t type;
  TensorDescriptor x;  // (batch, [padded_d,] padded_h, padded_w, in_c), NHWC or (nchw) a channels-first copy
  TensorDescriptor y;  // (batch, [out_d,] out_h, out_w, out_c), alike
  FilterDescriptor w;  // (out_c, [kd,] kh, kw, in_c / groups) (KRSC) or (out_c, in_c / groups, [kd,] kh, kw) (KCRS)
  ConvolutionDescriptor conv;
};

// x's padded extent (batch, [padded_d,] padded_h, padded_w, c) and where x sits in it.
Shape padded_shape(const ConvGeometry& g, const CudnnConvPlan& plan) {
  if (g.spatial == 3) return {g.batch, plan.padded_d, plan.padded_h, plan.padded_w, g.in_c};
  return {g.batch, plan.padded_h, plan.padded_w, g.in_c};
}
Shape output_shape(const ConvGeometry& g) {
  if (g.spatial == 3) return {g.batch, g.out_d, g.out_h, g.out_w, g.out_c};
  return {g.batch, g.out_h, g.out_w, g.out_c};
}

// x: (batch, h, w, c_in), kernel: (kh, kw, c_in / groups, c_out), y: (batch, oh, ow, c_out); or rank 5
// with a depth axis first (conv3d).
ConvGeometry geometry_of(const KernelContext& ctx, const Shape& x, const Shape& kernel, const Shape& y, DType dtype) {
  const Attrs& attrs = ctx.attrs();
  return conv_geometry(x, kernel, y, attrs.get_ints("strides"),
                       attrs.has("dilation_rate") ? attrs.get_ints("dilation_rate") : std::vector<std::int64_t>{},
                       attrs.get_string("padding") == "same", dtype, attrs.get_int("groups", 1));
}

// The descriptors of geometry g in `layout`, and a check of cuDNN's output size.
// math_type: the chosen algorithm's (AlgoChoice::math_type), or -1 while the candidates are queried
// (the default math). Float32 takes FMA math (no TF32) unless config::enable_tensor_float_32_execution.
CudnnConv make_conv(const KernelContext& ctx, const ConvGeometry& g, ConvLayout layout, int math_type = -1) {
  const CudnnConvPlan plan = plan_cudnn_conv(g);
  const cudnnDataType_t type = cudnn_data_type(g.dtype, ctx.node.op().c_str());
  // Half data accumulates in float32 (cuDNN's PSEUDO_HALF and PSEUDO_BFLOAT16 configurations).
  const cudnnDataType_t compute = is_half(g.dtype) ? CUDNN_DATA_FLOAT : type;
  std::vector<std::int64_t> kernel_extent{g.kernel_h, g.kernel_w};
  if (g.spatial == 3) kernel_extent.insert(kernel_extent.begin(), g.kernel_d);
  CudnnConv c{.g = g,
              .plan = plan,
              .layout = layout,
              .type = type,
              .x = conv_tensor(layout, padded_shape(g, plan).dims(), type),
              .y = conv_tensor(layout, output_shape(g).dims(), type),
              .w = conv_filter(layout, g.out_c, g.in_c / g.groups, kernel_extent, type),
              .conv = ConvolutionDescriptor()};
  if (g.spatial == 3) {
    const int pads[3] = {static_cast<int>(plan.pad_d), static_cast<int>(plan.pad_h), static_cast<int>(plan.pad_w)};
    const int strides[3] = {static_cast<int>(g.stride_d), static_cast<int>(g.stride_h), static_cast<int>(g.stride_w)};
    const int dilation[3] = {static_cast<int>(g.dilation_d), static_cast<int>(g.dilation_h),
                             static_cast<int>(g.dilation_w)};
    CUDNN_CHECK(
        cudnnSetConvolutionNdDescriptor(c.conv.get(), 3, pads, strides, dilation, CUDNN_CROSS_CORRELATION, compute));
  } else {
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        c.conv.get(), static_cast<int>(plan.pad_h), static_cast<int>(plan.pad_w), static_cast<int>(g.stride_h),
        static_cast<int>(g.stride_w), static_cast<int>(g.dilation_h), static_cast<int>(g.dilation_w),
        CUDNN_CROSS_CORRELATION, compute));
  }
  // (CUDNN_DEFAULT_MATH permits TF32 on Ampere and later: float32 without TF32 is always FMA.)
  const cudnnMathType_t math = type == CUDNN_DATA_FLOAT && !config::tensor_float_32_execution_enabled() ? CUDNN_FMA_MATH
                               : math_type >= 0 ? static_cast<cudnnMathType_t>(math_type)
                                                : CUDNN_DEFAULT_MATH;
  CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), math));
  CUDNN_CHECK(cudnnSetConvolutionGroupCount(c.conv.get(), static_cast<int>(g.groups)));
  int out[5] = {};  // (n, c, [d,] h, w)
  const int rank = g.spatial + 2;
  CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(c.conv.get(), c.x.get(), c.w.get(), rank, out));
  const Shape expected = output_shape(g);
  bool same = out[0] == expected[0] && out[1] == expected[rank - 1];
  for (int a = 1; a < rank - 1; ++a) same = same && out[a + 1] == expected[a];
  if (!same)
    raise<ShapeError>("{} on {}: cuDNN computes an output (n, c, spatial) = ({}, {}, {}, {}{}) but the node's is {}",
                      ctx.node.op(), ctx.device.name(), out[0], out[1], out[2], out[3],
                      rank == 5 ? fmt::format(", {}", out[4]) : std::string(), expected.to_string());
  return c;
}

// Tensor-op math would let cuDNN round float32 to TF32: only FMA (or default, with the descriptor's
// FMA math) algorithms qualify for float32, unless TF32 is enabled (config.h): then tensor-op math too,
// but never ALLOW_CONVERSION (float32 rounded to float16).
bool math_allowed(cudnnMathType_t math, cudnnDataType_t type, bool tf32) {
  if (type != CUDNN_DATA_FLOAT || math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH) return true;
  return tf32 && math == CUDNN_TENSOR_OP_MATH;
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

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward: return "forward";
    case ConvPass::backward_data: return "backward_data";
    case ConvPass::backward_filter: return "backward_filter";
  }
  return "?";
}

// The candidates of cuDNN's perf results: `size_of(algo, &bytes)` asks cuDNN for an algorithm's exact
// workspace.
template <typename Perf, typename SizeOf>
std::vector<AlgoCandidate> candidates_of(const std::vector<Perf>& perf, cudnnDataType_t type, SizeOf&& size_of) {
  std::vector<AlgoCandidate> candidates;
  for (const Perf& p : perf) {
    AlgoCandidate candidate{.algo = static_cast<int>(p.algo),
                            .supported = false,
                            .workspace_bytes = p.memory,
                            .deterministic = p.determinism == CUDNN_DETERMINISTIC,
                            .status = cudnnGetErrorString(p.status),
                            .math_type = static_cast<int>(p.mathType)};
    if (p.status == CUDNN_STATUS_SUCCESS) {  // else the status says why not
      if (!math_allowed(p.mathType, type, config::tensor_float_32_execution_enabled()))
        candidate.status = "left out: tensor-op math (TF32)";
      else if (!direct_sum(p.algo))
        candidate.status = "left out: FFT/Winograd rounding";
      else if (const cudnnStatus_t status = size_of(p.algo, &candidate.workspace_bytes); status != CUDNN_STATUS_SUCCESS)
        candidate.status = std::string("workspace query: ") + cudnnGetErrorString(status);
      else
        candidate.supported = true;
    }
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

// cuDNN refusing a layout's descriptors or query is a layout without candidates, not an error: the
// next layout is tried.
template <typename Query>
std::vector<AlgoCandidate> query_or_refusal(Query&& query) {
  try {
    return query();
  } catch (const DeviceError& e) {
    return {AlgoCandidate{.algo = -1, .supported = false, .status = e.what()}};
  }
}

// The layout and algorithm of (geometry, pass), cached per device, else chosen (choose_layout_and_
// algorithm: float32 tries NHWC first, float64 starts with the KCRS filter) and logged once with
// TOWER_CUDNN_LOG=1. `query(c)` gives the candidates of the descriptors c.
template <typename Query>
AlgoChoice algorithm_for(CudaDevice& gpu, const KernelContext& ctx, const ConvGeometry& g, ConvPass pass,
                         Query&& query) {
  return gpu.conv_algorithms().get_or_choose({g, pass, config::tensor_float_32_execution_enabled()}, [&] {
    std::vector<LayoutCandidates> tried;
    const auto choice = choose_layout_and_algorithm(g.dtype, budget_of(gpu), [&](ConvLayout layout) {
      return query_or_refusal([&] { return query(make_conv(ctx, g, layout)); });
    }, &tried);
    const auto what = [&] {
      return fmt::format("{} on {}: x ({}, {}{}, {}, {}), a {}{}x{} kernel to {} channels in {} group(s), strides "
                         "({}{}, {}), dilation ({}{}, {}), {}",
                         ctx.node.op(), ctx.device.name(), g.batch, g.spatial == 3 ? fmt::format("{}, ", g.in_d) : "",
                         g.in_h, g.in_w, g.in_c, g.spatial == 3 ? fmt::format("{}x", g.kernel_d) : "", g.kernel_h,
                         g.kernel_w, g.out_c, g.groups, g.spatial == 3 ? fmt::format("{}, ", g.stride_d) : "",
                         g.stride_h, g.stride_w, g.spatial == 3 ? fmt::format("{}, ", g.dilation_d) : "",
                         g.dilation_h, g.dilation_w, dtype_name(g.dtype));
    };
    if (cudnn_log_enabled())
      fmt::print(stderr, "tower: cuDNN {} candidates for {}:\n{}", pass_name(pass), what(),
                 describe_candidates(pass_name(pass), tried, choice));
    if (!choice)
      raise<DeviceError>("{}: cuDNN has no {} algorithm in any layout; its candidates:\n{}", what(), pass_name(pass),
                         describe_candidates(pass_name(pass), tried, choice));
    return *choice;
  });
}

AlgoChoice forward_algorithm(CudaDevice& gpu, const KernelContext& ctx, const ConvGeometry& g) {
  return algorithm_for(gpu, ctx, g, ConvPass::forward, [&](const CudnnConv& c) {
    cudnnHandle_t h = gpu.cudnn();
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(count));
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, c.x.get(), c.w.get(), c.conv.get(), c.y.get(), count,
                                                       &returned, perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return candidates_of(perf, c.type, [&](cudnnConvolutionFwdAlgo_t algo, std::size_t* bytes) {
      return cudnnGetConvolutionForwardWorkspaceSize(h, c.x.get(), c.w.get(), c.conv.get(), c.y.get(), algo, bytes);
    });
  });
}

AlgoChoice backward_data_algorithm(CudaDevice& gpu, const KernelContext& ctx, const ConvGeometry& g) {
  return algorithm_for(gpu, ctx, g, ConvPass::backward_data, [&](const CudnnConv& c) {
    cudnnHandle_t h = gpu.cudnn();
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(count));
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c.w.get(), c.y.get(), c.conv.get(), c.x.get(), count,
                                                            &returned, perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return candidates_of(perf, c.type, [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) {
      return cudnnGetConvolutionBackwardDataWorkspaceSize(h, c.w.get(), c.y.get(), c.conv.get(), c.x.get(), algo, bytes);
    });
  });
}

AlgoChoice backward_filter_algorithm(CudaDevice& gpu, const KernelContext& ctx, const ConvGeometry& g) {
  return algorithm_for(gpu, ctx, g, ConvPass::backward_filter, [&](const CudnnConv& c) {
    cudnnHandle_t h = gpu.cudnn();
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(count));
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, c.x.get(), c.y.get(), c.conv.get(), c.w.get(), count,
                                                              &returned, perf.data()));
    perf.resize(static_cast<std::size_t>(returned));
    return candidates_of(perf, c.type, [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) {
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, c.x.get(), c.y.get(), c.conv.get(), c.w.get(), algo,
                                                            bytes);
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

Shape permuted_shape(const Shape& shape, const std::vector<std::int64_t>& perm) {
  std::vector<std::int64_t> dims;
  for (std::int64_t a : perm) dims.push_back(shape[static_cast<int>(a)]);
  return Shape(dims);
}

// A transposed copy of t (perm as numpy's transpose).
Tensor permuted(CudaDevice& gpu, const char* op, const Tensor& t, const std::vector<std::int64_t>& perm) {
  Tensor out = scratch(gpu, permuted_shape(t.shape(), perm), t.dtype());
  transpose(gpu, op, t, out, perm);
  return out;
}

// Keras's kernel (kh, kw, in, out) (a depth axis alike) as the layout's filter: KRSC or KCRS.
Tensor to_filter(CudaDevice& gpu, const CudnnConv& c, const Tensor& hwio) {
  return permuted(gpu, op_names::conv2d, hwio, hwio_to_filter_perm(c.layout, c.g.spatial));
}

std::vector<std::int64_t> padded_origin(const CudnnConv& c) {
  if (c.g.spatial == 3) return {0, c.plan.extra_front, c.plan.extra_top, c.plan.extra_left, 0};
  return {0, c.plan.extra_top, c.plan.extra_left, 0};
}
std::vector<std::int64_t> zero_origin(const CudnnConv& c) { return std::vector<std::int64_t>(c.g.spatial + 2, 0); }

// x inside zeros of the padded extent (the plan's explicit part of TF's "same" padding).
Tensor padded_copy(CudaDevice& gpu, const CudnnConv& c, const Tensor& x) {
  Tensor padded = scratch(gpu, padded_shape(c.g, c.plan), x.dtype());
  CUDA_CHECK(cudaMemsetAsync(padded.raw_data(), 0, padded.nbytes(), gpu.stream()));
  copy_box(gpu, op_names::conv2d, x, zero_origin(c), padded, padded_origin(c), x.shape().dims());
  return padded;
}

// An NHWC tensor as the layout's x or y: itself, or (nchw) a channels-first copy.
Tensor as_layout(CudaDevice& gpu, const CudnnConv& c, const Tensor& nhwc) {
  if (c.layout != ConvLayout::nchw) return nhwc;
  return permuted(gpu, op_names::conv2d, nhwc, nhwc_to_nchw_perm(c.g.spatial));
}

// Where cuDNN writes a result whose NHWC shape is `nhwc`: `target` itself, or (nchw) a channels-first
// buffer that from_layout then copies into target.
Tensor output_buffer(CudaDevice& gpu, const CudnnConv& c, const Shape& nhwc, Tensor& target) {
  if (c.layout != ConvLayout::nchw) return target;
  return scratch(gpu, permuted_shape(nhwc, nhwc_to_nchw_perm(c.g.spatial)), target.dtype());
}
void from_layout(CudaDevice& gpu, const CudnnConv& c, const Tensor& buffer, Tensor& target) {
  if (c.layout == ConvLayout::nchw) transpose(gpu, op_names::conv2d, buffer, target, nchw_to_nhwc_perm(c.g.spatial));
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
  const ConvGeometry g = geometry_of(ctx, x.shape(), kernel.shape(), y.shape(), y.dtype());
  const AlgoChoice algo = forward_algorithm(gpu, ctx, g);
  const CudnnConv c = make_conv(ctx, g, algo.layout, algo.math_type);
  dispatch_float_or_half(y.dtype(), op_names::conv2d, [&]<typename T>() {
    const Tensor w = to_filter(gpu, c, kernel);
    const Tensor in = as_layout(gpu, c, c.plan.explicit_padding ? padded_copy(gpu, c, x) : x);
    Tensor out = output_buffer(gpu, c, y.shape(), y);
    Tensor workspace = workspace_for(gpu, algo);
    CUDNN_CHECK(cudnnConvolutionForward(gpu.cudnn(), kOne.of(c.type), c.x.get(), in.data<T>(), c.w.get(), w.data<T>(),
                                        c.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo),
                                        workspace_ptr(workspace), algo.workspace_bytes, kZero.of(c.type), c.y.get(),
                                        out.data<T>()));
    from_layout(gpu, c, out, y);
  });
}

// y = activation(conv2d(x, kernel) + bias): conv2d's kernel, then the bias (and ReLU) in place over y.
// (cudnnConvolutionBiasActivationForward would do both in one call; not tried without a GPU.)
void conv2d_bias_kernel(KernelContext& ctx) {
  conv2d_kernel(ctx);
  const Tensor& bias = ctx.inputs[2];
  Tensor& y = ctx.outputs[0];
  const std::int64_t c = bias.num_elements(), rows = c == 0 ? 0 : y.num_elements() / c;
  const bool relu = ctx.attrs().get_string("activation") == "relu";
  dispatch_float_or_half(y.dtype(), op_names::conv2d_bias, [&]<typename T>() {
    CUDA_CHECK(launch_bias_add<T>(y.data<T>(), bias.data<T>(), y.data<T>(), rows, c, relu, gpu_of(ctx).stream()));
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
  const ConvGeometry g = geometry_of(ctx, dx.shape(), kernel.shape(), dy.shape(), dx.dtype());
  const AlgoChoice algo = backward_data_algorithm(gpu, ctx, g);
  const CudnnConv c = make_conv(ctx, g, algo.layout, algo.math_type);
  dispatch_float_or_half(dx.dtype(), op_names::conv2d_backward_data, [&]<typename T>() {
    const Tensor w = to_filter(gpu, c, kernel);
    const Tensor dy_in = as_layout(gpu, c, dy);
    Tensor padded;  // (batch, [padded_d,] padded_h, padded_w, c_in): dx of the padded copy of x
    if (c.plan.explicit_padding) padded = scratch(gpu, padded_shape(c.g, c.plan), dx.dtype());
    Tensor& target = c.plan.explicit_padding ? padded : dx;
    Tensor out = output_buffer(gpu, c, target.shape(), target);
    Tensor workspace = workspace_for(gpu, algo);
    CUDNN_CHECK(cudnnConvolutionBackwardData(gpu.cudnn(), kOne.of(c.type), c.w.get(), w.data<T>(), c.y.get(),
                                             dy_in.data<T>(), c.conv.get(),
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo),
                                             workspace_ptr(workspace), algo.workspace_bytes, kZero.of(c.type),
                                             c.x.get(), out.data<T>()));
    from_layout(gpu, c, out, target);
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
  const ConvGeometry g = geometry_of(ctx, x.shape(), dk.shape(), dy.shape(), dk.dtype());
  const AlgoChoice algo = backward_filter_algorithm(gpu, ctx, g);
  const CudnnConv c = make_conv(ctx, g, algo.layout, algo.math_type);
  dispatch_float_or_half(dk.dtype(), op_names::conv2d_backward_filter, [&]<typename T>() {
    const Tensor in = as_layout(gpu, c, c.plan.explicit_padding ? padded_copy(gpu, c, x) : x);
    const Tensor dy_in = as_layout(gpu, c, dy);
    Tensor w = scratch(gpu, filter_shape(c.layout, dk.shape()), dk.dtype());  // KRSC or KCRS
    Tensor workspace = workspace_for(gpu, algo);
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(gpu.cudnn(), kOne.of(c.type), c.x.get(), in.data<T>(), c.y.get(),
                                               dy_in.data<T>(), c.conv.get(),
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo),
                                               workspace_ptr(workspace), algo.workspace_bytes, kZero.of(c.type),
                                               c.w.get(), w.data<T>()));
    transpose(gpu, op_names::conv2d_backward_filter, w, dk, filter_to_hwio_perm(c.layout, c.g.spatial));  // -> HWIO
  });
}

}  // namespace

void register_conv_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel(op_names::conv2d, cuda, conv2d_kernel);
  register_kernel(op_names::conv2d_bias, cuda, conv2d_bias_kernel);
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
