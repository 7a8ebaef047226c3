// IDX files (MNIST, Fashion-MNIST, KMNIST, EMNIST): raw or gzip-compressed, checked against their header.
#pragma once

#include <cstdint>
#include <string>

#include "tower/core/tensor.h"

namespace tower::io {

// The most data read_idx reads from one file (2 GiB; EMNIST's largest split, byclass, has 547 MB of
// training images): a header announcing more is refused before anything is allocated.
inline constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{1} << 31;

// Reads an IDX file of unsigned bytes (magic number 0x0000080N, N = rank 1 to 4): images (n, rows, cols)
// or labels (n,), as uint8. Gzip files are decompressed (recognized by content, whatever the name).
// The file is streamed: the header is read and checked first, then only the data it announces and
// one byte more (so a small gzip file that inflates to gigabytes costs no more than its header says).
// Throws ValueError naming the file when the magic number is wrong, the element type is not ubyte
// (int8/int16/int32/float32/float64 files are named and refused), a dimension is 0, the header
// announces more than kMaxIdxBytes or more than the file can hold (a plain file's size, or what a gzip
// file of its size can inflate to), or the data is not exactly what the header announces (truncated
// files and trailing bytes alike); OutOfMemoryError naming the file when the data does not fit in
// memory; NotFoundError when it cannot be opened.
Tensor read_idx(const std::string& path);

// One MNIST-style split: images (n, rows, cols) uint8 and labels (n,) uint8, from
// <dir>/<prefix>-images-idx3-ubyte[.gz] and <dir>/<prefix>-labels-idx1-ubyte[.gz]: prefix "train" or
// "t10k" for MNIST, Fashion-MNIST and KMNIST, "emnist-<split>-train" or "emnist-<split>-test" for
// EMNIST. Checks the ranks (images 0x00000803, labels 0x00000801) and that the counts agree.
// EMNIST's images are stored transposed (column-major) relative to MNIST's; they are returned as stored.
struct IdxSplit {
  Tensor images;  // (n, rows, cols) uint8
  Tensor labels;  // (n,) uint8
  std::string images_path, labels_path;  // the files read (for messages)
};
IdxSplit read_idx_split(const std::string& dir, const std::string& prefix);

}  // namespace tower::io
