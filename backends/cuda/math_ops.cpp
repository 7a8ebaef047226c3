// The CUDA kernel table entries of matmul (cuBLAS GEMM), batch_matmul (strided batched GEMM), dense (cuBLASLt, bias and ReLU in the
// epilogue), bias_add, bias_add_grad and bias_add_relu_grad. matmul, batch_matmul and dense also take float16/bfloat16
// operands natively (half_ops.cpp sends them here): tensor-core GEMMs with float32 accumulation.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tower/backends/cuda/cublaslt_plan.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/math_launchers.h"
#include "tower/backends/cuda/strided.h"
#include "tower/core/checked.h"
#include "tower/core/config.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cuda {

namespace {

// cuBLAS's data type of a half operand.
cudaDataType_t half_data_type(DType dtype) { return dtype == DType::float16 ? CUDA_R_16F : CUDA_R_16BF; }

// Row-major y (m, n) = op(a) op(b) is column-major y^T (n, m) = op(b)^T op(a)^T: cuBLAS gets b
// first. a is (m, k) or, transposed, (k, m); b is (k, n) or (n, k); their row lengths are the
// leading dimensions.
void gemm(CudaDevice& gpu, const Tensor& a, const Tensor& b, Tensor& y, bool ta, bool tb) {
  const int m = static_cast<int>(y.shape()[0]), n = static_cast<int>(y.shape()[1]);
  const int k = static_cast<int>(a.shape()[ta ? 0 : 1]);
  const int lda = static_cast<int>(a.shape()[1]), ldb = static_cast<int>(b.shape()[1]);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    CUDA_CHECK(cudaMemsetAsync(y.raw_data(), 0, y.nbytes(), gpu.stream()));
    return;
  }
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (is_half(y.dtype())) {  // half in and out, float32 accumulation and scaling, on tensor cores
    const float one = 1, zero = 0;
    const cudaDataType_t t = half_data_type(y.dtype());
    CUBLAS_CHECK(cublasGemmEx(gpu.cublas(), op_b, op_a, n, m, k, &one, b.raw_data(), t, ldb, a.raw_data(), t, lda,
                              &zero, y.raw_data(), t, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  dispatch_floating(y.dtype(), op_names::matmul, [&]<typename T>() {
    const T one = 1, zero = 0;
    if constexpr (std::is_same_v<T, float>)
      CUBLAS_CHECK(cublasSgemm(gpu.cublas(), op_b, op_a, n, m, k, &one, b.data<T>(), ldb, a.data<T>(), lda, &zero,
                               y.data<T>(), n));
    else
      CUBLAS_CHECK(cublasDgemm(gpu.cublas(), op_b, op_a, n, m, k, &one, b.data<T>(), ldb, a.data<T>(), lda, &zero,
                               y.data<T>(), n));
  });
}

void matmul_kernel(KernelContext& ctx) {
  gemm(gpu_of(ctx), ctx.inputs[0], ctx.inputs[1], ctx.outputs[0], ctx.attrs().get_bool("transpose_a"),
       ctx.attrs().get_bool("transpose_b"));
}

// y (B, m, n) = op(a) op(b) per batch item, the leading axes folded into B: one strided batched GEMM,
// with operands swapped as in gemm above (column-major y^T = op(b)^T op(a)^T per item).
void batch_matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const bool ta = ctx.attrs().get_bool("transpose_a"), tb = ctx.attrs().get_bool("transpose_b");
  const int r = y.shape().rank();
  const std::int64_t m = y.shape()[r - 2], n = y.shape()[r - 1], k = a.shape()[ta ? r - 2 : r - 1];
  const std::int64_t lda = a.shape()[r - 1], ldb = b.shape()[r - 1];
  if (y.num_elements() == 0) return;
  const std::int64_t batch = y.num_elements() / (m * n);
  CudaDevice& gpu = gpu_of(ctx);
  if (k == 0) {
    CUDA_CHECK(cudaMemsetAsync(y.raw_data(), 0, y.nbytes(), gpu.stream()));
    return;
  }
  for (std::int64_t size : {m, n, k, lda, ldb, batch})
    (void)checked_int(size, "batch_matmul on a GPU: a dimension of its operands",
                      "cuBLAS takes at most 2147483647: use a smaller batch or layer");
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const long long stride_a = m * k, stride_b = k * n, stride_y = m * n;
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ilda = static_cast<int>(lda), ildb = static_cast<int>(ldb), ibatch = static_cast<int>(batch);
  if (is_half(y.dtype())) {  // as gemm: half operands, float32 accumulation
    const float one = 1, zero = 0;
    const cudaDataType_t t = half_data_type(y.dtype());
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(gpu.cublas(), op_b, op_a, in, im, ik, &one, b.raw_data(), t, ildb, stride_b,
                                            a.raw_data(), t, ilda, stride_a, &zero, y.raw_data(), t, in, stride_y,
                                            ibatch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  dispatch_floating(y.dtype(), op_names::batch_matmul, [&]<typename T>() {
    const T one = 1, zero = 0;
    if constexpr (std::is_same_v<T, float>)
      CUBLAS_CHECK(cublasSgemmStridedBatched(gpu.cublas(), op_b, op_a, in, im, ik, &one, b.data<T>(), ildb, stride_b,
                                             a.data<T>(), ilda, stride_a, &zero, y.data<T>(), in, stride_y, ibatch));
    else
      CUBLAS_CHECK(cublasDgemmStridedBatched(gpu.cublas(), op_b, op_a, in, im, ik, &one, b.data<T>(), ildb, stride_b,
                                             a.data<T>(), ilda, stride_a, &zero, y.data<T>(), in, stride_y, ibatch));
  });
}

// ---- dense -------------------------------------------------------------------------------------

// TOWER_CUBLASLT_EPILOGUE=0 runs dense as GEMM, bias_add and relu kernels instead (to measure what
// the epilogue wins); otherwise float32 dense is one cuBLASLt call.
bool epilogue_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("TOWER_CUBLASLT_EPILOGUE");
    return value == nullptr || std::string(value) != "0";
  }();
  return enabled;
}

// The cuBLASLt descriptors and algorithm of one dense shape, dtype and operand alignment on one GPU.
// As matmul, row-major y (m, n) = x (m, k) kernel (k, n) is column-major y^T (n, m) = kernel^T (n, k)
// x^T (k, m): the kernel's buffer is A, x's is B, and the bias (n,) runs along C's rows, where
// cuBLASLt's bias epilogue adds it. FP32 compute (TF32 when config.h enables it: part of the key); float16
// and bfloat16 operands (and bias) with FP32 compute and scaling, rounded once into y. The heuristic is told
// the pointers' real alignment (cublaslt_plan.h), so it never picks an algorithm that needs more.
struct LtDense {
  std::mutex mutex;  // the bias pointer is set on the shared descriptor right before each call
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  bool found = false;  // false: cuBLASLt offers no algorithm, or its call failed once; run the unfused kernels

  LtDense(CudaDevice& gpu, const LtDenseKey& key) {
    const int m = key.m, n = key.n, k = key.k;
    // TF32 (config.h) rounds float32 operands to 10 mantissa bits on tensor cores; else full FP32.
    const bool tf32 = key.tf32 && key.dtype == DType::float32;
    const cudaDataType_t type = is_half(key.dtype) ? half_data_type(key.dtype) : CUDA_R_32F;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasLtEpilogue_t epilogue = key.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a, type, n, k, n));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b, type, k, m, k));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c, type, n, m, n));
    cublasLtMatmulPreference_t preference = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    const std::size_t max_workspace = std::size_t{4} << 20;
    int count = 0;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof(max_workspace));
    const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d}};
    for (const auto& [attribute, bytes] : alignments)
      if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes, sizeof(bytes));
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulAlgoGetHeuristic(gpu.cublas_lt(), op, a, b, c, c, preference, 1, &heuristic, &count);
    cublasLtMatmulPreferenceDestroy(preference);
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) CUBLAS_CHECK(status);  // not supported: no algorithm
    found = status == CUBLAS_STATUS_SUCCESS && count > 0;
  }
  ~LtDense() {
    for (cublasLtMatrixLayout_t layout : {a, b, c})
      if (layout) cublasLtMatrixLayoutDestroy(layout);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  LtDense(const LtDense&) = delete;
  LtDense& operator=(const LtDense&) = delete;
};

