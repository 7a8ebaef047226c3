// CPU kernels of the recurrent ops (core/ops.h, "recurrent cells"): SimpleRNN, LSTM and GRU over a
// whole time-major sequence, forward and backward. A batch row's state depends on nothing but its
// own row, so the pool's threads each take a block of rows and run every step for it (a GEMM with
// the recurrent kernel, then the gate update) with no barrier between steps. The backward pass runs
// the steps in reverse the same way; the weights' gradients are then GEMMs over all steps at once.
#include <algorithm>
#include <vector>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/vector_math.h"
#include "tower/core/checked.h"
#include "tower/core/gate_activation.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// One run's sizes, step order and mask. Step s reads time t(s); kept(b, s): row b's step s updates
// its state (no mask, or a nonzero mask entry).
template <typename T>
struct Steps {
  std::int64_t time, batch, units;
  bool backwards;
  const T* mask;  // (batch, time) or null
  GateActivation activation, recurrent_activation;

  std::int64_t t(std::int64_t s) const { return backwards ? time - 1 - s : s; }
  bool kept(std::int64_t b, std::int64_t s) const { return mask == nullptr || mask[b * time + t(s)] != T(0); }
  T act_grad(T y) const { return gate_derivative(activation, y); }
};

// `mask_input`: the index the optional mask would have.
template <typename T>
Steps<T> steps_of(const KernelContext& ctx, const Tensor& sequence, std::int64_t units, std::size_t mask_input) {
  const Attrs& attrs = ctx.attrs();
  for (std::int64_t size : {sequence.shape()[0] * sequence.shape()[1], 4 * units})
    (void)checked_int(size, "a recurrent op on the CPU: time·batch and 4·units", "OpenBLAS takes at most 2147483647");
  return {.time = sequence.shape()[0],
          .batch = sequence.shape()[1],
          .units = units,
          .backwards = attrs.get_bool("go_backwards"),
          .mask = ctx.inputs.size() > mask_input ? ctx.inputs[mask_input].data<T>() : nullptr,
          .activation = gate_activation_named(attrs.get_string("activation")),
          .recurrent_activation = gate_activation_named(attrs.get_string("recurrent_activation"))};
}

// Runs fn(b0, b1) over blocks of batch rows on the pool (at least 8 rows a block).
template <typename F>
void for_row_blocks(KernelContext& ctx, std::int64_t batch, F&& fn) {
  parallel_for(ctx, batch, 8, fn);
}

int as_int(std::int64_t v) { return static_cast<int>(v); }

// Row block b0..b1 of step s's (batch, width) slice of a time-major (steps, batch, width) buffer.
template <typename P>
P at_step(P base, std::int64_t s, std::int64_t b0, std::int64_t batch, std::int64_t width) {
  return base + (s * batch + b0) * width;
}

// The state before step s, rows from b0: h0 (or c0) at s = 0, else the states of step s - 1.
template <typename T>
const T* previous(const T* initial, const T* states, std::int64_t s, std::int64_t b0, const Steps<T>& q) {
  return s == 0 ? initial + b0 * q.units : at_step(states, s - 1, b0, q.batch, q.units);
}

// The final state of rows b0..b1 (after the last step; the initial state when there are no steps).
template <typename T>
void copy_final(const T* initial, const T* states, std::int64_t b0, std::int64_t b1, const Steps<T>& q,
                T* final_state) {
  std::copy_n(previous(initial, states, q.time, b0, q), (b1 - b0) * q.units, final_state + b0 * q.units);
}

