// Data helpers in Keras's spirit: load an MNIST-style data set (keras.datasets.mnist.load_data) and
// keras.utils.to_categorical.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "tower/core/tensor.h"

namespace tower::io {

// ((x_train, y_train), (x_test, y_test)) from the four IDX files in `dir` (train-*, t10k-*: MNIST,
// Fashion-MNIST, KMNIST): images (n, 28, 28) uint8, labels (n,) uint8. Images of another size throw
// ValueError naming the file (read_idx_split reads any size).
using Split = std::pair<Tensor, Tensor>;
std::pair<Split, Split> load_mnist(const std::string& dir);

// EMNIST (Cohen et al. 2017) from the gzip or raw IDX files in `dir`: emnist-<split>-{train,test}-
// {images-idx3,labels-idx1}-ubyte[.gz]. split: "balanced" (47 classes), "byclass" (62), "bymerge" (47),
// "digits" (10), "letters" (labels 1..26), "mnist" (10). Images (n, 28, 28) uint8 as stored
// (transposed relative to MNIST), labels (n,) uint8; other sizes throw as in load_mnist.
std::pair<Split, Split> load_emnist(const std::string& dir, const std::string& split);

// Debian's dataset-fashion-mnist location.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// labels: (n,) integer class ids -> (n, num_classes) float32 one-hot rows. Ids outside
// [0, num_classes) throw ValueError naming the first one.
Tensor to_categorical(const Tensor& labels, std::int64_t num_classes);

// x as float32 times `factor` (the examples' `x.astype('float32') / 255`), reshaped to `shape`
// (one dimension may be -1).
Tensor to_float(const Tensor& x, double factor, const Shape& shape);

}  // namespace tower::io
