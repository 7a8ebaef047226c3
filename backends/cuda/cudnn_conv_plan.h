// Host-side planning of a cuDNN convolution, testable without a GPU (no cuDNN types): the conv
// geometry and its TF "same" padding, how asymmetric padding is split between an explicit zero-padded
// copy of x and cuDNN's symmetric padding, the workspace budget, the choice among candidate algorithms
// and the per-device cache of those choices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tower/core/dtype.h"
#include "tower/core/shape.h"
#include "tower/core/window.h"

namespace tower::cuda {

// The padding of one spatial axis and TF's "same" padding: core/window.h, shared with the shape
// functions, the CPU kernels and the CUDA pooling kernels.
using Padding = window::Pad;
using window::same_padding;

// One conv2d, NHWC: x (batch, in_h, in_w, in_c) * kernel (kernel_h, kernel_w, in_c / groups, out_c) ->
// y (batch, out_h, out_w, out_c), or one conv3d, NDHWC, with a depth axis before height (spatial = 3,
// the *_d fields; a conv2d leaves them 1). The key of the algorithm cache, so every field that changes
// the convolution is here.
struct ConvGeometry {
  std::int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  std::int64_t out_h = 0, out_w = 0, out_c = 0;
  std::int64_t groups = 1;
  std::int64_t kernel_h = 0, kernel_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  Padding pad_h, pad_w;
  DType dtype = DType::float32;
  int spatial = 2;  // 2: conv2d; 3: conv3d
  std::int64_t in_d = 1, out_d = 1, kernel_d = 1, stride_d = 1, dilation_d = 1;
  Padding pad_d;
  bool operator==(const ConvGeometry&) const = default;
};

// The geometry from x (batch, h, w, c_in), the kernel (kh, kw, c_in / groups, c_out), the output
// (batch, oh, ow, c_out) the shape function gave, the strides, dilation and padding ("same" or "valid");
// or with rank-5 shapes (a depth axis first) and three strides and dilations, a conv3d's.
ConvGeometry conv_geometry(const Shape& x, const Shape& kernel, const Shape& y, const std::vector<std::int64_t>& strides,
                           const std::vector<std::int64_t>& dilation, bool same, DType dtype,
                           std::int64_t groups = 1);

// The output length cuDNN computes for one axis with symmetric padding `pad` on each side.
std::int64_t cudnn_output_length(std::int64_t in, std::int64_t pad, std::int64_t k, std::int64_t stride,
                                 std::int64_t dilation);

// How cuDNN runs a geometry. cuDNN pads symmetrically; the common part min(before, after) of each
// axis is left to cuDNN and the rest (TF's extra row/column at the end) goes into an explicit
// zero-padded copy of x of extent padded_h x padded_w, x placed at (extra_top, extra_left).
struct CudnnConvPlan {
  std::int64_t padded_h = 0, padded_w = 0;      // x's extent as cuDNN sees it
  std::int64_t extra_top = 0, extra_left = 0;  // where x sits in the padded copy
  std::int64_t pad_h = 0, pad_w = 0;           // cuDNN's symmetric padding
  bool explicit_padding = false;               // a padded copy of x (and of dx) is needed
  std::int64_t padded_d = 1, extra_front = 0, pad_d = 0;  // the depth axis of a conv3d, alike
};

// Throws ShapeError when the plan's cuDNN output would not be (out_h, out_w) (an inconsistent geometry).
CudnnConvPlan plan_cudnn_conv(const ConvGeometry& g);

// The bytes a convolution's workspace may take: a quarter of what the device can still hand out (free
// GPU memory plus blocks its caching allocator holds unused, within a logical GPU's memory limit;
// limit 0: none), at most kMaxWorkspaceBytes.
constexpr std::size_t kMaxWorkspaceBytes = std::size_t{1} << 30;
std::size_t workspace_budget(std::size_t gpu_free, std::size_t allocator_reserved, std::size_t allocator_in_use,
                             std::size_t memory_limit);

// A cuDNN algorithm (its enum value) as a candidate: whether cuDNN supports it for this geometry (and
// the math we allow) and the workspace it needs.
struct AlgoCandidate {
  int algo = 0;
  bool supported = false;
  std::size_t workspace_bytes = 0;
};
struct AlgoChoice {
  int algo = 0;
  std::size_t workspace_bytes = 0;
  bool operator==(const AlgoChoice&) const = default;
};

// From candidates in cuDNN's order of preference (fastest first): the first supported one whose
// workspace fits the budget; when none fits, the supported one needing the least workspace (its
// allocation then reports out of memory if even that is too much); nullopt when none is supported.
std::optional<AlgoChoice> choose_algorithm(const std::vector<AlgoCandidate>& candidates, std::size_t budget);

enum class ConvPass : std::uint8_t { forward, backward_data, backward_filter };

struct ConvKey {
  ConvGeometry geometry;
  ConvPass pass = ConvPass::forward;
  bool operator==(const ConvKey&) const = default;
};

struct ConvKeyHash {
  std::size_t operator()(const ConvKey& key) const;
};

// The algorithms chosen on one device (a CudaDevice owns one), so selection runs once per
// (geometry, pass). Thread-safe; `choose` runs under the lock, so at most once per key.
class ConvAlgorithmCache {
 public:
  AlgoChoice get_or_choose(const ConvKey& key, const std::function<AlgoChoice()>& choose);
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<ConvKey, AlgoChoice, ConvKeyHash> choices_;
};

}  // namespace tower::cuda