// dw (k, n) = sum over steps of prev_s^T (batch, k) · d_s (batch, n), where prev_0 = initial and
// prev_s = states[s - 1]: two GEMMs over contiguous steps (initial with step 0, states[0..T-2] with
// steps 1..T-1), split over dw's columns, so that each thread packs its own columns of d (the larger
// operand: time·batch rows of 4U) rather than all of them. d_s rows sit `ldd` apart; prev rows `ldp` apart.
template <typename T>
void weight_grad(KernelContext& ctx, const T* initial, const T* states, std::int64_t ldp, const T* d, std::int64_t ldd,
                 std::int64_t time, std::int64_t batch, std::int64_t k, std::int64_t n, T* dw, std::int64_t lddw) {
  if (time == 0) {  // no steps: no gradient (and no step 0 to read)
    for (std::int64_t r = 0; r < k; ++r) std::fill_n(dw + r * lddw, n, T(0));
    return;
  }
  parallel_for(ctx, n, 16, [&](std::int64_t c0, std::int64_t c1) {
    const int cols = as_int(c1 - c0);
    gemm(true, false, as_int(k), cols, as_int(batch), initial, as_int(ldp), d + c0, as_int(ldd), dw + c0, as_int(lddw));
    if (time > 1)
      gemm(true, false, as_int(k), cols, as_int((time - 1) * batch), states, as_int(ldp), d + batch * ldd + c0,
           as_int(ldd), dw + c0, as_int(lddw), T(1));
  });
}

// The gate updates of one batch row (each cell's arithmetic outside the GEMMs, most of it exp and tanh)
// are compiled for baseline x86-64, AVX2+FMA and AVX-512 (TOWER_CPU_CLONES, backends/cpu/vector_math.h).
// Their pointers never overlap (__restrict lets GCC vectorize without checking).

// SimpleRNN: h = activation(h) for one row, h holding x_proj + h_{s-1} · kernel.
template <typename T>
TOWER_CPU_CLONES void simple_rnn_row(const Steps<T>& q, T* __restrict h) {
  gate_activate_all(q.activation, h, q.units);
}

// LSTM, one row of step s: gr (4U) holds the gates' inputs i, f, c, o and gets the activated gates;
// then c = f c_prev + i g and h = o activation(c). `tanh_c`: U floats of scratch.
template <typename T>
TOWER_CPU_CLONES void lstm_row(const Steps<T>& q, T* __restrict gr, const T* __restrict cp, T* __restrict c,
                               T* __restrict h, T* __restrict tanh_c) {
  const std::int64_t U = q.units;
  gate_activate_all(q.recurrent_activation, gr, 2 * U);      // i, f
  gate_activate_all(q.activation, gr + 2 * U, U);            // g
  gate_activate_all(q.recurrent_activation, gr + 3 * U, U);  // o
  for (std::int64_t j = 0; j < U; ++j) tanh_c[j] = c[j] = gr[U + j] * cp[j] + gr[j] * gr[2 * U + j];
  gate_activate_all(q.activation, tanh_c, U);
  for (std::int64_t j = 0; j < U; ++j) h[j] = gr[3 * U + j] * tanh_c[j];
}

// LSTM backward, one kept row of step s: with dh = dh_out + dh_carry and dc = dc_out + dc_carry (the
// gradients reaching h_s and c_s), dr (4U) gets d of the gates' inputs, dh_carry 0 (h_{s-1}'s share
// comes from the GEMM after) and dc_carry d(c_{s-1}). `scratch`: 6U floats.
template <typename T>
TOWER_CPU_CLONES void lstm_grad_row(const Steps<T>& q, const T* __restrict gr, const T* __restrict c,
                                    const T* __restrict cp, const T* __restrict dh_out, const T* __restrict dc_out,
                                    T* __restrict dh_carry, T* __restrict dc_carry, T* __restrict dr,
                                    T* __restrict scratch) {
  const std::int64_t U = q.units;
  T* tc = scratch;             // activation(c)
  T* dtc = scratch + U;        // its derivative
  T* dgate = scratch + 2 * U;  // the gates' derivatives, i, f, c, o
  std::copy_n(c, U, tc);
  gate_activate_all(q.activation, tc, U);
  gate_derivative_all(q.activation, tc, dtc, U);
  gate_derivative_all(q.recurrent_activation, gr, dgate, 2 * U);
  gate_derivative_all(q.activation, gr + 2 * U, dgate + 2 * U, U);
  gate_derivative_all(q.recurrent_activation, gr + 3 * U, dgate + 3 * U, U);
  for (std::int64_t j = 0; j < U; ++j) {
    const T i = gr[j], f = gr[U + j], g = gr[2 * U + j], o = gr[3 * U + j];
    const T dh = dh_out[j] + dh_carry[j];
    const T dc = dc_out[j] + dc_carry[j] + dh * o * dtc[j];
    dr[j] = dc * g * dgate[j];
    dr[U + j] = dc * cp[j] * dgate[U + j];
    dr[2 * U + j] = dc * i * dgate[2 * U + j];
    dr[3 * U + j] = dh * tc[j] * dgate[3 * U + j];
    dh_carry[j] = T(0);
    dc_carry[j] = dc * f;
  }
}