// The plan of a key, made once: the heuristic query costs more than the GEMM of a small layer. The
// map is never destroyed (like the devices, core/device.cpp): its descriptors would otherwise be
// freed after the CUDA runtime's own exit teardown.
LtDense& lt_dense(CudaDevice& gpu, const LtDenseKey& key) {
  static std::mutex mutex;
  static auto* plans = new std::map<LtDenseKey, std::unique_ptr<LtDense>>();
  std::lock_guard lock(mutex);
  auto& plan = (*plans)[key];
  if (!plan) plan = std::make_unique<LtDense>(gpu, key);
  return *plan;
}

// The fused call; false (after warning once) when cuBLASLt refuses it at run time, so that the caller
// runs the unfused kernels; the plan is then marked and not tried again.
bool lt_dense_run(CudaDevice& gpu, LtDense& plan, const Tensor& x, const Tensor& kernel, const Tensor& bias, Tensor& y,
                  int m, int n, int k) {
  Tensor workspace(Shape{static_cast<std::int64_t>(plan.heuristic.workspaceSize)}, DType::uint8, gpu);
  const float one = 1, zero = 0;
  std::lock_guard lock(plan.mutex);
  if (!plan.found) return false;
  const void* bias_data = bias.raw_data();
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_data, sizeof(bias_data)));
  const cublasStatus_t status =
      cublasLtMatmul(gpu.cublas_lt(), plan.op, &one, kernel.raw_data(), plan.a, x.raw_data(), plan.b, &zero,
                     y.raw_data(), plan.c, y.raw_data(), plan.c, &plan.heuristic.algo,
                     workspace.defined() && workspace.nbytes() > 0 ? workspace.raw_data() : nullptr, workspace.nbytes(),
                     gpu.stream());
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  (void)cudaGetLastError();  // a refused launch is not sticky: clear it before the fallback's launches
  plan.found = false;
  static std::once_flag warned;
  std::call_once(warned, [&] {
    fmt::print(stderr,
               "tower: cublasLtMatmul failed ({}: {}) for a {} dense (m {}, n {}, k {}) on {}; running GEMM, "
               "bias_add and relu for it instead (warned once)\n",
               cublasGetStatusName(status), cublasGetStatusString(status), dtype_name(y.dtype()), m, n, k, gpu.name());
  });
  return false;
}

