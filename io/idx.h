// IDX files (MNIST, Fashion-MNIST): raw or gzip-compressed, checked against their header.
#pragma once

#include <string>

#include "core/tensor.h"

namespace tower::io {

// Reads an IDX file of unsigned bytes (type 0x08): images (n, rows, cols) or labels (n,), as uint8.
// "x.gz" files are decompressed. Throws ValueError naming the file when the magic number, the
// dimensions or the file size do not match, and NotFoundError when it cannot be opened.
Tensor read_idx(const std::string& path);

// One MNIST-style split: images (n, 28, 28) uint8 and labels (n,) uint8, from
// <dir>/<prefix>-images-idx3-ubyte[.gz] and <dir>/<prefix>-labels-idx1-ubyte[.gz] (prefix "train" or
// "t10k"). Checks that the counts agree.
struct IdxSplit {
  Tensor images;  // (n, rows, cols) uint8
  Tensor labels;  // (n,) uint8
};
IdxSplit read_idx_split(const std::string& dir, const std::string& prefix);

}  // namespace tower::io
