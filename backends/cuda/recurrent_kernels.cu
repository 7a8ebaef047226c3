// The CUDA kernels of the recurrent ops' time steps (recurrent_launchers.h): the fused gate update of
// SimpleRNN, LSTM and GRU and its gate gradients, one thread per (row, unit), with the formulas of
// backends/cpu/recurrent_kernels.cpp in the same order.
#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/recurrent_launchers.h"
#include "tower/core/gate_activation.h"

namespace tower::cuda {

namespace {

template <typename T>
__device__ inline bool kept(const StepRows<T>& q, std::int64_t b) {
  return q.mask == nullptr || q.mask[b * q.time + q.t] != T(0);
}

// p[at] = v, and copy[at] = v when there is a second buffer.
template <typename T>
__device__ inline void put(T* p, T* copy, std::int64_t at, T v) {
  p[at] = v;
  if (copy != nullptr) copy[at] = v;
}

// ---- forward ----------------------------------------------------------------------------------

template <typename T>
__global__ void simple_rnn_step_kernel(StepRows<T> q, GateActivation act, const T* x, const T* hp, T* h) {
  TOWER_GRID_STRIDE(e, q.batch * q.units) {
    h[e] = kept(q, e / q.units) ? gate_activate(act, x[e] + h[e]) : hp[e];
  }
}

template <typename T>
__global__ void lstm_step_kernel(StepRows<T> q, GateActivation act, GateActivation rec, const T* x, const T* hp,
                                 const T* cp, T* gates, T* h, T* c) {
  const std::int64_t U = q.units;
  TOWER_GRID_STRIDE(e, q.batch * U) {
    const std::int64_t b = e / U, j = e % U;
    T* g = gates + b * 4 * U + j;
    if (!kept(q, b)) {
      h[e] = hp[e];
      c[e] = cp[e];
      g[0] = g[U] = g[2 * U] = g[3 * U] = T(0);
      continue;
    }
    const T* xr = x + b * 4 * U + j;
    const T i = gate_activate(rec, xr[0] + g[0]), f = gate_activate(rec, xr[U] + g[U]);
    const T gg = gate_activate(act, xr[2 * U] + g[2 * U]), o = gate_activate(rec, xr[3 * U] + g[3 * U]);
    g[0] = i, g[U] = f, g[2 * U] = gg, g[3 * U] = o;
    const T cell = f * cp[e] + i * gg;
    c[e] = cell;
    h[e] = o * gate_activate(act, cell);
  }
}

template <typename T>
__global__ void gru_step_kernel(StepRows<T> q, GateActivation act, GateActivation rec, const T* x, const T* product,
                                const T* bias, const T* hp, T* gates, T* h) {
  const std::int64_t U = q.units;
  TOWER_GRID_STRIDE(e, q.batch * U) {
    const std::int64_t b = e / U, j = e % U;
    T* g = gates + b * 4 * U + j;
    if (!kept(q, b)) {
      h[e] = hp[e];
      g[0] = g[U] = g[2 * U] = g[3 * U] = T(0);
      continue;
    }
    const T* xr = x + b * 3 * U + j;
    const T* pr = product + b * 3 * U + j;
    const T z = gate_activate(rec, xr[0] + pr[0] + bias[j]);
    const T r = gate_activate(rec, xr[U] + pr[U] + bias[U + j]);
    const T qh = pr[2 * U] + bias[2 * U + j];
    const T n = gate_activate(act, xr[2 * U] + r * qh);
    g[0] = z, g[U] = r, g[2 * U] = n, g[3 * U] = qh;
    h[e] = z * hp[e] + (T(1) - z) * n;
  }
}

// Every row, masked ones too: the second GEMM reads r h_prev of all rows (the CPU's order).
template <typename T>
__global__ void gru_reset_gates_kernel(StepRows<T> q, GateActivation rec, const T* x, const T* product, const T* bias,
                                       const T* hp, T* gates) {
  const std::int64_t U = q.units;
  TOWER_GRID_STRIDE(e, q.batch * U) {
    const std::int64_t b = e / U, j = e % U;
    T* g = gates + b * 4 * U + j;
    const T* xr = x + b * 3 * U + j;
    const T* pr = product + b * 3 * U + j;
    g[0] = gate_activate(rec, xr[0] + pr[0] + bias[j]);
    const T r = gate_activate(rec, xr[U] + pr[U] + bias[U + j]);
    g[U] = r;
    g[3 * U] = r * hp[e];
  }
}

template <typename T>
__global__ void gru_candidate_kernel(StepRows<T> q, GateActivation act, const T* x, const T* product, const T* bias,
                                     const T* hp, T* gates, T* h) {
  const std::int64_t U = q.units;
  TOWER_GRID_STRIDE(e, q.batch * U) {
    const std::int64_t b = e / U, j = e % U;
    T* g = gates + b * 4 * U + j;
    if (!kept(q, b)) {
      h[e] = hp[e];
      g[0] = g[U] = g[2 * U] = g[3 * U] = T(0);
      continue;
    }
    const T z = g[0];
    const T n = gate_activate(act, x[b * 3 * U + 2 * U + j] + product[b * 3 * U + 2 * U + j] + bias[2 * U + j]);
    g[2 * U] = n;
    h[e] = z * hp[e] + (T(1) - z) * n;
  }
}

// ---- backward ---------------------------------------------------------------------------------

template <typename T>
__global__ void simple_rnn_grad_step_kernel(StepRows<T> q, GateActivation act, const T* dh_out, const T* h, T* carry,
                                            T* d, T* d_time) {
  TOWER_GRID_STRIDE(e, q.batch * q.units) {
    const bool k = kept(q, e / q.units);
    const T dh = dh_out[e] + carry[e];
    put(d, d_time, e, k ? dh * gate_derivative(act, h[e]) : T(0));
    carry[e] = k ? T(0) : dh;  // a masked step passes its gradient straight to h_{s-1}
  }
}

template <typename T>
__global__ void lstm_grad_step_kernel(StepRows<T> q, GateActivation act, GateActivation rec, const T* dh_out,
                                      const T* dc_out, const T* cp, const T* c, const T* gates, T* dh_carry,
                                      T* dc_carry, T* d, T* d_time) {
  const std::int64_t U = q.units;
  TOWER_GRID_STRIDE(e, q.batch * U) {
    const std::int64_t b = e / U, j = e % U;
    const std::int64_t at = b * 4 * U + j;
    const T dh = dh_out[e] + dh_carry[e];
    T dc = dc_out[e] + dc_carry[e];
    if (!kept(q, b)) {
      dh_carry[e] = dh, dc_carry[e] = dc;
      for (int k = 0; k < 4; ++k) put(d, d_time, at + k * U, T(0));
      continue;
    }
    const T* g = gates + at;
    const T i = g[0], f = g[U], gg = g[2 * U], o = g[3 * U];
    const T tc = gate_activate(act, c[e]);
    dc += dh * o * gate_derivative(act, tc);
    put(d, d_time, at, dc * gg * gate_derivative(rec, i));
    put(d, d_time, at + U, dc * cp[e] * gate_derivative(rec, f));
    put(d, d_time, at + 2 * U, dc * i * gate_derivative(act, gg));
    put(d, d_time, at + 3 * U, dh * tc * gate_derivative(rec, o));
    dh_carry[e] = T(0);
    dc_carry[e] = dc * f;
  }
}

// reset_after: both of the CPU's passes in one (nothing between them needs other rows' values).
template <typename T>
__global__ void gru_grad_step_kernel(StepRows<T> q, GateActivation act, GateActivation rec, const T* dh_out,
                                     const T* hp, const T* gates, T* carry, T* d, T* dx) {
  const std::int64_t U = q.units;
  TOWER_GRID_STRIDE(e, q.batch * U) {
    const std::int64_t b = e / U, j = e % U;
    T* dr = d + b * 3 * U + j;
    T* dxr = dx + b * 3 * U + j;
    const T dh = dh_out[e] + carry[e];
    if (!kept(q, b)) {
      carry[e] = dh;
      dr[0] = dr[U] = dr[2 * U] = T(0);
      dxr[0] = dxr[U] = dxr[2 * U] = T(0);
      continue;
    }
    const T* g = gates + b * 4 * U + j;
    const T z = g[0], r = g[U], n = g[2 * U], qh = g[3 * U];
    const T dz = dh * (hp[e] - n) * gate_derivative(rec, z);
    const T dn_in = dh * (T(1) - z) * gate_derivative(act, n);
    const T dr_in = dn_in * qh * gate_derivative(rec, r);
    carry[e] = dh * z;
    dr[0] = dz, dr[U] = dr_in, dr[2 * U] = dn_in * r;
    dxr[0] = dz, dxr[U] = dr_in, dxr[2 * U] = dn_in;
  }
}

template <typename T>
__global__ void gru_grad_update_kernel(StepRows<T> q, GateActivation act, GateActivation rec, const T* dh_out,
                                       const T* hp, const T* gates, T* carry, T* d) {
  const std::int64_t U = q.units;
  TOWER_GRID_STRIDE(e, q.batch * U) {
    const std::int64_t b = e / U, j = e % U;
    T* dr = d + b * 3 * U + j;
    const T dh = dh_out[e] + carry[e];
    if (!kept(q, b)) {
      carry[e] = dh;
      dr[0] = dr[U] = dr[2 * U] = T(0);
      continue;
    }
    const T* g = gates + b * 4 * U + j;
    const T z = g[0], n = g[2 * U];
    dr[0] = dh * (hp[e] - n) * gate_derivative(rec, z);
    dr[2 * U] = dh * (T(1) - z) * gate_derivative(act, n);  // d(n's input)
    carry[e] = dh * z;
  }
}

template <typename T>
__global__ void gru_grad_reset_kernel(StepRows<T> q, GateActivation rec, const T* hp, const T* gates, const T* drh,
                                      T* carry, T* d, T* dx) {
  const std::int64_t U = q.units;
  TOWER_GRID_STRIDE(e, q.batch * U) {
    const std::int64_t b = e / U, j = e % U;
    T* dr = d + b * 3 * U + j;
    T* dxr = dx + b * 3 * U + j;
    if (kept(q, b)) {
      const T r = gates[b * 4 * U + U + j];
      dr[U] = drh[e] * hp[e] * gate_derivative(rec, r);
      carry[e] += drh[e] * r;
    }
    dxr[0] = dr[0], dxr[U] = dr[U], dxr[2 * U] = dr[2 * U];
  }
}

// Sizes a launcher refuses, and the thread count of a step.
template <typename T>
bool invalid(const StepRows<T>& q) {
  return q.batch < 0 || q.units < 0 || (q.mask != nullptr && (q.t < 0 || q.t >= q.time));
}

template <typename T>
std::int64_t threads_of(const StepRows<T>& q) {
  return q.batch * q.units;
}

// Launches `kernel` with one thread per (row, unit) of step q, after checking q: the launchers' common part.
template <typename T, typename Kernel, typename... Args>
cudaError_t launch_rows(const StepRows<T>& q, cudaStream_t stream, Kernel kernel, Args... args) {
  if (invalid(q)) return cudaErrorInvalidValue;
  const std::int64_t n = threads_of(q);
  if (n == 0) return cudaSuccess;
  kernel<<<blocks_for(n), kThreads, 0, stream>>>(q, args...);
  return cudaGetLastError();
}

}  // namespace

// ---- launchers ----------------------------------------------------------------------------------

template <typename T>
cudaError_t launch_simple_rnn_step(StepRows<T> q, GateActivation activation, const T* x, const T* h_prev, T* h,
                                   cudaStream_t stream) {
  return launch_rows(q, stream, simple_rnn_step_kernel<T>, activation, x, h_prev, h);
}

template <typename T>
cudaError_t launch_lstm_step(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                             const T* x, const T* h_prev, const T* c_prev, T* gates, T* h, T* c, cudaStream_t stream) {
  return launch_rows(q, stream, lstm_step_kernel<T>, activation, recurrent_activation, x, h_prev, c_prev, gates, h, c);
}

template <typename T>
cudaError_t launch_gru_step(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                            const T* x, const T* product, const T* bias, const T* h_prev, T* gates, T* h,
                            cudaStream_t stream) {
  return launch_rows(q, stream, gru_step_kernel<T>, activation, recurrent_activation, x, product, bias, h_prev, gates,
                     h);
}

template <typename T>
cudaError_t launch_gru_reset_gates(StepRows<T> q, GateActivation recurrent_activation, const T* x, const T* product,
                                   const T* bias, const T* h_prev, T* gates, cudaStream_t stream) {
  return launch_rows(q, stream, gru_reset_gates_kernel<T>, recurrent_activation, x, product, bias, h_prev, gates);
}

template <typename T>
cudaError_t launch_gru_candidate(StepRows<T> q, GateActivation activation, const T* x, const T* product,
                                 const T* bias, const T* h_prev, T* gates, T* h, cudaStream_t stream) {
  return launch_rows(q, stream, gru_candidate_kernel<T>, activation, x, product, bias, h_prev, gates, h);
}

template <typename T>
cudaError_t launch_simple_rnn_grad_step(StepRows<T> q, GateActivation activation, const T* dh_out, const T* h,
                                        T* carry, T* d, T* d_time, cudaStream_t stream) {
  return launch_rows(q, stream, simple_rnn_grad_step_kernel<T>, activation, dh_out, h, carry, d, d_time);
}

template <typename T>
cudaError_t launch_lstm_grad_step(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                                  const T* dh_out, const T* dc_out, const T* c_prev, const T* c, const T* gates,
                                  T* dh_carry, T* dc_carry, T* d, T* d_time, cudaStream_t stream) {
  return launch_rows(q, stream, lstm_grad_step_kernel<T>, activation, recurrent_activation, dh_out, dc_out, c_prev, c,
                     gates, dh_carry, dc_carry, d, d_time);
}

template <typename T>
cudaError_t launch_gru_grad_step(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                                 const T* dh_out, const T* h_prev, const T* gates, T* carry, T* d, T* dx,
                                 cudaStream_t stream) {
  return launch_rows(q, stream, gru_grad_step_kernel<T>, activation, recurrent_activation, dh_out, h_prev, gates, carry,
                     d, dx);
}

template <typename T>
cudaError_t launch_gru_grad_update(StepRows<T> q, GateActivation activation, GateActivation recurrent_activation,
                                   const T* dh_out, const T* h_prev, const T* gates, T* carry, T* d,
                                   cudaStream_t stream) {
  return launch_rows(q, stream, gru_grad_update_kernel<T>, activation, recurrent_activation, dh_out, h_prev, gates,
                     carry, d);
}

template <typename T>
cudaError_t launch_gru_grad_reset(StepRows<T> q, GateActivation recurrent_activation, const T* h_prev,
                                  const T* gates, const T* drh, T* carry, T* d, T* dx, cudaStream_t stream) {
  return launch_rows(q, stream, gru_grad_reset_kernel<T>, recurrent_activation, h_prev, gates, drh, carry, d, dx);
}

#define TOWER_INSTANTIATE(T)                                                                                         \
  template cudaError_t launch_simple_rnn_step<T>(StepRows<T>, GateActivation, const T*, const T*, T*, cudaStream_t); \
  template cudaError_t launch_lstm_step<T>(StepRows<T>, GateActivation, GateActivation, const T*, const T*,          \
                                           const T*, T*, T*, T*, cudaStream_t);                                      \
  template cudaError_t launch_gru_step<T>(StepRows<T>, GateActivation, GateActivation, const T*, const T*,           \
                                          const T*, const T*, T*, T*, cudaStream_t);                                 \
  template cudaError_t launch_gru_reset_gates<T>(StepRows<T>, GateActivation, const T*, const T*, const T*,          \
                                                 const T*, T*, cudaStream_t);                                        \
  template cudaError_t launch_gru_candidate<T>(StepRows<T>, GateActivation, const T*, const T*, const T*, const T*, \
                                               T*, T*, cudaStream_t);                                                \
  template cudaError_t launch_simple_rnn_grad_step<T>(StepRows<T>, GateActivation, const T*, const T*, T*, T*, T*,  \
                                                      cudaStream_t);                                                 \
  template cudaError_t launch_lstm_grad_step<T>(StepRows<T>, GateActivation, GateActivation, const T*, const T*,    \
                                                const T*, const T*, const T*, T*, T*, T*, T*, cudaStream_t);         \
  template cudaError_t launch_gru_grad_step<T>(StepRows<T>, GateActivation, GateActivation, const T*, const T*,     \
                                               const T*, T*, T*, T*, cudaStream_t);                                  \
  template cudaError_t launch_gru_grad_update<T>(StepRows<T>, GateActivation, GateActivation, const T*, const T*,   \
                                                 const T*, T*, T*, cudaStream_t);                                    \
  template cudaError_t launch_gru_grad_reset<T>(StepRows<T>, GateActivation, const T*, const T*, const T*, T*, T*,  \
                                                T*, cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
