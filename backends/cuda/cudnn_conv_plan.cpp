// Host-side planning of cuDNN convolutions: geometry, padding split, workspace budget, algorithm choice, cache.
#include "tower/backends/cuda/cudnn_conv_plan.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "tower/core/caching_allocator.h"
#include "tower/core/error.h"

namespace tower::cuda {

ConvGeometry conv_geometry(const Shape& x, const Shape& kernel, const Shape& y, const std::vector<std::int64_t>& strides,
                           const std::vector<std::int64_t>& dilation, bool same, DType dtype,
                           std::int64_t groups) {
  const int rank = x.rank();
  const int a = rank == 5 ? 1 : 0;  // the first of height and width after a depth axis
  if ((rank != 4 && rank != 5) || kernel.rank() != rank || y.rank() != rank || groups < 1 ||
      x[rank - 1] != kernel[rank - 2] * groups || kernel[rank - 1] % groups != 0)
    raise<ShapeError>("conv{}d on the GPU: x {} and kernel {} do not split into {} groups", rank - 2, x.to_string(),
                      kernel.to_string(), groups);
  ConvGeometry g{.batch = x[0],
                 .in_h = x[1 + a],
                 .in_w = x[2 + a],
                 .in_c = x[rank - 1],
                 .out_h = y[1 + a],
                 .out_w = y[2 + a],
                 .out_c = kernel[rank - 1],
                 .groups = groups,
                 .kernel_h = kernel[0 + a],
                 .kernel_w = kernel[1 + a],
                 .stride_h = strides.at(0 + a),
                 .stride_w = strides.at(1 + a),
                 .dilation_h = dilation.empty() ? 1 : dilation.at(0 + a),
                 .dilation_w = dilation.empty() ? 1 : dilation.at(1 + a),
                 .dtype = dtype,
                 .spatial = rank - 2};
  if (rank == 5) {
    g.in_d = x[1];
    g.out_d = y[1];
    g.kernel_d = kernel[0];
    g.stride_d = strides.at(0);
    g.dilation_d = dilation.empty() ? 1 : dilation.at(0);
  }
  if (same) {
    g.pad_h = same_padding(g.in_h, g.out_h, g.kernel_h, g.stride_h, g.dilation_h);
    g.pad_w = same_padding(g.in_w, g.out_w, g.kernel_w, g.stride_w, g.dilation_w);
    if (rank == 5) g.pad_d = same_padding(g.in_d, g.out_d, g.kernel_d, g.stride_d, g.dilation_d);
  }
  return g;
}

std::int64_t cudnn_output_length(std::int64_t in, std::int64_t pad, std::int64_t k, std::int64_t stride,
                                 std::int64_t dilation) {
  return 1 + (in + 2 * pad - window::span(k, dilation)) / stride;
}

CudnnConvPlan plan_cudnn_conv(const ConvGeometry& g) {
  CudnnConvPlan p;
  p.pad_h = std::min(g.pad_h.before, g.pad_h.after);
  p.pad_w = std::min(g.pad_w.before, g.pad_w.after);
  p.extra_top = g.pad_h.before - p.pad_h;
  p.extra_left = g.pad_w.before - p.pad_w;
  p.padded_h = g.in_h + (g.pad_h.before + g.pad_h.after - 2 * p.pad_h);
  p.padded_w = g.in_w + (g.pad_w.before + g.pad_w.after - 2 * p.pad_w);
  p.pad_d = std::min(g.pad_d.before, g.pad_d.after);
  p.extra_front = g.pad_d.before - p.pad_d;
  p.padded_d = g.in_d + (g.pad_d.before + g.pad_d.after - 2 * p.pad_d);
  p.explicit_padding = p.padded_h != g.in_h || p.padded_w != g.in_w || p.padded_d != g.in_d;
  if (cudnn_output_length(p.padded_d, p.pad_d, g.kernel_d, g.stride_d, g.dilation_d) != g.out_d)
    raise<ShapeError>("conv3d on the GPU: depth {} padded to {} (cuDNN padding {}) with a kernel of {}, stride {} and "
                      "dilation {} does not give the output depth {}",
                      g.in_d, p.padded_d, p.pad_d, g.kernel_d, g.stride_d, g.dilation_d, g.out_d);
  const std::int64_t oh = cudnn_output_length(p.padded_h, p.pad_h, g.kernel_h, g.stride_h, g.dilation_h);
  const std::int64_t ow = cudnn_output_length(p.padded_w, p.pad_w, g.kernel_w, g.stride_w, g.dilation_w);
  if (oh != g.out_h || ow != g.out_w)
    raise<ShapeError>(
        "conv2d on the GPU: x {}x{} padded to {}x{} (cuDNN padding {}, {}) with a {}x{} kernel, strides ({}, {}) "
        "and dilation ({}, {}) gives {}x{}, but the output is {}x{}",
        g.in_h, g.in_w, p.padded_h, p.padded_w, p.pad_h, p.pad_w, g.kernel_h, g.kernel_w, g.stride_h, g.stride_w,
        g.dilation_h, g.dilation_w, oh, ow, g.out_h, g.out_w);
  return p;
}

std::size_t workspace_budget(std::size_t gpu_free, std::size_t allocator_reserved, std::size_t allocator_in_use,
                             std::size_t memory_limit) {
  const std::size_t cached = allocator_reserved > allocator_in_use ? allocator_reserved - allocator_in_use : 0;
  std::size_t available = gpu_free + cached;
  if (memory_limit > 0)
    available = std::min(available, memory_limit > allocator_in_use ? memory_limit - allocator_in_use : 0);
  return std::min(available / 4, kMaxWorkspaceBytes);
}

std::optional<AlgoChoice> choose_algorithm(const std::vector<AlgoCandidate>& candidates, std::size_t budget) {
  const AlgoCandidate* first_fitting = nullptr;
  const AlgoCandidate* smallest = nullptr;
  for (const auto& c : candidates) {
    if (!c.supported) continue;
    if (c.workspace_bytes <= budget) {
      if (c.deterministic) return AlgoChoice{c.algo, c.workspace_bytes, ConvLayout::nhwc, c.math_type};
      if (!first_fitting) first_fitting = &c;
    }
    if (!smallest || c.workspace_bytes < smallest->workspace_bytes) smallest = &c;
  }
  if (first_fitting)
    return AlgoChoice{first_fitting->algo, first_fitting->workspace_bytes, ConvLayout::nhwc, first_fitting->math_type};
  if (!smallest) return std::nullopt;
  return AlgoChoice{smallest->algo, smallest->workspace_bytes, ConvLayout::nhwc, smallest->math_type};
}

const char* conv_layout_name(ConvLayout layout) {
  switch (layout) {
    case ConvLayout::nhwc: return "nhwc";
    case ConvLayout::nhwc_strided: return "nhwc_strided";
    case ConvLayout::nchw: return "nchw";
  }
  return "?";
}

std::vector<ConvLayout> conv_layouts_to_try(DType dtype) {
  if (dtype == DType::float64) return {ConvLayout::nhwc_strided, ConvLayout::nchw};
  return {ConvLayout::nhwc, ConvLayout::nhwc_strided, ConvLayout::nchw};
}

std::vector<std::int64_t> hwio_to_filter_perm(ConvLayout layout, int spatial) {
  // HWIO is (s0.., in, out) with in at axis `spatial` and out at `spatial + 1`.
  const std::int64_t in = spatial, out = spatial + 1;
  std::vector<std::int64_t> perm{out};
  if (layout != ConvLayout::nhwc) perm.push_back(in);  // KCRS: (out, in, spatial...)
  for (std::int64_t a = 0; a < spatial; ++a) perm.push_back(a);
  if (layout == ConvLayout::nhwc) perm.push_back(in);  // KRSC: (out, spatial..., in)
  return perm;
}

std::vector<std::int64_t> filter_to_hwio_perm(ConvLayout layout, int spatial) {
  const std::vector<std::int64_t> forward = hwio_to_filter_perm(layout, spatial);
  std::vector<std::int64_t> inverse(forward.size());
  for (std::size_t i = 0; i < forward.size(); ++i) inverse[static_cast<std::size_t>(forward[i])] = static_cast<std::int64_t>(i);
  return inverse;
}

std::vector<std::int64_t> nhwc_to_nchw_perm(int spatial) {
  std::vector<std::int64_t> perm{0, spatial + 1};
  for (std::int64_t a = 1; a <= spatial; ++a) perm.push_back(a);
  return perm;
}

std::vector<std::int64_t> nchw_to_nhwc_perm(int spatial) {
  std::vector<std::int64_t> perm{0};
  for (std::int64_t a = 2; a <= spatial + 1; ++a) perm.push_back(a);
  perm.push_back(1);
  return perm;
}

Shape filter_shape(ConvLayout layout, const Shape& hwio) {
  std::vector<std::int64_t> dims;
  for (std::int64_t a : hwio_to_filter_perm(layout, hwio.rank() - 2)) dims.push_back(hwio[static_cast<int>(a)]);
  return Shape(dims);
}

std::optional<AlgoChoice> choose_layout_and_algorithm(
    DType dtype, std::size_t budget, const std::function<std::vector<AlgoCandidate>(ConvLayout)>& query,
    std::vector<LayoutCandidates>* tried) {
  for (ConvLayout layout : conv_layouts_to_try(dtype)) {
    std::vector<AlgoCandidate> candidates = query(layout);
    auto choice = choose_algorithm(candidates, budget);
    if (tried) tried->push_back({layout, std::move(candidates)});
    if (choice) {
      choice->layout = layout;
      return choice;
    }
  }
  return std::nullopt;
}

std::string describe_candidates(const char* pass, const std::vector<LayoutCandidates>& tried,
                                const std::optional<AlgoChoice>& choice) {
  std::string s;
  for (const auto& [layout, candidates] : tried) {
    if (candidates.empty()) s += fmt::format("  {} {}: cuDNN returned no candidate\n", conv_layout_name(layout), pass);
    for (const AlgoCandidate& c : candidates)
      s += fmt::format("  {} {} algo {}: {}, math {}, {}, {}{}\n", conv_layout_name(layout), pass, c.algo,
                       c.status.empty() ? (c.supported ? "supported" : "not supported") : c.status, c.math_type,
                       c.supported ? format_bytes(c.workspace_bytes) : std::string("workspace unknown"),
                       c.deterministic ? "deterministic" : "non-deterministic", c.supported ? "" : " (left out)");
  }
  if (choice)
    s += fmt::format("  chosen: {} {} algo {} with {} of workspace\n", conv_layout_name(choice->layout), pass, choice->algo,
                     format_bytes(choice->workspace_bytes));
  else
    s += fmt::format("  chosen: none ({} has no supported algorithm in any layout)\n", pass);
  return s;
}

bool cudnn_log_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("TOWER_CUDNN_LOG");
    return value != nullptr && *value != '\0' && std::string(value) != "0";
  }();
  return enabled;
}

