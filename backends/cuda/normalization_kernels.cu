// CUDA batch normalization over x (..., c) seen as (rows, c): per-channel sums in double in two
// deterministic stages (partial sums of row blocks, then their total per channel), per-channel
// coefficients, and one affine pass over the rows. Layer normalization: one warp per row, and the
// weight gradients through the same per-channel sums. The formulas are the CPU's
// (backends/cpu/normalization_kernels.cpp), including where they round to T.
#include <cmath>

#include "tower/backends/cuda/normalization_launchers.h"
#include "tower/backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

constexpr int kTileC = 32;    // channels per block: one warp reads 32 consecutive channels of a row
constexpr int kRowLanes = 8;  // rows a block reads at once
constexpr std::int64_t kRowsPerPart = 512;
constexpr std::int64_t kMaxParts = 128;

// Row blocks summed separately (the grid's y extent); depends on the shape only, so sums are reproducible.
std::int64_t parts_for(std::int64_t rows) {
  const std::int64_t parts = (rows + kRowsPerPart - 1) / kRowsPerPart;
  return parts < 1 ? 1 : (parts > kMaxParts ? kMaxParts : parts);
}

// The workspace: partial sums (parts, 2, c), a per-channel double (c), and three per-channel
// coefficient vectors of T (3, c), each in an 8-byte slot.
struct Workspace {
  double* partials;
  double* stat;
  void* coefficients;
};

Workspace carve(void* workspace, NormRows v) {
  double* p = static_cast<double*>(workspace);
  const std::int64_t parts = parts_for(v.rows);
  return {p, p + parts * 2 * v.c, p + parts * 2 * v.c + v.c};
}

// partials[part, 0 or 1, e]: the sums f adds into (a, b) for element i = r * c + e of channel e, over
// the rows of block `part` (blockIdx.y).
template <typename F>
__global__ void channel_partials_kernel(F f, std::int64_t rows, std::int64_t c, std::int64_t part_rows,
                                        double* partials) {
  const std::int64_t e = blockIdx.x * static_cast<std::int64_t>(kTileC) + threadIdx.x;
  const std::int64_t r0 = blockIdx.y * part_rows;
  const std::int64_t r1 = r0 + part_rows < rows ? r0 + part_rows : rows;
  double a = 0, b = 0;
  if (e < c)
    for (std::int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) f(r * c + e, e, a, b);
  __shared__ double sa[kRowLanes][kTileC], sb[kRowLanes][kTileC];
  sa[threadIdx.y][threadIdx.x] = a;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && e < c) {
    for (int k = 1; k < kRowLanes; ++k) a += sa[k][threadIdx.x], b += sb[k][threadIdx.x];
    partials[(blockIdx.y * 2) * c + e] = a;
    partials[(blockIdx.y * 2 + 1) * c + e] = b;
  }
}

// Channel e's total of sum `which` (0 or 1) over the parts, in order.
__device__ double total(const double* partials, std::int64_t parts, std::int64_t c, std::int64_t e, int which) {
  double s = 0;
  for (std::int64_t p = 0; p < parts; ++p) s += partials[(p * 2 + which) * c + e];
  return s;
}

template <typename T>
struct SumX {
  const T* x;
  __device__ void operator()(std::int64_t i, std::int64_t, double& a, double&) const { a += x[i]; }
};

template <typename T>
struct SquaredDeviation {
  const T* x;
  const double* mean;  // (c,)
  __device__ void operator()(std::int64_t i, std::int64_t e, double& a, double&) const {
    const double d = x[i] - mean[e];
    a += d * d;
  }
};

// (sum dy, sum dy x_hat) with x_hat = (x - mean) inv_std.
template <typename T>
struct TrainingGradSums {
  const T *dy, *x, *mean, *inv_std;
  __device__ void operator()(std::int64_t i, std::int64_t e, double& a, double& b) const {
    const double g = dy[i];
    a += g;
    b += g * (x[i] - mean[e]) * inv_std[e];
  }
};