// GRU, one row of step s, before n: gr's z and r (activated) from x_proj's xr, the recurrent product
// qr and the recurrent bias; gr's fourth slot q_h = qr_h + bias_h (reset_after) or r h_{s-1}.
template <typename T>
TOWER_CPU_CLONES void gru_gates_row(const Steps<T>& q, bool reset_after, T* __restrict gr, const T* __restrict xr,
                                    const T* __restrict qr, const T* __restrict bias, const T* __restrict hp) {
  const std::int64_t U = q.units;
  for (std::int64_t j = 0; j < 2 * U; ++j) gr[j] = xr[j] + qr[j] + bias[j];
  gate_activate_all(q.recurrent_activation, gr, 2 * U);
  if (reset_after)
    for (std::int64_t j = 0; j < U; ++j) gr[3 * U + j] = qr[2 * U + j] + bias[2 * U + j];
  else
    for (std::int64_t j = 0; j < U; ++j) gr[3 * U + j] = gr[U + j] * hp[j];
}

// GRU, the rest of the row: n = activation(x_h + r q_h) (reset_after) or activation(x_h + (r h) ·
// kernel_h + bias_h), in gr's third slot, and h = z h_{s-1} + (1 - z) n.
template <typename T>
TOWER_CPU_CLONES void gru_state_row(const Steps<T>& q, bool reset_after, T* __restrict gr, const T* __restrict xr,
                                    const T* __restrict qr, const T* __restrict bias, const T* __restrict hp,
                                    T* __restrict h) {
  const std::int64_t U = q.units;
  if (reset_after)
    for (std::int64_t j = 0; j < U; ++j) gr[2 * U + j] = xr[2 * U + j] + gr[U + j] * gr[3 * U + j];
  else
    for (std::int64_t j = 0; j < U; ++j) gr[2 * U + j] = xr[2 * U + j] + qr[2 * U + j] + bias[2 * U + j];
  gate_activate_all(q.activation, gr + 2 * U, U);
  for (std::int64_t j = 0; j < U; ++j) h[j] = gr[j] * hp[j] + (T(1) - gr[j]) * gr[2 * U + j];
}

// GRU backward, pass 1 on one kept row: with dh = dh_out + carry, dr's z column gets dz, its n column
// d(n's input) (for now), and carry d(h_{s-1}) through z alone. `scratch`: 2U floats.
template <typename T>
TOWER_CPU_CLONES void gru_grad_row1(const Steps<T>& q, const T* __restrict gr, const T* __restrict hp,
                                    const T* __restrict dh_out, T* __restrict carry, T* __restrict dr,
                                    T* __restrict scratch) {
  const std::int64_t U = q.units;
  gate_derivative_all(q.recurrent_activation, gr, scratch, U);    // z'
  gate_derivative_all(q.activation, gr + 2 * U, scratch + U, U);  // n'
  for (std::int64_t j = 0; j < U; ++j) {
    const T dh = dh_out[j] + carry[j], z = gr[j], n = gr[2 * U + j];
    dr[j] = dh * (hp[j] - n) * scratch[j];
    dr[2 * U + j] = dh * (T(1) - z) * scratch[U + j];
    carry[j] = dh * z;
  }
}