std::size_t ConvKeyHash::operator()(const ConvKey& key) const {
  const ConvGeometry& g = key.geometry;
  const std::int64_t fields[] = {g.batch,        g.in_h,         g.in_w,        g.in_c,       g.out_h,
                                 g.out_w,        g.out_c,        g.kernel_h,    g.kernel_w,   g.stride_h,
                                 g.stride_w,     g.dilation_h,   g.dilation_w,  g.pad_h.before, g.pad_h.after,
                                 g.pad_w.before, g.pad_w.after,  g.groups, static_cast<std::int64_t>(g.dtype),
                                 static_cast<std::int64_t>(key.pass), g.spatial, g.in_d, g.out_d, g.kernel_d,
                                 g.stride_d, g.dilation_d, g.pad_d.before, g.pad_d.after,
                                 key.tf32 ? 1 : 0};
  std::size_t h = 0;
  for (std::int64_t f : fields) h = h * 1000003u ^ std::hash<std::int64_t>{}(f);  // order matters
  return h;
}

AlgoChoice ConvAlgorithmCache::get_or_choose(const ConvKey& key, const std::function<AlgoChoice()>& choose) {
  std::lock_guard lock(mutex_);
  if (auto it = choices_.find(key); it != choices_.end()) return it->second;
  AlgoChoice choice = choose();  // throws without caching anything
  choices_.emplace(key, choice);
  return choice;
}

std::size_t ConvAlgorithmCache::size() const {
  std::lock_guard lock(mutex_);
  return choices_.size();
}

}  // namespace tower::cuda
