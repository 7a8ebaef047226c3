// The CUDA kernel table entries of the recurrent ops (core/ops.h, "recurrent cells"): the time steps run
// in order on the device's stream, each one cuBLAS GEMM with the recurrent kernel (two for GRU without
// reset_after) and a fused gate kernel (recurrent_kernels.cu); the backward pass runs them in reverse,
// then the recurrent kernel's gradient is GEMMs over all steps at once. The CPU kernels
// (backends/cpu/recurrent_kernels.cpp) are the reference.
#include <cstdint>
#include <type_traits>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/math_launchers.h"
#include "tower/backends/cuda/recurrent_launchers.h"
#include "tower/core/checked.h"
#include "tower/core/gate_activation.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

// Row-major C (m, n) = op(A) op(B) + beta C is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first
// (as matmul in math_ops.cpp). A is (m, k) or, transposed, (k, m); B is (k, n) or (n, k); lda, ldb and
// ldc say how far apart their rows are, so a block of columns of a wider matrix is an operand too.
template <typename T>
void gemm(CudaDevice& gpu, bool ta, bool tb, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T beta,
          T* c, int ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = beta C
    if (beta == T(0)) CUDA_CHECK(cudaMemset2DAsync(c, sizeof(T) * ldc, 0, sizeof(T) * n, m, gpu.stream()));
    return;
  }
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const T one = 1;
  if constexpr (std::is_same_v<T, float>)
    CUBLAS_CHECK(cublasSgemm(gpu.cublas(), op_b, op_a, n, m, k, &one, b, ldb, a, lda, &beta, c, ldc));
  else
    CUBLAS_CHECK(cublasDgemm(gpu.cublas(), op_b, op_a, n, m, k, &one, b, ldb, a, lda, &beta, c, ldc));
}

// One run's sizes (as cuBLAS's ints), step order and activations. Step s reads time t(s).
struct Run {
  std::int64_t time;
  int batch, units;
  bool backwards;
  GateActivation activation, recurrent_activation;

  std::int64_t t(std::int64_t s) const { return backwards ? time - 1 - s : s; }
};

Run run_of(const KernelContext& ctx, const Tensor& sequence, std::int64_t units) {
  const Attrs& attrs = ctx.attrs();
  const std::int64_t time = sequence.shape()[0], batch = sequence.shape()[1];
  // The weight gradient's GEMM sums over (time - 1)·batch rows; the widest gate block is 4·units.
  for (std::int64_t size : {time * batch, batch, 4 * units})
    (void)checked_int(size, "a recurrent op on a GPU: time·batch and 4·units", "cuBLAS takes at most 2147483647");
  return {.time = time,
          .batch = static_cast<int>(batch),
          .units = static_cast<int>(units),
          .backwards = attrs.get_bool("go_backwards"),
          .activation = gate_activation_named(attrs.get_string("activation")),
          .recurrent_activation = gate_activation_named(attrs.get_string("recurrent_activation"))};
}

// The optional mask (batch, time), input `index` when there is one.
template <typename T>
const T* mask_of(const KernelContext& ctx, std::size_t index) {
  return ctx.inputs.size() > index ? ctx.inputs[index].data<T>() : nullptr;
}

template <typename T>
StepRows<T> rows_at(const Run& r, const T* mask, std::int64_t s) {
  return {.batch = r.batch, .units = r.units, .mask = mask, .time = r.time, .t = r.t(s)};
}

// Step (or time) s's (batch, width) block of a (steps, batch, width) buffer.
template <typename P>
P at_step(P base, std::int64_t s, const Run& r, std::int64_t width) {
  return base + s * r.batch * width;
}

// The state before step s: h0 (or c0) at s = 0, else the states of step s - 1.
template <typename T>
const T* previous(const T* initial, const T* states, std::int64_t s, const Run& r) {
  return s == 0 ? initial : at_step(states, s - 1, r, r.units);
}

// dst (batch, units) = src (batch, units): the final state output (the state before step `time`), and
// the carries' start (the final state's gradient).
template <typename T>
void copy_state(CudaDevice& gpu, T* dst, const T* src, const Run& r) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(T) * r.batch * r.units, cudaMemcpyDeviceToDevice, gpu.stream()));
}

// A (steps, batch, width) scratch of the run's dtype; empty when not needed.
Tensor scratch(CudaDevice& gpu, DType dtype, bool needed, Shape shape) {
  return needed ? Tensor(std::move(shape), dtype, gpu) : Tensor();
}