// (sum dy, sum dy (x - mean)).
template <typename T>
struct InferenceGradSums {
  const T *dy, *x, *mean;
  __device__ void operator()(std::int64_t i, std::int64_t e, double& a, double& b) const {
    const double g = dy[i];
    a += g;
    b += g * (x[i] - mean[e]);
  }
};

template <typename F>
cudaError_t launch_partials(F f, NormRows v, double* partials, cudaStream_t stream) {
  const std::int64_t parts = parts_for(v.rows);
  const std::int64_t part_rows = (v.rows + parts - 1) / parts;
  const dim3 grid(static_cast<unsigned>((v.c + kTileC - 1) / kTileC), static_cast<unsigned>(parts));
  channel_partials_kernel<<<grid, dim3(kTileC, kRowLanes), 0, stream>>>(f, v.rows, v.c, part_rows, partials);
  return cudaGetLastError();
}

// mean[e] = sum x / count.
__global__ void mean_kernel(const double* partials, std::int64_t parts, std::int64_t c, double count, double* mean) {
  TOWER_GRID_STRIDE(e, c) { mean[e] = total(partials, parts, c, e, 0) / count; }
}

// The training statistics and y = x * scale + shift's coefficients (scale, shift: coefficients (2, c)).
template <typename T>
__global__ void training_stats_kernel(const double* partials, std::int64_t parts, std::int64_t c, double count,
                                      double eps, const double* m, const T* gamma, const T* beta, T* mean,
                                      T* variance, T* inv_std, T* coefficients) {
  TOWER_GRID_STRIDE(e, c) {
    const double var = total(partials, parts, c, e, 0) / count, inv = 1.0 / sqrt(var + eps);
    mean[e] = static_cast<T>(m[e]);
    variance[e] = static_cast<T>(var);
    inv_std[e] = static_cast<T>(inv);
    coefficients[e] = static_cast<T>(gamma[e] * inv);
    coefficients[c + e] = static_cast<T>(beta[e] - m[e] * gamma[e] * inv);
  }
}

// dbeta, dgamma and dx = a dy + b x + d's coefficients (a, b, d: coefficients (3, c)).
template <typename T>
__global__ void training_grad_coefficients_kernel(const double* partials, std::int64_t parts, std::int64_t c,
                                                  double n, const T* gamma, const T* mean, const T* inv_std,
                                                  T* dgamma, T* dbeta, T* coefficients) {
  TOWER_GRID_STRIDE(e, c) {
    const double s0 = total(partials, parts, c, e, 0), s1 = total(partials, parts, c, e, 1);
    dbeta[e] = static_cast<T>(s0);
    dgamma[e] = static_cast<T>(s1);
    const double k = static_cast<double>(gamma[e]) * inv_std[e];
    coefficients[e] = static_cast<T>(k);
    coefficients[c + e] = static_cast<T>(-k * s1 * inv_std[e] / n);
    coefficients[2 * c + e] = static_cast<T>(-k * s0 / n + k * s1 * inv_std[e] * mean[e] / n);
  }
}

// dx = x slope + offset's coefficients (slope, offset: coefficients (2, c)).
template <typename T>
__global__ void stats_grad_coefficients_kernel(const T* dmean, const T* dvariance, const T* dinv_std, const T* mean,
                                               const T* inv_std, std::int64_t c, double n, T* coefficients) {
  TOWER_GRID_STRIDE(e, c) {
    const double inv = inv_std[e];
    const double dv = dvariance[e] - 0.5 * inv * inv * inv * dinv_std[e];
    coefficients[e] = static_cast<T>(2.0 * dv / n);
    coefficients[c + e] = static_cast<T>((dmean[e] - 2.0 * dv * mean[e]) / n);
  }
}