// GRU backward, pass 2 on one kept row: dr's r column; with reset_after its n column becomes d(q_h),
// otherwise carry gets r's share of d(r h_{s-1}) (drh). dxr (3U) gets d(x_proj). `scratch`: U floats.
template <typename T>
TOWER_CPU_CLONES void gru_grad_row2(const Steps<T>& q, bool reset_after, const T* __restrict gr, const T* __restrict hp,
                                    const T* __restrict drh, T* __restrict carry, T* __restrict dr, T* __restrict dxr,
                                    T* __restrict scratch) {
  const std::int64_t U = q.units;
  gate_derivative_all(q.recurrent_activation, gr + U, scratch, U);  // r'
  for (std::int64_t j = 0; j < U; ++j) {
    const T rg = gr[U + j], dn_in = dr[2 * U + j];
    if (reset_after) {
      dr[U + j] = dn_in * gr[3 * U + j] * scratch[j];
      dr[2 * U + j] = dn_in * rg;
    } else {
      dr[U + j] = drh[j] * hp[j] * scratch[j];
      carry[j] += drh[j] * rg;
    }
    dxr[j] = dr[j], dxr[U + j] = dr[U + j], dxr[2 * U + j] = dn_in;
  }
}

// Copies step-ordered (steps, batch, width) rows into time order (dx_proj) when the run went backwards.
template <typename T>
void to_time_order(const T* by_step, T* dx, const Steps<T>& q, std::int64_t width) {
  const std::int64_t block = q.batch * width;
  for (std::int64_t s = 0; s < q.time; ++s) std::copy_n(by_step + s * block, block, dx + q.t(s) * block);
}

// ---- SimpleRNN ----------------------------------------------------------------------------------

// (x_proj, recurrent_kernel, h0[, mask]) -> {states, final h}.
void simple_rnn_kernel(KernelContext& ctx) {
  dispatch_floating(ctx.inputs[0].dtype(), op_names::simple_rnn, [&]<typename T>() {
    const Tensor& x = ctx.inputs[0];
    const Steps<T> q = steps_of<T>(ctx, x, ctx.inputs[1].shape()[0], 3);
    const std::int64_t U = q.units;
    const T* px = x.data<T>();
    const T* kernel = ctx.inputs[1].data<T>();
    const T* h0 = ctx.inputs[2].data<T>();
    T* hs = ctx.outputs[0].data<T>();
    for_row_blocks(ctx, q.batch, [&](std::int64_t b0, std::int64_t b1) {
      const std::int64_t nb = b1 - b0;
      for (std::int64_t s = 0; s < q.time; ++s) {
        const T* hp = previous(h0, hs, s, b0, q);
        T* h = at_step(hs, s, b0, q.batch, U);
        std::copy_n(at_step(px, q.t(s), b0, q.batch, U), nb * U, h);
        gemm(false, false, as_int(nb), as_int(U), as_int(U), hp, as_int(U), kernel, as_int(U), h, as_int(U), T(1));
        for (std::int64_t r = 0; r < nb; ++r) {
          if (q.kept(b0 + r, s))
            simple_rnn_row(q, h + r * U);
          else
            std::copy_n(hp + r * U, U, h + r * U);
        }
      }
      copy_final(h0, hs, b0, b1, q, ctx.outputs[1].data<T>());
    });
  });
}