// dw (units, n) = the sum over steps of prev_s^T (batch, units) · d_s (batch, n), where prev_0 =
// initial and prev_s = states[s - 1], d in step order with rows `ldd` apart: two GEMMs over
// contiguous steps (initial with step 0, states[0 .. T-2] with steps 1 .. T-1), as on the CPU. No
// steps: dw = 0.
template <typename T>
void weight_grad(CudaDevice& gpu, const Run& r, const T* initial, const T* states, const T* d, int ldd, int n, T* dw,
                 int lddw) {
  const int U = r.units, B = r.batch;
  gemm<T>(gpu, true, false, U, n, r.time > 0 ? B : 0, initial, U, d, ldd, T(0), dw, lddw);
  if (r.time > 1)
    gemm<T>(gpu, true, false, U, n, static_cast<int>((r.time - 1) * B), states, U, d + std::int64_t{B} * ldd, ldd,
            T(1), dw, lddw);
}

// ---- SimpleRNN ----------------------------------------------------------------------------------

// (x_proj, recurrent_kernel, h0[, mask]) -> {states, final h}. Per step: states[s] = h_{s-1} · kernel,
// then the step kernel adds x_proj[t] and activates in place.
void simple_rnn_kernel(KernelContext& ctx) {
  CudaDevice& gpu = gpu_of(ctx);
  const Run r = run_of(ctx, ctx.inputs[0], ctx.inputs[1].shape()[0]);
  dispatch_floating(ctx.inputs[0].dtype(), op_names::simple_rnn, [&]<typename T>() {
    const int B = r.batch, U = r.units;
    const T* x = ctx.inputs[0].data<T>();          // (T, B, U)
    const T* kernel = ctx.inputs[1].data<T>();     // (U, U)
    const T* h0 = ctx.inputs[2].data<T>();         // (B, U)
    const T* mask = mask_of<T>(ctx, 3);            // (B, T) or null
    T* hs = ctx.outputs[0].data<T>();              // (T, B, U)
    for (std::int64_t s = 0; s < r.time; ++s) {
      const T* hp = previous(h0, hs, s, r);
      T* h = at_step(hs, s, r, U);
      gemm<T>(gpu, false, false, B, U, U, hp, U, kernel, U, T(0), h, U);
      CUDA_CHECK(launch_simple_rnn_step<T>(rows_at(r, mask, s), r.activation, at_step(x, r.t(s), r, U), hp, h,
                                           gpu.stream()));
    }
    copy_state(gpu, ctx.outputs[1].data<T>(), previous(h0, hs, r.time, r), r);
  });
}

// (d_states, d_final, recurrent_kernel, h0, states[, mask]) -> {dx_proj, drecurrent_kernel, dh0}. dh0
// is the carry d(h_s) through the steps, starting from d_final.
void simple_rnn_grad_kernel(KernelContext& ctx) {
  CudaDevice& gpu = gpu_of(ctx);
  const Tensor& states = ctx.inputs[4];
  const Run r = run_of(ctx, states, ctx.inputs[2].shape()[0]);
  dispatch_floating(states.dtype(), op_names::simple_rnn_grad, [&]<typename T>() {
    const int B = r.batch, U = r.units;
    const T* dstates = ctx.inputs[0].data<T>();  // (T, B, U)
    const T* dfinal = ctx.inputs[1].data<T>();   // (B, U)
    const T* kernel = ctx.inputs[2].data<T>();   // (U, U)
    const T* h0 = ctx.inputs[3].data<T>();       // (B, U)
    const T* hs = states.data<T>();              // (T, B, U)
    const T* mask = mask_of<T>(ctx, 5);
    T* dx = ctx.outputs[0].data<T>();            // (T, B, U), time order
    T* carry = ctx.outputs[2].data<T>();         // dh0 (B, U)
    // d(x_proj[t(s)] + h_{s-1} · kernel) in step order for the weight gradient: dx itself going
    // forwards; going backwards a scratch, and the step kernel writes dx at time t(s) too.
    Tensor by_step = scratch(gpu, states.dtype(), r.backwards, Shape{r.time, B, U});
    T* d = r.backwards ? by_step.data<T>() : dx;
    copy_state(gpu, carry, dfinal, r);
    for (std::int64_t s = r.time - 1; s >= 0; --s) {
      T* ds = at_step(d, s, r, U);
      CUDA_CHECK(launch_simple_rnn_grad_step<T>(rows_at(r, mask, s), r.activation, at_step(dstates, s, r, U),
                                                at_step(hs, s, r, U), carry, ds,
                                                r.backwards ? at_step(dx, r.t(s), r, U) : nullptr, gpu.stream()));
      gemm<T>(gpu, false, true, B, U, U, ds, U, kernel, U, T(1), carry, U);  // carry += d_s · kernel^T
    }
    weight_grad<T>(gpu, r, h0, hs, d, U, U, ctx.outputs[1].data<T>(), U);
  });
}