// (x (m, k), kernel (k, n), bias (n,)) -> y = activation(x kernel + bias), activation linear or relu.
void dense_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  const Tensor& bias = ctx.inputs[2];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const bool relu = ctx.attrs().get_string("activation") == "relu";
  const int m = static_cast<int>(y.shape()[0]), n = static_cast<int>(y.shape()[1]), k = static_cast<int>(x.shape()[1]);
  if (m == 0 || n == 0) return;
  if (y.dtype() != DType::float64 && k > 0 && epilogue_enabled()) {
    LtDense& plan = lt_dense(gpu, lt_dense_key(&gpu, m, n, k, relu, kernel.raw_data(), x.raw_data(), y.raw_data(),
                                               y.raw_data(), config::tensor_float_32_execution_enabled(), y.dtype()));
    if (plan.found && lt_dense_run(gpu, plan, x, kernel, bias, y, m, n, k)) return;
  }
  // float64, no cuBLASLt algorithm, a failed cuBLASLt call, or the epilogue turned off: GEMM, then bias
  // (and ReLU) in place (a half GEMM's output rounded, then the bias added in float and rounded again).
  gemm(gpu, x, kernel, y, false, false);
  dispatch_float_or_half(y.dtype(), op_names::dense, [&]<typename T>() {
    CUDA_CHECK(launch_bias_add<T>(y.data<T>(), bias.data<T>(), y.data<T>(), m, n, relu, gpu.stream()));
  });
}

void bias_add_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& bias = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const std::int64_t c = bias.num_elements(), rows = c == 0 ? 0 : x.num_elements() / c;
  const bool relu = ctx.attrs().get_string("activation") == "relu";
  dispatch_floating(x.dtype(), op_names::bias_add, [&]<typename T>() {
    CUDA_CHECK(launch_bias_add<T>(x.data<T>(), bias.data<T>(), y.data<T>(), rows, c, relu, gpu.stream()));
  });
}

void bias_add_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& db = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const std::int64_t c = db.num_elements(), rows = c == 0 ? 0 : dy.num_elements() / c;
  dispatch_floating(dy.dtype(), op_names::bias_add_grad, [&]<typename T>() {
    CUDA_CHECK(launch_bias_add_grad<T>(dy.data<T>(), db.data<T>(), rows, c, gpu.stream()));
  });
}