// (d_states, d_final, recurrent_kernel, h0, states[, mask]) -> {dx_proj, drecurrent_kernel, dh0}.
void simple_rnn_grad_kernel(KernelContext& ctx) {
  dispatch_floating(ctx.inputs[0].dtype(), op_names::simple_rnn_grad, [&]<typename T>() {
    const Tensor& states = ctx.inputs[4];
    const Steps<T> q = steps_of<T>(ctx, states, ctx.inputs[2].shape()[0], 5);
    const std::int64_t U = q.units;
    const T* dstates = ctx.inputs[0].data<T>();
    const T* dfinal = ctx.inputs[1].data<T>();
    const T* kernel = ctx.inputs[2].data<T>();
    const T* h0 = ctx.inputs[3].data<T>();
    const T* hs = states.data<T>();
    T* dx = ctx.outputs[0].data<T>();
    std::vector<T> by_step(q.backwards ? static_cast<std::size_t>(q.time * q.batch * U) : 0);
    T* dpre = q.backwards ? by_step.data() : dx;  // (steps, batch, U): d(x_proj[t(s)] + h_{s-1} · kernel)
    T* dh0 = ctx.outputs[2].data<T>();
    for_row_blocks(ctx, q.batch, [&](std::int64_t b0, std::int64_t b1) {
      const std::int64_t nb = b1 - b0;
      T* carry = dh0 + b0 * U;  // d(h_s) from the steps after s (and the final state); dh0 at the end
      std::copy_n(dfinal + b0 * U, nb * U, carry);
      for (std::int64_t s = q.time - 1; s >= 0; --s) {
        const T* h = at_step(hs, s, b0, q.batch, U);
        const T* dh_out = at_step(dstates, s, b0, q.batch, U);
        T* dp = at_step(dpre, s, b0, q.batch, U);
        for (std::int64_t r = 0; r < nb; ++r) {
          const bool kept = q.kept(b0 + r, s);
          for (std::int64_t j = 0; j < U; ++j) {
            const std::int64_t e = r * U + j;
            const T dh = dh_out[e] + carry[e];
            dp[e] = kept ? dh * q.act_grad(h[e]) : T(0);
            carry[e] = kept ? T(0) : dh;  // a masked step passes its gradient straight to h_{s-1}
          }
        }
        gemm(false, true, as_int(nb), as_int(U), as_int(U), dp, as_int(U), kernel, as_int(U), carry, as_int(U), T(1));
      }
    });
    weight_grad<T>(ctx, h0, hs, U, dpre, U, q.time, q.batch, U, U, ctx.outputs[1].data<T>(), U);
    if (q.backwards) to_time_order<T>(dpre, dx, q, U);
  });
}

// ---- LSTM ---------------------------------------------------------------------------------------

// (x_proj, recurrent_kernel, h0, c0[, mask]) -> {h states, c states, gates, final h, final c}.
void lstm_kernel(KernelContext& ctx) {
  dispatch_floating(ctx.inputs[0].dtype(), op_names::lstm, [&]<typename T>() {
    const Tensor& x = ctx.inputs[0];
    const Steps<T> q = steps_of<T>(ctx, x, ctx.inputs[1].shape()[0], 4);
    const std::int64_t U = q.units, G = 4 * U;
    const T* px = x.data<T>();
    const T* kernel = ctx.inputs[1].data<T>();
    const T* h0 = ctx.inputs[2].data<T>();
    const T* c0 = ctx.inputs[3].data<T>();
    T* hs = ctx.outputs[0].data<T>();
    T* cs = ctx.outputs[1].data<T>();
    T* gates = ctx.outputs[2].data<T>();
    for_row_blocks(ctx, q.batch, [&](std::int64_t b0, std::int64_t b1) {
      const std::int64_t nb = b1 - b0;
      std::vector<T> row(static_cast<std::size_t>(U));  // activation(c) of one row
      for (std::int64_t s = 0; s < q.time; ++s) {
        const T* hp = previous(h0, hs, s, b0, q);
        const T* cp = previous(c0, cs, s, b0, q);
        T* g = at_step(gates, s, b0, q.batch, G);
        T* h = at_step(hs, s, b0, q.batch, U);
        T* c = at_step(cs, s, b0, q.batch, U);
        std::copy_n(at_step(px, q.t(s), b0, q.batch, G), nb * G, g);
        gemm(false, false, as_int(nb), as_int(G), as_int(U), hp, as_int(U), kernel, as_int(G), g, as_int(G), T(1));
        for (std::int64_t r = 0; r < nb; ++r) {
          T* gr = g + r * G;
          if (!q.kept(b0 + r, s)) {
            std::copy_n(hp + r * U, U, h + r * U);
            std::copy_n(cp + r * U, U, c + r * U);
            std::fill_n(gr, G, T(0));
            continue;
          }
          lstm_row(q, gr, cp + r * U, c + r * U, h + r * U, row.data());
        }
      }
      copy_final(h0, hs, b0, b1, q, ctx.outputs[3].data<T>());
      copy_final(c0, cs, b0, b1, q, ctx.outputs[4].data<T>());
    });
  });
}