// ---- LSTM ---------------------------------------------------------------------------------------

// (x_proj, recurrent_kernel, h0, c0[, mask]) -> {h states, c states, gates, final h, final c}. Per
// step: gates[s] = h_{s-1} · kernel, then the step kernel adds x_proj[t], activates and updates c and h.
void lstm_kernel(KernelContext& ctx) {
  CudaDevice& gpu = gpu_of(ctx);
  const Run r = run_of(ctx, ctx.inputs[0], ctx.inputs[1].shape()[0]);
  dispatch_floating(ctx.inputs[0].dtype(), op_names::lstm, [&]<typename T>() {
    const int B = r.batch, U = r.units, G = 4 * U;
    const T* x = ctx.inputs[0].data<T>();       // (T, B, 4U)
    const T* kernel = ctx.inputs[1].data<T>();  // (U, 4U)
    const T* h0 = ctx.inputs[2].data<T>();      // (B, U)
    const T* c0 = ctx.inputs[3].data<T>();      // (B, U)
    const T* mask = mask_of<T>(ctx, 4);
    T* hs = ctx.outputs[0].data<T>();     // (T, B, U)
    T* cs = ctx.outputs[1].data<T>();     // (T, B, U)
    T* gates = ctx.outputs[2].data<T>();  // (T, B, 4U)
    for (std::int64_t s = 0; s < r.time; ++s) {
      const T* hp = previous(h0, hs, s, r);
      T* g = at_step(gates, s, r, G);
      gemm<T>(gpu, false, false, B, G, U, hp, U, kernel, G, T(0), g, G);
      CUDA_CHECK(launch_lstm_step<T>(rows_at(r, mask, s), r.activation, r.recurrent_activation,
                                     at_step(x, r.t(s), r, G), hp, previous(c0, cs, s, r), g, at_step(hs, s, r, U),
                                     at_step(cs, s, r, U), gpu.stream()));
    }
    copy_state(gpu, ctx.outputs[3].data<T>(), previous(h0, hs, r.time, r), r);
    copy_state(gpu, ctx.outputs[4].data<T>(), previous(c0, cs, r.time, r), r);
  });
}

// (d_h, d_c, d_final_h, d_final_c, recurrent_kernel, h0, c0, h states, c states, gates[, mask]) ->
// {dx_proj, drecurrent_kernel, dh0, dc0}. dh0 and dc0 are the carries through the steps, starting
// from d_final_h and d_final_c.
void lstm_grad_kernel(KernelContext& ctx) {
  CudaDevice& gpu = gpu_of(ctx);
  const Tensor& hs_t = ctx.inputs[7];
  const Run r = run_of(ctx, hs_t, ctx.inputs[4].shape()[0]);
  dispatch_floating(hs_t.dtype(), op_names::lstm_grad, [&]<typename T>() {
    const int B = r.batch, U = r.units, G = 4 * U;
    const T* dhs = ctx.inputs[0].data<T>();       // (T, B, U)
    const T* dcs = ctx.inputs[1].data<T>();       // (T, B, U)
    const T* dfinal_h = ctx.inputs[2].data<T>();  // (B, U)
    const T* dfinal_c = ctx.inputs[3].data<T>();  // (B, U)
    const T* kernel = ctx.inputs[4].data<T>();    // (U, 4U)
    const T* h0 = ctx.inputs[5].data<T>();        // (B, U)
    const T* c0 = ctx.inputs[6].data<T>();        // (B, U)
    const T* hs = hs_t.data<T>();                 // (T, B, U)
    const T* cs = ctx.inputs[8].data<T>();        // (T, B, U)
    const T* gates = ctx.inputs[9].data<T>();     // (T, B, 4U)
    const T* mask = mask_of<T>(ctx, 10);
    T* dx = ctx.outputs[0].data<T>();        // (T, B, 4U), time order
    T* dh_carry = ctx.outputs[2].data<T>();  // dh0 (B, U)
    T* dc_carry = ctx.outputs[3].data<T>();  // dc0 (B, U)
    // d of the gates' inputs in step order (as in simple_rnn_grad_kernel).
    Tensor by_step = scratch(gpu, hs_t.dtype(), r.backwards, Shape{r.time, B, G});
    T* d = r.backwards ? by_step.data<T>() : dx;
    copy_state(gpu, dh_carry, dfinal_h, r);
    copy_state(gpu, dc_carry, dfinal_c, r);
    for (std::int64_t s = r.time - 1; s >= 0; --s) {
      T* ds = at_step(d, s, r, G);
      CUDA_CHECK(launch_lstm_grad_step<T>(rows_at(r, mask, s), r.activation, r.recurrent_activation,
                                          at_step(dhs, s, r, U), at_step(dcs, s, r, U), previous(c0, cs, s, r),
                                          at_step(cs, s, r, U), at_step(gates, s, r, G), dh_carry, dc_carry, ds,
                                          r.backwards ? at_step(dx, r.t(s), r, G) : nullptr, gpu.stream()));
      gemm<T>(gpu, false, true, B, U, G, ds, G, kernel, G, T(1), dh_carry, U);  // dh_carry += d_s · kernel^T
    }
    weight_grad<T>(gpu, r, h0, hs, d, G, G, ctx.outputs[1].data<T>(), G);
  });
}