// y = x scale + shift's coefficients (scale, shift: coefficients (2, c)); inv[e] = 1 / sqrt(variance + eps).
template <typename T>
__global__ void inference_coefficients_kernel(const T* gamma, const T* beta, const T* mean, const T* variance,
                                              double eps, std::int64_t c, double* inv, T* coefficients) {
  TOWER_GRID_STRIDE(e, c) {
    inv[e] = 1.0 / sqrt(static_cast<double>(variance[e]) + eps);
    const double s = gamma[e] * inv[e];
    coefficients[e] = static_cast<T>(s);
    coefficients[c + e] = static_cast<T>(beta[e] - mean[e] * s);
  }
}

template <typename T>
__global__ void inference_grad_finish_kernel(const double* partials, std::int64_t parts, std::int64_t c,
                                             const T* gamma, const double* inv, T* dgamma, T* dbeta, T* dmean,
                                             T* dvariance) {
  TOWER_GRID_STRIDE(e, c) {
    const double s0 = total(partials, parts, c, e, 0), s1 = total(partials, parts, c, e, 1);
    dbeta[e] = static_cast<T>(s0);
    dgamma[e] = static_cast<T>(s1 * inv[e]);
    dmean[e] = static_cast<T>(-gamma[e] * inv[e] * s0);
    dvariance[e] = static_cast<T>(-0.5 * gamma[e] * inv[e] * inv[e] * inv[e] * s1);
  }
}

// out (rows, c) = u a + v b + d, per channel; v (with b) and d may be null.
template <typename T>
__global__ void channel_affine_kernel(const T* u, const T* a, const T* v, const T* b, const T* d, T* out,
                                      std::int64_t n, std::int64_t c) {
  TOWER_GRID_STRIDE(i, n) {
    const std::int64_t e = i % c;
    T r = u[i] * a[e];
    if (v) r += v[i] * b[e];
    if (d) r += d[e];
    out[i] = r;
  }
}

template <typename T>
cudaError_t launch_affine(const T* u, const T* a, const T* v, const T* b, const T* d, T* out, NormRows rows,
                          cudaStream_t stream) {
  const std::int64_t n = rows.rows * rows.c;
  if (n == 0) return cudaSuccess;
  channel_affine_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(u, a, v, b, d, out, n, rows.c);
  return cudaGetLastError();
}

double count_of(NormRows v) { return static_cast<double>(v.rows > 1 ? v.rows : 1); }

// ---- layer normalization: one warp (32 lanes along the row, threadIdx.x) per row ----------------------

constexpr int kWarpRows = 8;  // rows (warps) per block

__device__ double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T>
struct RowMoments {
  T mean, inv_std;
};

// The row's mean, then its mean squared deviation (two passes, summed in double), as the CPU.
template <typename T>
__device__ RowMoments<T> row_moments(const T* x, std::int64_t n, double eps) {
  double s = 0;
  for (std::int64_t e = threadIdx.x; e < n; e += 32) s += x[e];
  const T mean = static_cast<T>(warp_sum(s) / static_cast<double>(n));
  double q = 0;
  for (std::int64_t e = threadIdx.x; e < n; e += 32) {
    const T d = x[e] - mean;
    q += static_cast<double>(d * d);
  }
  return {mean, static_cast<T>(1.0 / sqrt(warp_sum(q) / static_cast<double>(n) + eps))};
}

// Rows r of this warp: every lane of a warp takes the same rows, so the shuffles see all 32.
#define TOWER_WARP_ROWS(r, rows)                                                                      \
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(kWarpRows) + threadIdx.y; r < (rows); \
       r += static_cast<std::int64_t>(gridDim.x) * kWarpRows)

unsigned warp_row_blocks(std::int64_t rows) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>((rows + kWarpRows - 1) / kWarpRows, 65535)));
}

template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* gamma, const T* beta, double eps, T* y, std::int64_t rows,
                                  std::int64_t n) {
  TOWER_WARP_ROWS(r, rows) {
    const T* xr = x + r * n;
    const RowMoments<T> m = row_moments(xr, n, eps);
    for (std::int64_t e = threadIdx.x; e < n; e += 32) {
      const T inv = m.inv_std * gamma[e];
      y[r * n + e] = xr[e] * inv + (beta[e] - m.mean * inv);
    }
  }
}

