// Helpers shared by the layers: argument normalization (Keras's standardize_tuple/padding) and input checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

// `Conv2D "conv2d_1"`: how errors name a layer.
std::string describe(const Layer& layer);

// Keras's standardize_tuple: one value repeated n times, or n values; each must be >= min_value.
// ValueError naming the layer and argument otherwise.
std::vector<std::int64_t> normalize_tuple(const Layer& layer, const char* arg, const std::vector<std::int64_t>& value,
                                          std::size_t n, std::int64_t min_value = 1);
// "valid" or "same" (any case); ValueError otherwise.
std::string normalize_padding(const Layer& layer, const std::string& padding);
// A 2-D convolution's window arguments in place: strides and dilation_rate as (height, width) pairs,
// padding "valid" or "same"; ValueError for strides > 1 together with dilation_rate > 1, which
// Keras (and TF's kernels) refuse.
void normalize_window_2d(const Layer& layer, std::vector<std::int64_t>& strides, std::string& padding,
                         std::vector<std::int64_t>& dilation_rate);

// The same for a 3-D convolution: strides and dilation_rate as (depth, height, width) triples.
void normalize_window_3d(const Layer& layer, std::vector<std::int64_t>& strides, std::string& padding,
                         std::vector<std::int64_t>& dilation_rate);

// ShapeError unless `shape` has `rank` dimensions; layout describes them ("(batch, height, width, channels)").
void expect_input_rank(const Layer& layer, const Shape& shape, int rank, const char* layout);
// ShapeError unless the dimension at `axis` is known (channels, features).
void expect_known_dim(const Layer& layer, const Shape& shape, int axis, const char* what);

// x (n, ...) -> x[::-1], its first axis reversed, n known or not (ops::reverse: its length is taken
// at run time).
SymbolicTensor reverse_first_axis(const SymbolicTensor& x);

}  // namespace tower::layers