// (d_h, d_c, d_final_h, d_final_c, recurrent_kernel, h0, c0, h states, c states, gates[, mask])
// -> {dx_proj, drecurrent_kernel, dh0, dc0}.
void lstm_grad_kernel(KernelContext& ctx) {
  dispatch_floating(ctx.inputs[0].dtype(), op_names::lstm_grad, [&]<typename T>() {
    const Tensor& hs_t = ctx.inputs[7];
    const Steps<T> q = steps_of<T>(ctx, hs_t, ctx.inputs[4].shape()[0], 10);
    const std::int64_t U = q.units, G = 4 * U;
    const T* dhs = ctx.inputs[0].data<T>();
    const T* dcs = ctx.inputs[1].data<T>();
    const T* dfinal_h = ctx.inputs[2].data<T>();
    const T* dfinal_c = ctx.inputs[3].data<T>();
    const T* kernel = ctx.inputs[4].data<T>();
    const T* h0 = ctx.inputs[5].data<T>();
    const T* c0 = ctx.inputs[6].data<T>();
    const T* hs = hs_t.data<T>();
    const T* cs = ctx.inputs[8].data<T>();
    const T* gates = ctx.inputs[9].data<T>();
    T* dx = ctx.outputs[0].data<T>();
    std::vector<T> by_step(q.backwards ? static_cast<std::size_t>(q.time * q.batch * G) : 0);
    T* dg = q.backwards ? by_step.data() : dx;  // (steps, batch, 4U): d of the gates' inputs
    T* dh0 = ctx.outputs[2].data<T>();
    T* dc0 = ctx.outputs[3].data<T>();
    for_row_blocks(ctx, q.batch, [&](std::int64_t b0, std::int64_t b1) {
      const std::int64_t nb = b1 - b0;
      std::vector<T> scratch(static_cast<std::size_t>(6 * U));  // lstm_grad_row's
      T* dh_carry = dh0 + b0 * U;  // d(h_s) and d(c_s) from the steps after s and the final state
      T* dc_carry = dc0 + b0 * U;
      std::copy_n(dfinal_h + b0 * U, nb * U, dh_carry);
      std::copy_n(dfinal_c + b0 * U, nb * U, dc_carry);
      for (std::int64_t s = q.time - 1; s >= 0; --s) {
        const T* cp = previous(c0, cs, s, b0, q);
        const T* c = at_step(cs, s, b0, q.batch, U);
        const T* g = at_step(gates, s, b0, q.batch, G);
        const T* dh_out = at_step(dhs, s, b0, q.batch, U);
        const T* dc_out = at_step(dcs, s, b0, q.batch, U);
        T* d = at_step(dg, s, b0, q.batch, G);
        for (std::int64_t r = 0; r < nb; ++r) {
          const std::int64_t e = r * U;
          if (q.kept(b0 + r, s)) {
            lstm_grad_row(q, g + r * G, c + e, cp + e, dh_out + e, dc_out + e, dh_carry + e, dc_carry + e, d + r * G,
                          scratch.data());
            continue;
          }
          for (std::int64_t j = 0; j < U; ++j) dh_carry[e + j] += dh_out[e + j], dc_carry[e + j] += dc_out[e + j];
          std::fill_n(d + r * G, G, T(0));  // a masked step passes its gradients straight to h_{s-1}, c_{s-1}
        }
        gemm(false, true, as_int(nb), as_int(U), as_int(G), d, as_int(G), kernel, as_int(G), dh_carry, as_int(U), T(1));
      }
    });
    weight_grad<T>(ctx, h0, hs, U, dg, G, q.time, q.batch, U, G, ctx.outputs[1].data<T>(), G);
    if (q.backwards) to_time_order<T>(dg, dx, q, G);
  });
}

// ---- GRU ----------------------------------------------------------------------------------------