// dx = inv_std (g - mean(g) - x_hat mean(g x_hat)), g = dy gamma, x_hat = (x - mean) inv_std; the row's
// (mean, inv_std) to stats (rows, 2) for the weight gradients.
template <typename T>
__global__ void layer_norm_dx_kernel(const T* dy, const T* x, const T* gamma, double eps, T* dx, double* stats,
                                     std::int64_t rows, std::int64_t n) {
  TOWER_WARP_ROWS(r, rows) {
    const T* xr = x + r * n;
    const T* dyr = dy + r * n;
    const RowMoments<T> m = row_moments(xr, n, eps);
    double gs = 0, gxs = 0;
    for (std::int64_t e = threadIdx.x; e < n; e += 32) {
      const T g = dyr[e] * gamma[e];
      gs += g;
      gxs += static_cast<double>(g * (xr[e] - m.mean));
    }
    const T g_mean = static_cast<T>(warp_sum(gs) / static_cast<double>(n));
    const T gx_mean = static_cast<T>(warp_sum(gxs) / static_cast<double>(n)) * m.inv_std;
    for (std::int64_t e = threadIdx.x; e < n; e += 32) {
      const T x_hat = (xr[e] - m.mean) * m.inv_std;
      dx[r * n + e] = m.inv_std * (dyr[e] * gamma[e] - g_mean - x_hat * gx_mean);
    }
    if (threadIdx.x == 0) stats[2 * r] = m.mean, stats[2 * r + 1] = m.inv_std;
  }
}

// (sum dy x_hat, sum dy) over rows, per column.
template <typename T>
struct LayerNormWeightGradSums {
  const T *dy, *x;
  const double* stats;  // (rows, 2): mean, inv_std
  std::int64_t n;
  __device__ void operator()(std::int64_t i, std::int64_t, double& a, double& b) const {
    const std::int64_t r = i / n;
    const T x_hat = (x[i] - static_cast<T>(stats[2 * r])) * static_cast<T>(stats[2 * r + 1]);
    a += static_cast<double>(dy[i] * x_hat);
    b += dy[i];
  }
};

template <typename T>
__global__ void layer_norm_weight_grad_kernel(const double* partials, std::int64_t parts, std::int64_t c, T* dgamma,
                                              T* dbeta) {
  TOWER_GRID_STRIDE(e, c) {
    dgamma[e] = static_cast<T>(total(partials, parts, c, e, 0));
    dbeta[e] = static_cast<T>(total(partials, parts, c, e, 1));
  }
}

#define TOWER_RETURN_IF_FAILED(call)                          \
  do {                                                        \
    if (const cudaError_t s_ = (call); s_ != cudaSuccess) return s_; \
  } while (0)

}  // namespace

std::size_t batch_norm_workspace_bytes(NormRows v) {
  return static_cast<std::size_t>(parts_for(v.rows) * 2 * v.c + v.c + 3 * v.c) * sizeof(double);
}

template <typename T>
cudaError_t launch_batch_norm_training(const T* x, const T* gamma, const T* beta, double eps, T* y, T* mean,
                                       T* variance, T* inv_std, NormRows v, void* workspace, cudaStream_t stream) {
  if (v.c == 0) return cudaSuccess;
  const Workspace ws = carve(workspace, v);
  const std::int64_t parts = parts_for(v.rows);
  T* coefficients = static_cast<T*>(ws.coefficients);
  TOWER_RETURN_IF_FAILED(launch_partials(SumX<T>{x}, v, ws.partials, stream));
  mean_kernel<<<blocks_for(v.c), kThreads, 0, stream>>>(ws.partials, parts, v.c, count_of(v), ws.stat);
  TOWER_RETURN_IF_FAILED(cudaGetLastError());
  TOWER_RETURN_IF_FAILED(launch_partials(SquaredDeviation<T>{x, ws.stat}, v, ws.partials, stream));
  training_stats_kernel<T><<<blocks_for(v.c), kThreads, 0, stream>>>(ws.partials, parts, v.c, count_of(v), eps,
                                                                     ws.stat, gamma, beta, mean, variance, inv_std,
                                                                     coefficients);
  TOWER_RETURN_IF_FAILED(cudaGetLastError());
  return launch_affine<T>(x, coefficients, nullptr, nullptr, coefficients + v.c, y, v, stream);
}