// ---- GRU ----------------------------------------------------------------------------------------

// (x_proj, recurrent_kernel, recurrent_bias, h0[, mask]) -> {states, gates: z, r, n, q_h or r h_{s-1},
// final h}.
// Per step, reset_after: product = h_{s-1} · kernel, then one step kernel. Otherwise product[:, :2U] =
// h_{s-1} · kernel[:, :2U], the reset gate kernel, product[:, 2U:] = (r h_{s-1}) · kernel[:, 2U:] and
// the candidate kernel.
void gru_kernel(KernelContext& ctx) {
  CudaDevice& gpu = gpu_of(ctx);
  const Run r = run_of(ctx, ctx.inputs[0], ctx.inputs[1].shape()[0]);
  const bool reset_after = ctx.attrs().get_bool("reset_after");
  dispatch_floating(ctx.inputs[0].dtype(), op_names::gru, [&]<typename T>() {
    const int B = r.batch, U = r.units, X = 3 * U, G = 4 * U;
    const T* x = ctx.inputs[0].data<T>();       // (T, B, 3U)
    const T* kernel = ctx.inputs[1].data<T>();  // (U, 3U)
    const T* bias = ctx.inputs[2].data<T>();    // (3U,)
    const T* h0 = ctx.inputs[3].data<T>();      // (B, U)
    const T* mask = mask_of<T>(ctx, 4);
    T* hs = ctx.outputs[0].data<T>();     // (T, B, U)
    T* gates = ctx.outputs[1].data<T>();  // (T, B, 4U)
    Tensor product_buffer(Shape{B, X}, ctx.inputs[0].dtype(), gpu);  // (B, 3U): the recurrent product
    T* product = product_buffer.data<T>();
    for (std::int64_t s = 0; s < r.time; ++s) {
      const T* hp = previous(h0, hs, s, r);
      const T* xs = at_step(x, r.t(s), r, X);
      T* g = at_step(gates, s, r, G);
      T* h = at_step(hs, s, r, U);
      const StepRows<T> q = rows_at(r, mask, s);
      if (reset_after) {
        gemm<T>(gpu, false, false, B, X, U, hp, U, kernel, X, T(0), product, X);
        CUDA_CHECK(launch_gru_step<T>(q, r.activation, r.recurrent_activation, xs, product, bias, hp, g, h,
                                      gpu.stream()));
      } else {
        gemm<T>(gpu, false, false, B, 2 * U, U, hp, U, kernel, X, T(0), product, X);
        CUDA_CHECK(launch_gru_reset_gates<T>(q, r.recurrent_activation, xs, product, bias, hp, g, gpu.stream()));
        gemm<T>(gpu, false, false, B, U, U, g + 3 * U, G, kernel + 2 * U, X, T(0), product + 2 * U, X);
        CUDA_CHECK(launch_gru_candidate<T>(q, r.activation, xs, product, bias, hp, g, h, gpu.stream()));
      }
    }
    copy_state(gpu, ctx.outputs[2].data<T>(), previous(h0, hs, r.time, r), r);
  });
}

