// Launchers of the array-op CUDA kernels (transpose, concat, split, slice, pad, one_hot, gather and
// their gradients). Plain pointers only, as in elementwise_launchers.h. Copies move bytes: U is the
// unsigned integer of the element's size (1, 2, 4 or 8 bytes), so every dtype works. Each returns
// the launch status for CUDA_CHECK.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// A box of elements (dims, row-major) and the element strides of the source and the destination
// along its axes: what a transpose, a slice or a part of a concat copies.
struct CopyLayout {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t src_strides[kMaxRank] = {};
  std::int64_t dst_strides[kMaxRank] = {};
};

// dst[offset of box element i through dst_strides] = src[... through src_strides], i < n (the box's
// element count). src and dst point at the box's first element.
template <typename U>
cudaError_t launch_strided_copy(const U* src, U* dst, std::int64_t n, const CopyLayout& layout, cudaStream_t stream);

// y (n, depth): on_value where depth index == indices[r], off_value elsewhere (out of range: a row of
// off_value, as tf.one_hot).
template <typename I, typename T>
cudaError_t launch_one_hot(const I* indices, T* y, std::int64_t n, std::int64_t depth, T on_value, T off_value,
                           cudaStream_t stream);

// y[i] = Keras's Hashing bin of x[i] (core/hash.h's hashing_bin; floats truncated to int64).
template <typename T>
cudaError_t launch_hashing_bins(const T* x, std::int64_t* y, std::int64_t n, std::int64_t num_bins, bool has_mask,
                                std::int64_t mask_value, bool salted, std::uint64_t key0, std::uint64_t key1,
                                cudaStream_t stream);

// y (m, row) = params[indices] along rows; a row index outside [0, rows) gives a row of zeros (as
// TensorFlow's GPU kernel: a GPU cannot stop to throw).
template <typename I, typename U>
cudaError_t launch_gather(const U* params, const I* indices, U* y, std::int64_t m, std::int64_t rows, std::int64_t row,
                          cudaStream_t stream);

// Bytes of device workspace launch_gather_grad needs for m indices and `rows` rows.
std::size_t gather_grad_workspace_bytes(std::int64_t m, std::int64_t rows);

// dparams (rows, row) = the sum of dy's rows (m, row) into the rows their indices name, zero where
// none does; indices out of range add nothing. Deterministic: the indices are sorted stably (CUB
// radix sort) and each destination row sums its dy rows in index order, as the CPU does.
template <typename I, typename T>
cudaError_t launch_gather_grad(const T* dy, const I* indices, T* dparams, std::int64_t m, std::int64_t rows,
                               std::int64_t row, void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

}  // namespace tower::cuda