template <typename T>
cudaError_t launch_batch_norm_training_grad(const T* dy, const T* x, const T* gamma, const T* mean, const T* inv_std,
                                            T* dx, T* dgamma, T* dbeta, NormRows v, void* workspace,
                                            cudaStream_t stream) {
  if (v.c == 0) return cudaSuccess;
  const Workspace ws = carve(workspace, v);
  T* coefficients = static_cast<T*>(ws.coefficients);
  TOWER_RETURN_IF_FAILED(launch_partials(TrainingGradSums<T>{dy, x, mean, inv_std}, v, ws.partials, stream));
  training_grad_coefficients_kernel<T><<<blocks_for(v.c), kThreads, 0, stream>>>(
      ws.partials, parts_for(v.rows), v.c, count_of(v), gamma, mean, inv_std, dgamma, dbeta, coefficients);
  TOWER_RETURN_IF_FAILED(cudaGetLastError());
  return launch_affine<T>(dy, coefficients, x, coefficients + v.c, coefficients + 2 * v.c, dx, v, stream);
}

template <typename T>
cudaError_t launch_batch_norm_stats_grad(const T* dmean, const T* dvariance, const T* dinv_std, const T* x,
                                         const T* mean, const T* inv_std, T* dx, NormRows v, void* workspace,
                                         cudaStream_t stream) {
  if (v.c == 0) return cudaSuccess;
  T* coefficients = static_cast<T*>(carve(workspace, v).coefficients);
  stats_grad_coefficients_kernel<T><<<blocks_for(v.c), kThreads, 0, stream>>>(dmean, dvariance, dinv_std, mean,
                                                                              inv_std, v.c, count_of(v), coefficients);
  TOWER_RETURN_IF_FAILED(cudaGetLastError());
  return launch_affine<T>(x, coefficients, nullptr, nullptr, coefficients + v.c, dx, v, stream);
}

template <typename T>
cudaError_t launch_batch_norm_inference(const T* x, const T* gamma, const T* beta, const T* mean, const T* variance,
                                        double eps, T* y, NormRows v, void* workspace, cudaStream_t stream) {
  if (v.c == 0) return cudaSuccess;
  const Workspace ws = carve(workspace, v);
  T* coefficients = static_cast<T*>(ws.coefficients);
  inference_coefficients_kernel<T><<<blocks_for(v.c), kThreads, 0, stream>>>(gamma, beta, mean, variance, eps, v.c,
                                                                             ws.stat, coefficients);
  TOWER_RETURN_IF_FAILED(cudaGetLastError());
  return launch_affine<T>(x, coefficients, nullptr, nullptr, coefficients + v.c, y, v, stream);
}

