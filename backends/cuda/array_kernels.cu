// CUDA kernels of the array ops, and their launchers.
#include <cub/device/device_radix_sort.cuh>

#include "tower/backends/cuda/array_launchers.h"
#include "tower/backends/cuda/launch.cuh"
#include "tower/core/hash.h"

namespace tower::cuda {

namespace {

template <typename U>
__global__ void strided_copy_kernel(const U* src, U* dst, std::int64_t n, CopyLayout layout) {
  TOWER_GRID_STRIDE(i, n) {
    dst[strided_offset(i, layout.rank, layout.dims, layout.dst_strides)] =
        src[strided_offset(i, layout.rank, layout.dims, layout.src_strides)];
  }
}

template <typename I, typename T>
__global__ void one_hot_kernel(const I* indices, T* y, std::int64_t n, std::int64_t depth, T on_value, T off_value) {
  TOWER_GRID_STRIDE(i, n * depth) {
    y[i] = static_cast<std::int64_t>(indices[i / depth]) == i % depth ? on_value : off_value;
  }
}

template <typename T>
__global__ void hashing_bins_kernel(const T* x, std::int64_t* y, std::int64_t n, std::int64_t num_bins, bool has_mask,
                                    std::int64_t mask_value, bool salted, std::uint64_t key0, std::uint64_t key1) {
  TOWER_GRID_STRIDE(i, n) {
    y[i] = hash::hashing_bin(static_cast<std::int64_t>(x[i]), num_bins, has_mask, mask_value, salted, key0, key1);
  }
}

template <typename I, typename U>
__global__ void gather_kernel(const U* params, const I* indices, U* y, std::int64_t m, std::int64_t rows,
                              std::int64_t row) {
  TOWER_GRID_STRIDE(i, m * row) {
    const auto k = static_cast<std::int64_t>(indices[i / row]);
    y[i] = k >= 0 && k < rows ? params[k * row + i % row] : U(0);
  }
}

// keys[i] = indices[i] (rows for an index out of range: sorted last, then skipped); positions[i] = i.
template <typename I>
__global__ void sort_keys_kernel(const I* indices, std::uint64_t* keys, std::int64_t* positions, std::int64_t m,
                                 std::int64_t rows) {
  TOWER_GRID_STRIDE(i, m) {
    const auto k = static_cast<std::int64_t>(indices[i]);
    keys[i] = static_cast<std::uint64_t>(k >= 0 && k < rows ? k : rows);
    positions[i] = i;
  }
}

// Over (sorted index j, column c): the first j of each run of equal keys sums the run's dy rows.
template <typename T>
__global__ void segment_sum_kernel(const T* dy, const std::uint64_t* keys, const std::int64_t* positions, T* dparams,
                                   std::int64_t m, std::int64_t rows, std::int64_t row) {
  TOWER_GRID_STRIDE(i, m * row) {
    const std::int64_t j = i / row, c = i % row;
    const std::uint64_t key = keys[j];
    if (key >= static_cast<std::uint64_t>(rows) || (j > 0 && keys[j - 1] == key)) continue;
    T sum = T(0);
    for (std::int64_t t = j; t < m && keys[t] == key; ++t) sum += dy[positions[t] * row + c];
    dparams[static_cast<std::int64_t>(key) * row + c] = sum;
  }
}

// The gather_grad workspace: sort keys and positions in and out, then CUB's temporary storage.
struct GatherGradWorkspace {
  std::uint64_t *keys_in, *keys_out;
  std::int64_t *positions_in, *positions_out;
  void* sort_storage;
  std::size_t sort_bytes;
};

constexpr std::size_t kAlign = 256;
std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Bits that hold every key up to and including `rows` (the out-of-range key).
int key_bits(std::int64_t rows) {
  int bits = 1;
  while (bits < 63 && (std::int64_t{1} << bits) <= rows) ++bits;
  return bits;
}

std::size_t sort_storage_bytes(std::int64_t m, std::int64_t rows) {
  std::size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const std::uint64_t*>(nullptr),
                                  static_cast<std::uint64_t*>(nullptr), static_cast<const std::int64_t*>(nullptr),
                                  static_cast<std::int64_t*>(nullptr), m, 0, key_bits(rows));
  return bytes;
}

GatherGradWorkspace carve(void* workspace, std::int64_t m, std::int64_t rows) {
  char* p = static_cast<char*>(workspace);
  const std::size_t array = aligned(static_cast<std::size_t>(m) * 8);
  GatherGradWorkspace w;
  w.keys_in = reinterpret_cast<std::uint64_t*>(p);
  w.keys_out = reinterpret_cast<std::uint64_t*>(p + array);
  w.positions_in = reinterpret_cast<std::int64_t*>(p + 2 * array);
  w.positions_out = reinterpret_cast<std::int64_t*>(p + 3 * array);
  w.sort_storage = p + 4 * array;
  w.sort_bytes = sort_storage_bytes(m, rows);
  return w;
}

}  // namespace

template <typename U>
cudaError_t launch_strided_copy(const U* src, U* dst, std::int64_t n, const CopyLayout& layout, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  strided_copy_kernel<U><<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n, layout);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_hashing_bins(const T* x, std::int64_t* y, std::int64_t n, std::int64_t num_bins, bool has_mask,
                                std::int64_t mask_value, bool salted, std::uint64_t key0, std::uint64_t key1,
                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (num_bins <= 0) return cudaErrorInvalidValue;
  hashing_bins_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, num_bins, has_mask, mask_value, salted,
                                                                 key0, key1);
  return cudaGetLastError();
}

