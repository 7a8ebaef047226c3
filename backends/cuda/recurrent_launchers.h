// Launchers of the recurrent ops' per-step CUDA kernels (recurrent_kernels.cu): the fused gate update of
// one time step of SimpleRNN, LSTM and GRU, and its gate gradients, with the CPU's formulas
// (backends/cpu/recurrent_kernels.cpp). The GEMMs with the recurrent kernel between them are cuBLAS
// calls in recurrent_ops.cpp. Plain pointers only; each returns the launch status for CUDA_CHECK.
// Each step is (batch, units) threads, one per (row, unit); a row's gate blocks sit `units` apart.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "tower/core/gate_activation.h"

namespace tower::cuda {

// The rows of one step: row b updates its state ("kept") unless mask[b * time + t] == 0, where t is
// the time step s reads. mask (batch, time) or null (every row kept).
template <typename T>
struct StepRows {
  std::int64_t batch = 0, units = 0;
  const T* mask = nullptr;
  std::int64_t time = 0, t = 0;
};

// ---- forward ----------------------------------------------------------------------------------
// x: x_proj at time t (batch, k·units); h_prev, c_prev (batch, units): the state before the step.
// A masked row's state is copied from h_prev (c_prev) and its gates are zero.

// h (batch, units) holds h_prev · recurrent_kernel on entry; h = activation(x + h) for kept rows.
template <typename T>
cudaError_t launch_simple_rnn_step(StepRows<T> q, GateActivation activation, const T* x, const T* h_prev, T* h,
                                   cudaStream_t stream);

// gates (batch, 4U) holds h_prev · recurrent_kernel on entry; becomes i, f, g, o as activated, with
// c = f c_prev + i g and h = o activation(c).
template <typename T>
cudaError_t launch_lstm_step(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                             const T* x, const T* h_prev, const T* c_prev, T* gates, T* h, T* c, cudaStream_t stream);

// reset_after: product (batch, 3U) = h_prev · recurrent_kernel; bias (3U,) -> gates (batch, 4U): z,
// r, n and q_h = product_h + bias_h, and h = z h_prev + (1 - z) n.
template <typename T>
cudaError_t launch_gru_step(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                            const T* x, const T* product, const T* bias, const T* h_prev, T* gates, T* h,
                            cudaStream_t stream);
// Not reset_after, first half: product[:, :2U] = h_prev · recurrent_kernel[:, :2U] -> gates z, r and
// r h_prev (in the fourth block, for the second GEMM), for every row.
template <typename T>
cudaError_t launch_gru_reset_gates(StepRows<T> q, GateActivation recurrent_activation, const T* x, const T* product,
                                   const T* bias, const T* h_prev, T* gates, cudaStream_t stream);
// Second half: product[:, 2U:] = (r h_prev) · recurrent_kernel[:, 2U:] -> gates n, h (and the gates
// of masked rows zeroed).
template <typename T>
cudaError_t launch_gru_candidate(StepRows<T> q, GateActivation activation, const T* x, const T* product,
                                 const T* bias, const T* h_prev, T* gates, T* h, cudaStream_t stream);

// ---- backward ---------------------------------------------------------------------------------
// dh_out (batch, units): the step's output gradient; carry (batch, units): d(h_s) from the steps
// after s and the final state on entry; on return d(h_{s-1}) but for the GEMM term d ·
// recurrent_kernel^T added after (so 0 for kept rows, what passes through z for GRU, all of it for
// masked rows). d: the step's gate gradients (zero for masked rows); d_time (null or another
// buffer): a second copy of d, dx_proj at time t when d is a step-ordered scratch.

// d (batch, units) = (dh_out + carry) activation'(h).
template <typename T>
cudaError_t launch_simple_rnn_grad_step(StepRows<T> q, GateActivation activation, const T* dh_out, const T* h,
                                        T* carry, T* d, T* d_time, cudaStream_t stream);

// dc_carry likewise for c (f dc for kept rows); c_prev, c (batch, units); gates (batch, 4U) as the
// forward pass kept them; d (batch, 4U): d of the gates' inputs.
template <typename T>
cudaError_t launch_lstm_grad_step(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                                  const T* dh_out, const T* dc_out, const T* c_prev, const T* c, const T* gates,
                                  T* dh_carry, T* dc_carry, T* d, T* d_time, cudaStream_t stream);

// reset_after, the whole step: gates (batch, 4U) as the forward pass kept them -> d (batch, 3U) =
// dz, dr, d(q_h) (what the recurrent product feeds) and dx (batch, 3U) = dz, dr, d(n's input).
template <typename T>
cudaError_t launch_gru_grad_step(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                                 const T* dh_out, const T* h_prev, const T* gates, T* carry, T* d, T* dx,
                                 cudaStream_t stream);
// Not reset_after, first half: d[:, :U] = dz, d[:, 2U:] = d(n's input) (d[:, U:2U] zero for masked
// rows; the second half writes it for kept rows).
template <typename T>
cudaError_t launch_gru_grad_update(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                                   const T* dh_out, const T* h_prev, const T* gates, T* carry, T* d,
                                   cudaStream_t stream);
// Second half, after drh (batch, U) = d[:, 2U:] · recurrent_kernel[:, 2U:]^T = d(r h_prev): d[:, U:2U]
// = dr, carry += drh r, dx (batch, 3U) = dz, dr, d(n's input).
template <typename T>
cudaError_t launch_gru_grad_reset(StepRows<T> q, GateActivation recurrent_activation, const T* h_prev,
                                  const T* gates, const T* drh, T* carry, T* d, T* dx, cudaStream_t stream);

}  // namespace tower::cuda