// (x_proj, recurrent_kernel, recurrent_bias, h0[, mask]) -> {states, gates: z, r, n, q_h or r h_{s-1}, final h}.
void gru_kernel(KernelContext& ctx) {
  dispatch_floating(ctx.inputs[0].dtype(), op_names::gru, [&]<typename T>() {
    const Tensor& x = ctx.inputs[0];
    const Steps<T> q = steps_of<T>(ctx, x, ctx.inputs[1].shape()[0], 4);
    const bool reset_after = ctx.attrs().get_bool("reset_after");
    const std::int64_t U = q.units, X = 3 * U, G = 4 * U;
    const T* px = x.data<T>();
    const T* kernel = ctx.inputs[1].data<T>();
    const T* bias = ctx.inputs[2].data<T>();
    const T* h0 = ctx.inputs[3].data<T>();
    T* hs = ctx.outputs[0].data<T>();
    T* gates = ctx.outputs[1].data<T>();
    for_row_blocks(ctx, q.batch, [&](std::int64_t b0, std::int64_t b1) {
      const std::int64_t nb = b1 - b0;
      std::vector<T> product(static_cast<std::size_t>(nb * X));  // (nb, 3U): h_{s-1} · kernel (reset_after)
      T* rec = product.data();
      for (std::int64_t s = 0; s < q.time; ++s) {
        const T* hp = previous(h0, hs, s, b0, q);
        const T* xs = at_step(px, q.t(s), b0, q.batch, X);
        T* g = at_step(gates, s, b0, q.batch, G);
        T* h = at_step(hs, s, b0, q.batch, U);
        // z and r need h_{s-1} · kernel[:, :2U]; reset_after needs the n columns too.
        gemm(false, false, as_int(nb), as_int(reset_after ? X : 2 * U), as_int(U), hp, as_int(U), kernel, as_int(X),
             rec, as_int(X));
        for (std::int64_t r = 0; r < nb; ++r)
          gru_gates_row(q, reset_after, g + r * G, xs + r * X, rec + r * X, bias, hp + r * U);
        if (!reset_after)  // rec[:, 2U:] = (r h_{s-1}) · kernel[:, 2U:]
          gemm(false, false, as_int(nb), as_int(U), as_int(U), g + 3 * U, as_int(G), kernel + 2 * U, as_int(X),
               rec + 2 * U, as_int(X));
        for (std::int64_t r = 0; r < nb; ++r) {
          T* gr = g + r * G;
          const T* xr = xs + r * X;
          const T* qr = rec + r * X;
          if (!q.kept(b0 + r, s)) {
            std::copy_n(hp + r * U, U, h + r * U);
            std::fill_n(gr, G, T(0));
            continue;
          }
          gru_state_row(q, reset_after, gr, xr, qr, bias, hp + r * U, h + r * U);
        }
      }
      copy_final(h0, hs, b0, b1, q, ctx.outputs[2].data<T>());
    });
  });
}