// (d_states, d_final, recurrent_kernel, h0, states, gates[, mask]) -> {dx_proj, drecurrent_kernel,
// drecurrent_bias, dh0}. dh0 is the carry through the steps, starting from d_final; the step kernels
// write dx_proj at time
// t(s) and, in step order, d of what the recurrent product feeds (z, r, and q_h or n's input), which
// the kernel's and the bias's gradients sum over all steps.
void gru_grad_kernel(KernelContext& ctx) {
  CudaDevice& gpu = gpu_of(ctx);
  const Tensor& states = ctx.inputs[4];
  const Run r = run_of(ctx, states, ctx.inputs[2].shape()[0]);
  const bool reset_after = ctx.attrs().get_bool("reset_after");
  dispatch_floating(states.dtype(), op_names::gru_grad, [&]<typename T>() {
    const int B = r.batch, U = r.units, X = 3 * U, G = 4 * U;
    const T* dhs = ctx.inputs[0].data<T>();     // (T, B, U)
    const T* dfinal = ctx.inputs[1].data<T>();  // (B, U)
    const T* kernel = ctx.inputs[2].data<T>();  // (U, 3U)
    const T* h0 = ctx.inputs[3].data<T>();      // (B, U)
    const T* hs = states.data<T>();             // (T, B, U)
    const T* gates = ctx.inputs[5].data<T>();   // (T, B, 4U)
    const T* mask = mask_of<T>(ctx, 6);
    T* dx = ctx.outputs[0].data<T>();       // (T, B, 3U), time order
    T* dkernel = ctx.outputs[1].data<T>();  // (U, 3U)
    T* carry = ctx.outputs[3].data<T>();    // dh0 (B, U)
    Tensor drec_buffer(Shape{r.time, B, X}, states.dtype(), gpu);  // (T, B, 3U), step order
    Tensor drh_buffer = scratch(gpu, states.dtype(), !reset_after, Shape{B, U});  // d(r h_{s-1})
    T* drec = drec_buffer.data<T>();
    T* drh = reset_after ? nullptr : drh_buffer.data<T>();
    copy_state(gpu, carry, dfinal, r);
    for (std::int64_t s = r.time - 1; s >= 0; --s) {
      const T* hp = previous(h0, hs, s, r);
      const T* g = at_step(gates, s, r, G);
      const T* dh_out = at_step(dhs, s, r, U);
      T* ds = at_step(drec, s, r, X);
      T* dxs = at_step(dx, r.t(s), r, X);
      const StepRows<T> q = rows_at(r, mask, s);
      if (reset_after) {
        CUDA_CHECK(launch_gru_grad_step<T>(q, r.activation, r.recurrent_activation, dh_out, hp, g, carry, ds, dxs,
                                           gpu.stream()));
      } else {
        CUDA_CHECK(launch_gru_grad_update<T>(q, r.activation, r.recurrent_activation, dh_out, hp, g, carry, ds,
                                             gpu.stream()));
        gemm<T>(gpu, false, true, B, U, U, ds + 2 * U, X, kernel + 2 * U, X, T(0), drh, U);
        CUDA_CHECK(launch_gru_grad_reset<T>(q, r.recurrent_activation, hp, g, drh, carry, ds, dxs, gpu.stream()));
      }
      // carry += d_s · kernel^T over the columns that h_{s-1} itself multiplies.
      gemm<T>(gpu, false, true, B, U, reset_after ? X : 2 * U, ds, X, kernel, X, T(1), carry, U);
    }
    if (reset_after) {
      weight_grad<T>(gpu, r, h0, hs, drec, X, X, dkernel, X);
    } else {
      weight_grad<T>(gpu, r, h0, hs, drec, X, 2 * U, dkernel, X);
      // n's columns multiply r h_{s-1}, kept in the gates' fourth block: one GEMM over all steps.
      gemm<T>(gpu, true, false, U, U, static_cast<int>(r.time * B), gates + 3 * U, G, drec + 2 * U, X, T(0),
              dkernel + 2 * U, X);
    }
    CUDA_CHECK(launch_bias_add_grad<T>(drec, ctx.outputs[2].data<T>(), r.time * B, X, gpu.stream()));
  });
}

}  // namespace

void register_recurrent_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel(op_names::simple_rnn, cuda, simple_rnn_kernel);
  register_kernel(op_names::simple_rnn_grad, cuda, simple_rnn_grad_kernel);
  register_kernel(op_names::lstm, cuda, lstm_kernel);
  register_kernel(op_names::lstm_grad, cuda, lstm_grad_kernel);
  register_kernel(op_names::gru, cuda, gru_kernel);
  register_kernel(op_names::gru_grad, cuda, gru_grad_kernel);
}

}  // namespace tower::cuda
