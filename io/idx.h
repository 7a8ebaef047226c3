// IDX files (MNIST, Fashion-MNIST, KMNIST, EMNIST): raw or gzip-compressed, checked against their header.
#pragma once

#include <string>

#include "tower/core/tensor.h"

namespace tower::io {

// Reads an IDX file of unsigned bytes (magic number 0x0000080N, N = rank 1 to 4): images (n, rows, cols)
// or labels (n,), as uint8. Gzip files are decompressed (recognized by content, whatever the name).
// Throws ValueError naming the file when the magic number is wrong, the element type is not ubyte
// (int8/int16/int32/float32/float64 files are named and refused), a dimension is 0, or the file size
// is not exactly header + product of the dimensions (truncated files and trailing bytes alike), and
// NotFoundError when it cannot be opened.
Tensor read_idx(const std::string& path);

// One MNIST-style split: images (n, rows, cols) uint8 and labels (n,) uint8, from
// <dir>/<prefix>-images-idx3-ubyte[.gz] and <dir>/<prefix>-labels-idx1-ubyte[.gz]: prefix "train" or
// "t10k" for MNIST, Fashion-MNIST and KMNIST, "emnist-<split>-train" or "emnist-<split>-test" for
// EMNIST. Checks the ranks (images 0x00000803, labels 0x00000801) and that the counts agree.
// EMNIST's images are stored transposed (column-major) relative to MNIST's; they are returned as stored.
struct IdxSplit {
  Tensor images;  // (n, rows, cols) uint8
  Tensor labels;  // (n,) uint8
};
IdxSplit read_idx_split(const std::string& dir, const std::string& prefix);

}  // namespace tower::io