template <typename I, typename T>
cudaError_t launch_one_hot(const I* indices, T* y, std::int64_t n, std::int64_t depth, T on_value, T off_value,
                           cudaStream_t stream) {
  if (n * depth == 0) return cudaSuccess;
  one_hot_kernel<I, T><<<blocks_for(n * depth), kThreads, 0, stream>>>(indices, y, n, depth, on_value, off_value);
  return cudaGetLastError();
}

template <typename I, typename U>
cudaError_t launch_gather(const U* params, const I* indices, U* y, std::int64_t m, std::int64_t rows, std::int64_t row,
                          cudaStream_t stream) {
  if (m * row == 0) return cudaSuccess;
  gather_kernel<I, U><<<blocks_for(m * row), kThreads, 0, stream>>>(params, indices, y, m, rows, row);
  return cudaGetLastError();
}

std::size_t gather_grad_workspace_bytes(std::int64_t m, std::int64_t rows) {
  return 4 * aligned(static_cast<std::size_t>(m) * 8) + sort_storage_bytes(m, rows);
}

template <typename I, typename T>
cudaError_t launch_gather_grad(const T* dy, const I* indices, T* dparams, std::int64_t m, std::int64_t rows,
                               std::int64_t row, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (rows * row == 0) return cudaSuccess;
  if (cudaError_t status = cudaMemsetAsync(dparams, 0, static_cast<std::size_t>(rows * row) * sizeof(T), stream);
      status != cudaSuccess || m == 0)
    return status;
  if (workspace_bytes < gather_grad_workspace_bytes(m, rows)) return cudaErrorInvalidValue;
  GatherGradWorkspace w = carve(workspace, m, rows);
  sort_keys_kernel<I><<<blocks_for(m), kThreads, 0, stream>>>(indices, w.keys_in, w.positions_in, m, rows);
  if (cudaError_t status = cub::DeviceRadixSort::SortPairs(w.sort_storage, w.sort_bytes, w.keys_in, w.keys_out,
                                                           w.positions_in, w.positions_out, m, 0, key_bits(rows), stream);
      status != cudaSuccess)
    return status;
  segment_sum_kernel<T><<<blocks_for(m * row), kThreads, 0, stream>>>(dy, w.keys_out, w.positions_out, dparams, m,
                                                                      rows, row);
  return cudaGetLastError();
}

#define TOWER_BYTES(U)                                                                                             \
  template cudaError_t launch_strided_copy<U>(const U*, U*, std::int64_t, const CopyLayout&, cudaStream_t);        \
  template cudaError_t launch_gather<std::int32_t, U>(const U*, const std::int32_t*, U*, std::int64_t, std::int64_t, \
                                                      std::int64_t, cudaStream_t);                                 \
  template cudaError_t launch_gather<std::int64_t, U>(const U*, const std::int64_t*, U*, std::int64_t, std::int64_t, \
                                                      std::int64_t, cudaStream_t);                                 \
  template cudaError_t launch_gather<std::uint8_t, U>(const U*, const std::uint8_t*, U*, std::int64_t, std::int64_t, \
                                                      std::int64_t, cudaStream_t);
TOWER_BYTES(std::uint8_t)
TOWER_BYTES(std::uint16_t)
TOWER_BYTES(std::uint32_t)
TOWER_BYTES(std::uint64_t)
#undef TOWER_BYTES

#define TOWER_ONE_HOT(I)                                                                                         \
  template cudaError_t launch_one_hot<I, float>(const I*, float*, std::int64_t, std::int64_t, float, float,      \
                                                cudaStream_t);                                                   \
  template cudaError_t launch_one_hot<I, double>(const I*, double*, std::int64_t, std::int64_t, double, double,  \
                                                 cudaStream_t);                                                  \
  template cudaError_t launch_one_hot<I, std::int32_t>(const I*, std::int32_t*, std::int64_t, std::int64_t,      \
                                                       std::int32_t, std::int32_t, cudaStream_t);                \
  template cudaError_t launch_one_hot<I, std::int64_t>(const I*, std::int64_t*, std::int64_t, std::int64_t,      \
                                                       std::int64_t, std::int64_t, cudaStream_t);                \
  template cudaError_t launch_one_hot<I, std::uint8_t>(const I*, std::uint8_t*, std::int64_t, std::int64_t,      \
                                                       std::uint8_t, std::uint8_t, cudaStream_t);                \
  template cudaError_t launch_gather_grad<I, float>(const float*, const I*, float*, std::int64_t, std::int64_t,   \
                                                    std::int64_t, void*, std::size_t, cudaStream_t);             \
  template cudaError_t launch_gather_grad<I, double>(const double*, const I*, double*, std::int64_t, std::int64_t, \
                                                     std::int64_t, void*, std::size_t, cudaStream_t);
TOWER_ONE_HOT(std::int32_t)
TOWER_ONE_HOT(std::int64_t)
TOWER_ONE_HOT(std::uint8_t)
#undef TOWER_ONE_HOT

#define TOWER_HASHING_BINS(T)                                                                                \
  template cudaError_t launch_hashing_bins<T>(const T*, std::int64_t*, std::int64_t, std::int64_t, bool,     \
                                              std::int64_t, bool, std::uint64_t, std::uint64_t, cudaStream_t);
TOWER_HASHING_BINS(float)
TOWER_HASHING_BINS(double)
TOWER_HASHING_BINS(std::int32_t)
TOWER_HASHING_BINS(std::int64_t)
TOWER_HASHING_BINS(std::uint8_t)
#undef TOWER_HASHING_BINS

}  // namespace tower::cuda