// (dy, y) -> {dz = relu_grad(dy, y), bias_add_grad(dz)}: relu_grad's kernel, then bias_add_grad's, on the
// same stream (the unfused numbers; the one pass is the CPU's gain, which a GPU's bandwidth makes small).
void bias_add_relu_grad_kernel(KernelContext& ctx) {
  KernelContext relu{ctx.node, ctx.device, {ctx.inputs[0], ctx.inputs[1]}, {ctx.outputs[0]}};
  find_kernel(op_names::relu_grad, DeviceKind::cuda)(relu);
  KernelContext bias{ctx.node, ctx.device, {ctx.outputs[0]}, {ctx.outputs[1]}};
  bias_add_grad_kernel(bias);
}

void scale_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const double factor = ctx.attrs().get_float("factor");
  dispatch_floating(x.dtype(), op_names::scale, [&]<typename T>() {
    CUDA_CHECK(
        launch_scale<T>(x.data<T>(), y.data<T>(), x.num_elements(), static_cast<T>(factor), gpu_of(ctx).stream()));
  });
}

// y = op(a, b) with NumPy broadcasting (up to BroadcastLayout::kMaxRank axes).
void run_binary(KernelContext& ctx, BinaryOp op) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const bool same_shape = a.shape() == b.shape();
  BroadcastLayout layout;
  if (!same_shape)
    layout = strided_layout(ctx, y.shape(), broadcast_strides(a.shape(), y.shape()),
                            broadcast_strides(b.shape(), y.shape()));
  dispatch_floating(y.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_binary<T>(op, a.data<T>(), b.data<T>(), y.data<T>(), y.num_elements(),
                                same_shape ? nullptr : &layout, gpu.stream()));
  });
}

template <BinaryOp op>
void binary_kernel(KernelContext& ctx) {
  run_binary(ctx, op);
}

// 1 where a <mode> b holds, else 0 (mode: eq, gt, ge, lt, le), broadcasting as the arithmetic.
void compare_mask_kernel(KernelContext& ctx) {
  const std::string& mode = ctx.attrs().get_string("mode");
  BinaryOp op = BinaryOp::equal;
  if (mode == "gt")
    op = BinaryOp::greater;
  else if (mode == "ge")
    op = BinaryOp::greater_equal;
  else if (mode == "lt")
    op = BinaryOp::less;
  else if (mode == "le")
    op = BinaryOp::less_equal;
  run_binary(ctx, op);
}

// y (like's shape) = x broadcast.
void broadcast_like_kernel(KernelContext& ctx) { run_broadcast(ctx, ctx.inputs[0].shape(), 1.0); }

// y (like's shape) = x summed over the axes along which like was broadcast.
void sum_to_kernel(KernelContext& ctx) {
  run_reduce(ctx, ReduceOp::sum, sum_to_axes(ctx.inputs[0].shape(), ctx.outputs[0].shape()),
             /*floating_only=*/true);
}

}  // namespace

void register_math_kernels() {
  register_kernel(op_names::matmul, DeviceKind::cuda, matmul_kernel);
  register_kernel(op_names::batch_matmul, DeviceKind::cuda, batch_matmul_kernel);
  register_kernel(op_names::dense, DeviceKind::cuda, dense_kernel);
  register_kernel(op_names::bias_add, DeviceKind::cuda, bias_add_kernel);
  register_kernel(op_names::bias_add_grad, DeviceKind::cuda, bias_add_grad_kernel);
  register_kernel(op_names::bias_add_relu_grad, DeviceKind::cuda, bias_add_relu_grad_kernel);
  register_kernel(op_names::scale, DeviceKind::cuda, scale_kernel);
  register_kernel(op_names::add, DeviceKind::cuda, binary_kernel<BinaryOp::add>);
  register_kernel(op_names::subtract, DeviceKind::cuda, binary_kernel<BinaryOp::subtract>);
  register_kernel(op_names::multiply, DeviceKind::cuda, binary_kernel<BinaryOp::multiply>);
  register_kernel(op_names::divide, DeviceKind::cuda, binary_kernel<BinaryOp::divide>);
  register_kernel(op_names::maximum, DeviceKind::cuda, binary_kernel<BinaryOp::maximum>);
  register_kernel(op_names::minimum, DeviceKind::cuda, binary_kernel<BinaryOp::minimum>);
  register_kernel(op_names::compare_mask, DeviceKind::cuda, compare_mask_kernel);
  register_kernel(op_names::broadcast_like, DeviceKind::cuda, broadcast_like_kernel);
  register_kernel(op_names::sum_to, DeviceKind::cuda, sum_to_kernel);
}

}  // namespace tower::cuda