// (d_states, d_final, recurrent_kernel, h0, states, gates[, mask]) -> {dx_proj, drecurrent_kernel,
// drecurrent_bias, dh0}.
void gru_grad_kernel(KernelContext& ctx) {
  dispatch_floating(ctx.inputs[0].dtype(), op_names::gru_grad, [&]<typename T>() {
    const Tensor& states = ctx.inputs[4];
    const Steps<T> q = steps_of<T>(ctx, states, ctx.inputs[2].shape()[0], 6);
    const bool reset_after = ctx.attrs().get_bool("reset_after");
    const std::int64_t U = q.units, X = 3 * U, G = 4 * U;
    const T* dhs = ctx.inputs[0].data<T>();
    const T* dfinal = ctx.inputs[1].data<T>();
    const T* kernel = ctx.inputs[2].data<T>();
    const T* h0 = ctx.inputs[3].data<T>();
    const T* hs = states.data<T>();
    const T* gates = ctx.inputs[5].data<T>();
    T* dx = ctx.outputs[0].data<T>();
    T* dh0 = ctx.outputs[3].data<T>();
    // (steps, batch, 3U): d of what the recurrent product feeds: z, r and q_h (reset_after) or n's input.
    std::vector<T> drec_buffer(static_cast<std::size_t>(q.time * q.batch * X));
    T* drec = drec_buffer.data();
    for_row_blocks(ctx, q.batch, [&](std::int64_t b0, std::int64_t b1) {
      const std::int64_t nb = b1 - b0;
      std::vector<T> drh_buffer(reset_after ? 0 : static_cast<std::size_t>(nb * U));  // d(r h_{s-1})
      T* drh = drh_buffer.data();
      std::vector<T> scratch(static_cast<std::size_t>(2 * U));  // gru_grad_row1's and row2's
      T* carry = dh0 + b0 * U;                                  // d(h_s) from the steps after s and the final state
      std::copy_n(dfinal + b0 * U, nb * U, carry);
      for (std::int64_t s = q.time - 1; s >= 0; --s) {
        const T* hp = previous(h0, hs, s, b0, q);
        const T* g = at_step(gates, s, b0, q.batch, G);
        const T* dh_out = at_step(dhs, s, b0, q.batch, U);
        T* d = at_step(drec, s, b0, q.batch, X);
        T* dxs = at_step(dx, q.t(s), b0, q.batch, X);
        // Pass 1: dz and d(n's input); the carry becomes d(h_{s-1}) through z alone (or all of dh when masked).
        for (std::int64_t r = 0; r < nb; ++r) {
          const std::int64_t e = r * U;
          if (q.kept(b0 + r, s)) {
            gru_grad_row1(q, g + r * G, hp + e, dh_out + e, carry + e, d + r * X, scratch.data());
            continue;
          }
          for (std::int64_t j = 0; j < U; ++j) carry[e + j] += dh_out[e + j];
          std::fill_n(d + r * X, X, T(0));
        }
        if (!reset_after)  // d(r h_{s-1}) = d(n's input) · kernel[:, 2U:]^T
          gemm(false, true, as_int(nb), as_int(U), as_int(U), d + 2 * U, as_int(X), kernel + 2 * U, as_int(X), drh,
               as_int(U));
        // Pass 2: dr; dx_proj; the third column becomes d(q_h) when reset_after.
        for (std::int64_t r = 0; r < nb; ++r) {
          const std::int64_t e = r * U;
          if (q.kept(b0 + r, s))
            gru_grad_row2(q, reset_after, g + r * G, hp + e, reset_after ? nullptr : drh + e, carry + e, d + r * X,
                          dxs + r * X, scratch.data());  // no drh when reset_after: not even an offset from null
          else
            std::fill_n(dxs + r * X, X, T(0));
        }
        // d(h_{s-1}) += d(rec) · kernel^T over the columns that h_{s-1} itself multiplies.
        gemm(false, true, as_int(nb), as_int(U), as_int(reset_after ? X : 2 * U), d, as_int(X), kernel, as_int(X),
             carry, as_int(U), T(1));
      }
    });
    T* dkernel = ctx.outputs[1].data<T>();
    if (reset_after) {
      weight_grad<T>(ctx, h0, hs, U, drec, X, q.time, q.batch, U, X, dkernel, X);
    } else {
      weight_grad<T>(ctx, h0, hs, U, drec, X, q.time, q.batch, U, 2 * U, dkernel, X);
      // n's columns multiply r h_{s-1}, kept in the gates' fourth slot: one GEMM over all steps.
      parallel_for(ctx, U, 16, [&](std::int64_t r0, std::int64_t r1) {
        gemm(true, false, as_int(r1 - r0), as_int(U), as_int(q.time * q.batch), gates + 3 * U + r0, as_int(G),
             drec + 2 * U, as_int(X), dkernel + r0 * X + 2 * U, as_int(X));
      });
    }
    T* dbias = ctx.outputs[2].data<T>();
    parallel_for(ctx, X, 64, [&](std::int64_t c0, std::int64_t c1) {
      std::fill(dbias + c0, dbias + c1, T(0));
      for (std::int64_t row = 0; row < q.time * q.batch; ++row)
        for (std::int64_t col = c0; col < c1; ++col) dbias[col] += drec[row * X + col];
    });
  });
}

}  // namespace

void register_recurrent_kernels() {
  register_kernel(op_names::simple_rnn, DeviceKind::cpu, simple_rnn_kernel);
  register_kernel(op_names::simple_rnn_grad, DeviceKind::cpu, simple_rnn_grad_kernel);
  register_kernel(op_names::lstm, DeviceKind::cpu, lstm_kernel);
  register_kernel(op_names::lstm_grad, DeviceKind::cpu, lstm_grad_kernel);
  register_kernel(op_names::gru, DeviceKind::cpu, gru_kernel);
  register_kernel(op_names::gru_grad, DeviceKind::cpu, gru_grad_kernel);
}

}  // namespace tower::cpu