template <typename T>
cudaError_t launch_batch_norm_inference_grad(const T* dy, const T* x, const T* gamma, const T* mean,
                                             const T* variance, double eps, T* dx, T* dgamma, T* dbeta, T* dmean,
                                             T* dvariance, NormRows v, void* workspace, cudaStream_t stream) {
  if (v.c == 0) return cudaSuccess;
  const Workspace ws = carve(workspace, v);
  T* coefficients = static_cast<T*>(ws.coefficients);  // (scale, shift); the shift is unused
  inference_coefficients_kernel<T><<<blocks_for(v.c), kThreads, 0, stream>>>(gamma, gamma, mean, variance, eps, v.c,
                                                                             ws.stat, coefficients);
  TOWER_RETURN_IF_FAILED(cudaGetLastError());
  TOWER_RETURN_IF_FAILED(launch_partials(InferenceGradSums<T>{dy, x, mean}, v, ws.partials, stream));
  inference_grad_finish_kernel<T><<<blocks_for(v.c), kThreads, 0, stream>>>(
      ws.partials, parts_for(v.rows), v.c, gamma, ws.stat, dgamma, dbeta, dmean, dvariance);
  TOWER_RETURN_IF_FAILED(cudaGetLastError());
  return launch_affine<T>(dy, coefficients, nullptr, nullptr, nullptr, dx, v, stream);
}

std::size_t layer_norm_workspace_bytes(NormRows v) {
  return static_cast<std::size_t>(parts_for(v.rows) * 2 * v.c + 2 * v.rows) * sizeof(double);
}

template <typename T>
cudaError_t launch_layer_norm(const T* x, const T* gamma, const T* beta, double eps, T* y, NormRows v,
                              cudaStream_t stream) {
  if (v.c == 0 || v.rows == 0) return cudaSuccess;
  layer_norm_kernel<T><<<warp_row_blocks(v.rows), dim3(32, kWarpRows), 0, stream>>>(x, gamma, beta, eps, y, v.rows,
                                                                                     v.c);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_layer_norm_grad(const T* dy, const T* x, const T* gamma, double eps, T* dx, T* dgamma, T* dbeta,
                                   NormRows v, void* workspace, cudaStream_t stream) {
  if (v.c == 0) return cudaSuccess;
  double* partials = static_cast<double*>(workspace);  // (parts, 2, c), then the row statistics (rows, 2)
  double* stats = partials + parts_for(v.rows) * 2 * v.c;
  if (v.rows > 0) {
    layer_norm_dx_kernel<T><<<warp_row_blocks(v.rows), dim3(32, kWarpRows), 0, stream>>>(dy, x, gamma, eps, dx, stats,
                                                                                         v.rows, v.c);
    TOWER_RETURN_IF_FAILED(cudaGetLastError());
  }
  TOWER_RETURN_IF_FAILED(launch_partials(LayerNormWeightGradSums<T>{dy, x, stats, v.c}, v, partials, stream));
  layer_norm_weight_grad_kernel<T><<<blocks_for(v.c), kThreads, 0, stream>>>(partials, parts_for(v.rows), v.c, dgamma,
                                                                             dbeta);
  return cudaGetLastError();
}

#define TOWER_INSTANTIATE(T)                                                                                       \
  template cudaError_t launch_batch_norm_training<T>(const T*, const T*, const T*, double, T*, T*, T*, T*,         \
                                                     NormRows, void*, cudaStream_t);                          \
  template cudaError_t launch_batch_norm_training_grad<T>(const T*, const T*, const T*, const T*, const T*, T*,    \
                                                          T*, T*, NormRows, void*, cudaStream_t);             \
  template cudaError_t launch_batch_norm_stats_grad<T>(const T*, const T*, const T*, const T*, const T*, const T*, \
                                                       T*, NormRows, void*, cudaStream_t);                    \
  template cudaError_t launch_batch_norm_inference<T>(const T*, const T*, const T*, const T*, const T*, double,    \
                                                      T*, NormRows, void*, cudaStream_t);                     \
  template cudaError_t launch_batch_norm_inference_grad<T>(const T*, const T*, const T*, const T*, const T*,       \
                                                           double, T*, T*, T*, T*, T*, NormRows, void*,       \
                                                           cudaStream_t);                                 \
  template cudaError_t launch_layer_norm<T>(const T*, const T*, const T*, double, T*, NormRows, cudaStream_t);   \
  template cudaError_t launch_layer_norm_grad<T>(const T*, const T*, const T*, double, T*, T*, T*, NormRows,     \
                                                 void*, cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
