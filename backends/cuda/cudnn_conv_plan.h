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
#include <string>
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

// How tower's NHWC tensors and Keras's HWIO kernel are shown to cuDNN.
//  - nhwc: x, y NHWC (CUDNN_TENSOR_NHWC, NDHWC strides for 3-D); the kernel copied to KRSC (out, [kd,] kh,
//    kw, in), cuDNN's NHWC filter format. The fast path for float32.
//  - nhwc_strided: x, y still NHWC in memory, described in cuDNN's (n, c, [d,] h, w) order with NHWC
//    strides; the kernel copied to KCRS (out, in, [kd,] kh, kw), cuDNN's NCHW filter format. cuDNN has
//    almost no NHWC-filter algorithm for float64 (PyTorch's cudnn_conv_suggest_memory_format turns NHWC
//    off for double), and few for some float32 geometries.
//  - nchw: x and dy transposed to packed NCHW copies, y and dx computed in NCHW and transposed back;
//    KCRS filter. The last resort, when cuDNN refuses the strided description too.
enum class ConvLayout : std::uint8_t { nhwc, nhwc_strided, nchw };
const char* conv_layout_name(ConvLayout layout);

// The layouts to try for a dtype, in order: float32 nhwc, nhwc_strided, nchw; float64 nhwc_strided,
// nchw (its NHWC-filter query is not even made).
std::vector<ConvLayout> conv_layouts_to_try(DType dtype);

// The transposes around a layout, as perms for a transpose of (spatial + 2) axes. Keras's kernel
// (kh, kw, in, out) (a depth axis first for 3-D) to the layout's filter (KRSC or KCRS), and back;
// and x, y between NHWC and NCHW (the nchw layout).
std::vector<std::int64_t> hwio_to_filter_perm(ConvLayout layout, int spatial);
std::vector<std::int64_t> filter_to_hwio_perm(ConvLayout layout, int spatial);
std::vector<std::int64_t> nhwc_to_nchw_perm(int spatial);
std::vector<std::int64_t> nchw_to_nhwc_perm(int spatial);
// The filter's shape in the layout's format: (out, [kd,] kh, kw, in / groups) or (out, in / groups, [kd,] kh, kw).
Shape filter_shape(ConvLayout layout, const Shape& hwio);

// A cuDNN algorithm (its enum value) as a candidate: whether cuDNN supports it for this geometry (and
// the math we allow), the workspace it needs, and what cuDNN said of it (for the log and errors).
struct AlgoCandidate {
  int algo = 0;
  bool supported = false;
  std::size_t workspace_bytes = 0;
  bool deterministic = true;  // cuDNN's perf.determinism == CUDNN_DETERMINISTIC
  std::string status;         // cuDNN's status name, or why tower left it out ("FFT/Winograd", "tensor-op math")
  int math_type = 0;          // cudnnMathType_t
};
struct AlgoChoice {
  int algo = 0;
  std::size_t workspace_bytes = 0;
  ConvLayout layout = ConvLayout::nhwc;
  int math_type = 0;  // the candidate's cudnnMathType_t: the descriptor that runs it is set to it
  bool operator==(const AlgoChoice&) const = default;
};

// From candidates in cuDNN's order of preference (fastest first): the first supported deterministic
// one whose workspace fits the budget, else the first supported one that fits (atomics: sums in
// another order each run); when none fits, the supported one needing the least workspace (its
// allocation then reports out of memory if even that is too much); nullopt when none is supported.
std::optional<AlgoChoice> choose_algorithm(const std::vector<AlgoCandidate>& candidates, std::size_t budget);

// The layout and algorithm of one pass: `query(layout)` gives the candidates cuDNN offers in that
// layout; layouts are tried in conv_layouts_to_try's order until one has a supported candidate.
// `tried` (when given) gets every layout queried with its candidates, for the log and the error.
struct LayoutCandidates {
  ConvLayout layout;
  std::vector<AlgoCandidate> candidates;
};
std::optional<AlgoChoice> choose_layout_and_algorithm(
    DType dtype, std::size_t budget, const std::function<std::vector<AlgoCandidate>(ConvLayout)>& query,
    std::vector<LayoutCandidates>* tried = nullptr);

// One line per candidate of every layout tried ("nhwc fwd algo 1: CUDNN_STATUS_SUCCESS, math 1,
// 2.0 MiB, deterministic"), then the choice (or "none"): what TOWER_CUDNN_LOG=1 prints once per
// geometry and pass, and what the "no algorithm" error carries.
std::string describe_candidates(const char* pass, const std::vector<LayoutCandidates>& tried,
                                const std::optional<AlgoChoice>& choice);

// TOWER_CUDNN_LOG=1 (read once): log each convolution's candidates and choice to stderr, once per
// geometry and pass (when the choice is made and cached).
bool cudnn_log_enabled();

enum class ConvPass : std::uint8_t { forward, backward_data, backward_filter };

struct ConvKey {
  ConvGeometry geometry;
  ConvPass pass = ConvPass::forward;
  // config::tensor_float_32_execution_enabled() when chosen: TF32 admits tensor-op algorithms for
  // float32, so the same geometry has a choice with and one without.
  bool tf32 = false;
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
