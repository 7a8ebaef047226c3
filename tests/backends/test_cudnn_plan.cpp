// The host-side planning of cuDNN convolutions (label unit: no GPU needed): TF "same" padding, the
// split of asymmetric padding between an explicit padded copy and cuDNN's symmetric padding, the
// workspace budget, the algorithm choice and the per-device cache.
#include <doctest/doctest.h>

#include <stdexcept>

#include "tower/backends/cuda/cudnn_conv_plan.h"
#include "tower/core/error.h"

using namespace tower;
using namespace tower::cuda;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = std::size_t{1} << 30;

// TF's output length of one axis (what core/window.h computes), written out here as a reference.
std::int64_t tf_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t d, bool same) {
  if (same) return (in + s - 1) / s;
  const std::int64_t span = (k - 1) * d + 1;
  return in < span ? 0 : (in - span) / s + 1;
}

}  // namespace

TEST_CASE("same_padding: TF's total, the smaller half before, none when the windows fit") {
  CHECK(same_padding(5, 3, 3, 2, 1) == Padding{1, 1});
  CHECK(same_padding(6, 3, 3, 2, 1) == Padding{0, 1});  // odd total: the extra row at the end
  CHECK(same_padding(4, 4, 4, 1, 1) == Padding{1, 2});
  CHECK(same_padding(7, 7, 3, 1, 2) == Padding{2, 2});  // dilation 2: a 5-wide window
  CHECK(same_padding(28, 28, 5, 1, 1) == Padding{2, 2});
  CHECK(same_padding(6, 2, 1, 4, 1) == Padding{0, 0});  // negative total clamps to 0
}

TEST_CASE("conv_geometry reads shapes, strides, dilation and padding") {
  const ConvGeometry g =
      conv_geometry(Shape{2, 6, 7, 3}, Shape{3, 3, 3, 5}, Shape{2, 3, 4, 5}, {2, 2}, {1, 1}, true, DType::float64);
  CHECK(g.batch == 2);
  CHECK(g.in_h == 6);
  CHECK(g.in_w == 7);
  CHECK(g.in_c == 3);
  CHECK(g.out_c == 5);
  CHECK(g.out_h == 3);
  CHECK(g.out_w == 4);
  CHECK(g.pad_h == Padding{0, 1});
  CHECK(g.pad_w == Padding{1, 1});
  CHECK(g.dtype == DType::float64);
  const ConvGeometry valid =
      conv_geometry(Shape{1, 9, 9, 1}, Shape{3, 3, 1, 2}, Shape{1, 5, 5, 2}, {1, 1}, {2, 2}, false, DType::float32);
  CHECK(valid.pad_h == Padding{0, 0});
  CHECK(valid.dilation_h == 2);
  CHECK(valid.dilation_w == 2);
  // A node without dilation_rate (no attribute): dilation 1.
  CHECK(conv_geometry(Shape{1, 4, 4, 1}, Shape{2, 2, 1, 1}, Shape{1, 3, 3, 1}, {1, 1}, {}, false, DType::float32)
            .dilation_w == 1);
}

TEST_CASE("conv_geometry and plan_cudnn_conv of a conv3d: the depth axis read, padded and planned like the others") {
  // x (2, 5, 6, 7, 3), kernel (2, 3, 3, 3, 4), strides (2, 1, 2), "same": TF pads depth (0, 1), height
  // (1, 1) and width (1, 1); the odd depth row is explicit.
  const ConvGeometry g = conv_geometry(Shape{2, 5, 6, 7, 3}, Shape{2, 3, 3, 3, 4}, Shape{2, 3, 6, 4, 4}, {2, 1, 2},
                                       {1, 1, 1}, true, DType::float32);
  CHECK(g.spatial == 3);
  CHECK(g.in_d == 5);
  CHECK(g.in_h == 6);
  CHECK(g.in_w == 7);
  CHECK(g.out_d == 3);
  CHECK(g.kernel_d == 2);
  CHECK(g.stride_d == 2);
  CHECK(g.pad_d == Padding{0, 1});
  CHECK(g.pad_h == Padding{1, 1});
  const CudnnConvPlan p = plan_cudnn_conv(g);
  CHECK(p.explicit_padding);
  CHECK(p.padded_d == 6);
  CHECK(p.extra_front == 0);
  CHECK(p.pad_d == 0);
  CHECK(p.pad_h == 1);
  CHECK(p.padded_h == 6);
  // A conv2d leaves the depth fields at 1 and the two geometries are different cache keys.
  const ConvGeometry flat =
      conv_geometry(Shape{2, 6, 7, 3}, Shape{3, 3, 3, 4}, Shape{2, 6, 4, 4}, {1, 2}, {1, 1}, true, DType::float32);
  CHECK(flat.spatial == 2);
  CHECK(flat.in_d == 1);
  CHECK_FALSE(ConvKeyHash{}(ConvKey{g}) == ConvKeyHash{}(ConvKey{flat}));
  CHECK_THROWS_AS(conv_geometry(Shape{2, 5, 6, 7, 3}, Shape{2, 3, 3, 2, 4}, Shape{2, 3, 6, 4, 4}, {2, 1, 2}, {}, true,
                                DType::float32),
                  ShapeError);
}

TEST_CASE("cudnn_output_length is cuDNN's formula") {
  CHECK(cudnn_output_length(28, 0, 5, 1, 1) == 24);
  CHECK(cudnn_output_length(28, 2, 5, 1, 1) == 28);
  CHECK(cudnn_output_length(7, 1, 3, 2, 2) == 3);
  CHECK(cudnn_output_length(6, 0, 3, 2, 1) == 2);  // TF "same" wants 3 here: hence the explicit padding
}

TEST_CASE("plan_cudnn_conv: symmetric padding stays with cuDNN, the odd extra row or column is explicit") {
  SUBCASE("asymmetric rows, symmetric columns") {
    const ConvGeometry g =
        conv_geometry(Shape{2, 6, 7, 3}, Shape{3, 3, 3, 5}, Shape{2, 3, 4, 5}, {2, 2}, {1, 1}, true, DType::float32);
    const CudnnConvPlan p = plan_cudnn_conv(g);
    CHECK(p.explicit_padding);
    CHECK(p.pad_h == 0);
    CHECK(p.extra_top == 0);
    CHECK(p.padded_h == 7);  // one zero row after x
    CHECK(p.pad_w == 1);
    CHECK(p.extra_left == 0);
    CHECK(p.padded_w == 7);
  }
  SUBCASE("symmetric same padding: no copy") {
    const ConvGeometry g = conv_geometry(Shape{4, 28, 28, 1}, Shape{5, 5, 1, 8}, Shape{4, 28, 28, 8}, {1, 1}, {1, 1},
                                         true, DType::float32);
    const CudnnConvPlan p = plan_cudnn_conv(g);
    CHECK_FALSE(p.explicit_padding);
    CHECK(p.pad_h == 2);
    CHECK(p.pad_w == 2);
    CHECK(p.padded_h == 28);
  }
  SUBCASE("more padding before than after (not TF's rule, but handled): x moves down in the copy") {
    ConvGeometry g = conv_geometry(Shape{1, 5, 5, 1}, Shape{3, 3, 1, 1}, Shape{1, 5, 3, 1}, {1, 1}, {1, 1}, false,
                                   DType::float32);
    g.pad_h = {2, 0};  // 5 + 2 rows: 5 outputs of a 3-row window
    const CudnnConvPlan p = plan_cudnn_conv(g);
    CHECK(p.pad_h == 0);
    CHECK(p.extra_top == 2);
    CHECK(p.padded_h == 7);
  }
  SUBCASE("an output the padding cannot give throws ShapeError") {
    ConvGeometry g = conv_geometry(Shape{1, 6, 6, 1}, Shape{3, 3, 1, 1}, Shape{1, 3, 3, 1}, {2, 2}, {1, 1}, true,
                                   DType::float32);
    g.out_h = 4;
    CHECK_THROWS_AS(plan_cudnn_conv(g), ShapeError);
  }
}

TEST_CASE("plan_cudnn_conv: every small geometry gives TF's output length and window positions") {
  for (std::int64_t in = 1; in <= 9; ++in)
    for (std::int64_t k = 1; k <= 4; ++k)
      for (std::int64_t s = 1; s <= 3; ++s)
        for (std::int64_t d = 1; d <= 2; ++d)
          for (bool same : {false, true}) {
            const std::int64_t out = tf_out(in, k, s, d, same);
            if (out <= 0) continue;
            CAPTURE(in);
            CAPTURE(k);
            CAPTURE(s);
            CAPTURE(d);
            CAPTURE(same);
            const ConvGeometry g = conv_geometry(Shape{1, in, 3, 1}, Shape{k, 1, 1, 1}, Shape{1, out, 3, 1}, {s, 1},
                                                 {d, 1}, same, DType::float32);
            const CudnnConvPlan p = plan_cudnn_conv(g);  // throws if cuDNN's output length differed
            CHECK(cudnn_output_length(p.padded_h, p.pad_h, k, s, d) == out);
            CHECK(p.pad_h >= 0);
            CHECK(p.extra_top >= 0);
            CHECK(p.padded_h >= in + p.extra_top);
            // Output o's first tap, in x's coordinates: TF reads o * s - before.
            for (std::int64_t o = 0; o < out; ++o) CHECK(o * s - p.pad_h - p.extra_top == o * s - g.pad_h.before);
            // The last tap of the last window lies inside the padded extent.
            CHECK((out - 1) * s + (k - 1) * d <= p.padded_h + 2 * p.pad_h - 1);
          }
}

TEST_CASE("workspace_budget: a quarter of free plus cached memory, within a logical GPU's limit, at most 1 GiB") {
  CHECK(workspace_budget(8 * kGiB, 1 * kGiB, 256 * kMiB, 0) == kMaxWorkspaceBytes);
  CHECK(kMaxWorkspaceBytes == kGiB);
  CHECK(workspace_budget(300 * kMiB, 200 * kMiB, 100 * kMiB, 0) == 100 * kMiB);  // (300 + 100) / 4
  CHECK(workspace_budget(8 * kGiB, 600 * kMiB, 500 * kMiB, 900 * kMiB) == 100 * kMiB);  // (900 - 500) / 4
  CHECK(workspace_budget(8 * kGiB, 1 * kGiB, 1 * kGiB, 512 * kMiB) == 0);  // over the limit already
  CHECK(workspace_budget(40 * kMiB, 0, 0, 0) == 10 * kMiB);
}

TEST_CASE("choose_algorithm: the first supported one that fits, else the supported one needing least") {
  const std::vector<AlgoCandidate> candidates = {
      {.algo = 1, .supported = true, .workspace_bytes = 2 * kGiB},
      {.algo = 0, .supported = false, .workspace_bytes = 0},
      {.algo = 6, .supported = true, .workspace_bytes = 10 * kMiB},
      {.algo = 2, .supported = true, .workspace_bytes = 0},
  };
  CHECK(choose_algorithm(candidates, 100 * kMiB) == AlgoChoice{6, 10 * kMiB});
  CHECK(choose_algorithm(candidates, 4 * kGiB) == AlgoChoice{1, 2 * kGiB});
  CHECK(choose_algorithm(candidates, 0) == AlgoChoice{2, 0});
  const std::vector<AlgoCandidate> too_big = {
      {.algo = 1, .supported = true, .workspace_bytes = 500},
      {.algo = 3, .supported = true, .workspace_bytes = 300},
      {.algo = 5, .supported = true, .workspace_bytes = 300},
      {.algo = 4, .supported = false, .workspace_bytes = 0},
  };
  CHECK(choose_algorithm(too_big, 100) == AlgoChoice{3, 300});  // the first of the smallest
  CHECK_FALSE(choose_algorithm({{.algo = 0, .supported = false, .workspace_bytes = 0}}, kGiB).has_value());
  CHECK_FALSE(choose_algorithm({}, kGiB).has_value());
}

TEST_CASE("ConvAlgorithmCache: selection runs once per geometry and pass") {
  ConvAlgorithmCache cache;
  const ConvGeometry g =
      conv_geometry(Shape{2, 6, 7, 3}, Shape{3, 3, 3, 5}, Shape{2, 3, 4, 5}, {2, 2}, {1, 1}, true, DType::float32);
  int calls = 0;
  auto chooser = [&](int algo) {
    return [&calls, algo] {
      ++calls;
      return AlgoChoice{algo, 64};
    };
  };
  CHECK(cache.get_or_choose({g, ConvPass::forward}, chooser(7)) == AlgoChoice{7, 64});
  CHECK(cache.get_or_choose({g, ConvPass::forward}, chooser(8)) == AlgoChoice{7, 64});  // cached
  CHECK(calls == 1);
  CHECK(cache.get_or_choose({g, ConvPass::backward_data}, chooser(1)) == AlgoChoice{1, 64});
  CHECK(cache.get_or_choose({g, ConvPass::backward_filter}, chooser(2)) == AlgoChoice{2, 64});
  CHECK(calls == 3);

  ConvGeometry other = g;
  other.dtype = DType::float64;
  CHECK(cache.get_or_choose({other, ConvPass::forward}, chooser(3)).algo == 3);
  other = g;
  other.pad_h = {1, 0};  // padding is part of the key
  CHECK(cache.get_or_choose({other, ConvPass::forward}, chooser(4)).algo == 4);
  other = g;
  other.batch = 3;
  CHECK(cache.get_or_choose({other, ConvPass::forward}, chooser(5)).algo == 5);
  CHECK(calls == 6);
  CHECK(cache.size() == 6);

  // A failed selection caches nothing: the next call tries again.
  other.batch = 4;
  CHECK_THROWS_AS(cache.get_or_choose({other, ConvPass::forward}, []() -> AlgoChoice { throw std::runtime_error("no"); }),
                  std::runtime_error);
  CHECK(cache.size() == 6);
  CHECK(cache.get_or_choose({other, ConvPass::forward}, chooser(9)).algo == 9);

  ConvKeyHash hash;
  CHECK(hash({g, ConvPass::forward}) == hash({g, ConvPass::forward}));
  CHECK(hash({g, ConvPass::forward}) != hash({g, ConvPass::backward_data}));
}

TEST_CASE("choose_algorithm: a deterministic algorithm that fits beats a faster one with atomics") {
  const std::vector<AlgoCandidate> candidates = {
      {.algo = 0, .supported = true, .workspace_bytes = 0, .deterministic = false},  // atomics, first in order
      {.algo = 1, .supported = true, .workspace_bytes = 8 * kMiB, .deterministic = true},
      {.algo = 3, .supported = true, .workspace_bytes = kMiB, .deterministic = true},
  };
  CHECK(choose_algorithm(candidates, 16 * kMiB) == AlgoChoice{1, 8 * kMiB});
  CHECK(choose_algorithm(candidates, 2 * kMiB) == AlgoChoice{3, kMiB});
  // No deterministic one fits: the first that fits, even with atomics.
  CHECK(choose_algorithm(candidates, 0) == AlgoChoice{0, 0});
  const std::vector<AlgoCandidate> only_atomic = {
      {.algo = 0, .supported = true, .workspace_bytes = 4 * kMiB, .deterministic = false},
      {.algo = 2, .supported = true, .workspace_bytes = 2 * kMiB, .deterministic = false},
  };
  CHECK(choose_algorithm(only_atomic, 8 * kMiB) == AlgoChoice{0, 4 * kMiB});
  CHECK(choose_algorithm(only_atomic, kMiB) == AlgoChoice{2, 2 * kMiB});  // none fits: the smallest
}

TEST_CASE("conv layouts: float32 tries NHWC first, float64 starts with the KCRS filter") {
  CHECK(conv_layouts_to_try(DType::float32) ==
        std::vector<ConvLayout>{ConvLayout::nhwc, ConvLayout::nhwc_strided, ConvLayout::nchw});
  CHECK(conv_layouts_to_try(DType::float64) == std::vector<ConvLayout>{ConvLayout::nhwc_strided, ConvLayout::nchw});
  CHECK(std::string(conv_layout_name(ConvLayout::nhwc_strided)) == "nhwc_strided");
}

TEST_CASE("choose_layout_and_algorithm: the first layout with a supported candidate, queried lazily") {
  const auto supported = [](int algo) {
    return AlgoCandidate{.algo = algo, .supported = true, .workspace_bytes = 0, .status = "CUDNN_STATUS_SUCCESS"};
  };
  const auto refused = [](int algo) {
    return AlgoCandidate{.algo = algo, .supported = false, .status = "CUDNN_STATUS_NOT_SUPPORTED"};
  };
  std::vector<ConvLayout> queried;
  // float32 with an NHWC algorithm: NHWC, nothing else queried.
  auto choice = choose_layout_and_algorithm(DType::float32, kGiB, [&](ConvLayout l) {
    queried.push_back(l);
    return std::vector<AlgoCandidate>{refused(0), supported(1)};
  });
  REQUIRE(choice.has_value());
  CHECK(*choice == AlgoChoice{1, 0, ConvLayout::nhwc});
  CHECK(queried == std::vector<ConvLayout>{ConvLayout::nhwc});

  // float32 where cuDNN refuses every NHWC-filter algorithm (item 8's gap): the strided KCRS layout.
  queried.clear();
  std::vector<LayoutCandidates> tried;
  choice = choose_layout_and_algorithm(
      DType::float32, kGiB,
      [&](ConvLayout l) {
        queried.push_back(l);
        if (l == ConvLayout::nhwc) return std::vector<AlgoCandidate>{refused(0), refused(1)};
        return std::vector<AlgoCandidate>{supported(2)};
      },
      &tried);
  REQUIRE(choice.has_value());
  CHECK(choice->layout == ConvLayout::nhwc_strided);
  CHECK(choice->algo == 2);
  CHECK(queried == std::vector<ConvLayout>{ConvLayout::nhwc, ConvLayout::nhwc_strided});
  REQUIRE(tried.size() == 2);
  CHECK(tried[0].candidates.size() == 2);

  // float64: never the NHWC filter; the NCHW copies when the strided description is refused.
  queried.clear();
  choice = choose_layout_and_algorithm(DType::float64, kGiB, [&](ConvLayout l) {
    queried.push_back(l);
    if (l == ConvLayout::nchw) return std::vector<AlgoCandidate>{supported(0)};
    return std::vector<AlgoCandidate>{};
  });
  REQUIRE(choice.has_value());
  CHECK(choice->layout == ConvLayout::nchw);
  CHECK(queried == std::vector<ConvLayout>{ConvLayout::nhwc_strided, ConvLayout::nchw});

  // Nothing anywhere: nullopt, every layout tried.
  tried.clear();
  CHECK_FALSE(choose_layout_and_algorithm(
                  DType::float64, kGiB, [&](ConvLayout) { return std::vector<AlgoCandidate>{refused(0)}; }, &tried)
                  .has_value());
  CHECK(tried.size() == 2);
}

TEST_CASE("describe_candidates: a line per candidate (algo, status, math, memory, determinism) and the choice") {
  const std::vector<LayoutCandidates> tried = {
      {ConvLayout::nhwc, {{.algo = 1, .supported = false, .status = "CUDNN_STATUS_NOT_SUPPORTED", .math_type = 2}}},
      {ConvLayout::nhwc_strided,
       {{.algo = 0, .supported = true, .workspace_bytes = 2 * kMiB, .deterministic = false,
         .status = "CUDNN_STATUS_SUCCESS", .math_type = 1}}},
      {ConvLayout::nchw, {}},
  };
  const std::string text = describe_candidates("forward", tried, AlgoChoice{0, 2 * kMiB, ConvLayout::nhwc_strided});
  CHECK(text.find("nhwc forward algo 1: CUDNN_STATUS_NOT_SUPPORTED, math 2") != std::string::npos);
  CHECK(text.find("(left out)") != std::string::npos);
  CHECK(text.find("nhwc_strided forward algo 0: CUDNN_STATUS_SUCCESS, math 1, 2") != std::string::npos);
  CHECK(text.find("non-deterministic") != std::string::npos);
  CHECK(text.find("nchw forward: cuDNN returned no candidate") != std::string::npos);
  CHECK(text.find("chosen: nhwc_strided forward algo 0") != std::string::npos);
  CHECK(describe_candidates("backward_data", {}, std::nullopt).find("chosen: none") != std::string::npos);
}

TEST_CASE("layout permutations: HWIO to KRSC and KCRS and back, NHWC to NCHW and back, 2-D and 3-D") {
  // Applying a perm to a shape as numpy's transpose does.
  const auto apply = [](const Shape& s, const std::vector<std::int64_t>& perm) {
    std::vector<std::int64_t> dims;
    for (auto a : perm) dims.push_back(s[static_cast<int>(a)]);
    return Shape(dims);
  };
  const Shape hwio{3, 5, 4, 8};  // (kh, kw, in, out)
  CHECK(hwio_to_filter_perm(ConvLayout::nhwc, 2) == std::vector<std::int64_t>{3, 0, 1, 2});
  CHECK(hwio_to_filter_perm(ConvLayout::nhwc_strided, 2) == std::vector<std::int64_t>{3, 2, 0, 1});
  CHECK(hwio_to_filter_perm(ConvLayout::nchw, 2) == std::vector<std::int64_t>{3, 2, 0, 1});
  CHECK(filter_shape(ConvLayout::nhwc, hwio) == Shape{8, 3, 5, 4});         // KRSC
  CHECK(filter_shape(ConvLayout::nhwc_strided, hwio) == Shape{8, 4, 3, 5});  // KCRS
  CHECK(filter_to_hwio_perm(ConvLayout::nhwc, 2) == std::vector<std::int64_t>{1, 2, 3, 0});
  CHECK(filter_to_hwio_perm(ConvLayout::nchw, 2) == std::vector<std::int64_t>{2, 3, 1, 0});
  const Shape hwio3{2, 3, 5, 4, 8};  // (kd, kh, kw, in, out)
  for (ConvLayout l : {ConvLayout::nhwc, ConvLayout::nhwc_strided, ConvLayout::nchw}) {
    CHECK(apply(filter_shape(l, hwio), filter_to_hwio_perm(l, 2)) == hwio);
    CHECK(apply(filter_shape(l, hwio3), filter_to_hwio_perm(l, 3)) == hwio3);
  }
  CHECK(filter_shape(ConvLayout::nhwc, hwio3) == Shape{8, 2, 3, 5, 4});
  CHECK(filter_shape(ConvLayout::nchw, hwio3) == Shape{8, 4, 2, 3, 5});
  const Shape x{2, 7, 6, 3}, x3{2, 4, 7, 6, 3};
  CHECK(apply(x, nhwc_to_nchw_perm(2)) == Shape{2, 3, 7, 6});
  CHECK(apply(x3, nhwc_to_nchw_perm(3)) == Shape{2, 3, 4, 7, 6});
  CHECK(apply(apply(x, nhwc_to_nchw_perm(2)), nchw_to_nhwc_perm(2)) == x);
  CHECK(apply(apply(x3, nhwc_to_nchw_perm(3)), nchw_to_nhwc_perm(3)) == x3);
}

TEST_CASE("ConvAlgorithmCache: TF32 on and off are separate choices of one geometry") {
  // config::enable_tensor_float_32_execution admits tensor-op algorithms for float32: another choice,
  // and the exact one stays cached for when TF32 is off again.
  ConvAlgorithmCache cache;
  const ConvGeometry g =
      conv_geometry(Shape{2, 6, 7, 3}, Shape{3, 3, 3, 5}, Shape{2, 3, 4, 5}, {2, 2}, {1, 1}, true, DType::float32);
  CHECK(cache.get_or_choose({g, ConvPass::forward}, [] { return AlgoChoice{1, 64}; }) == AlgoChoice{1, 64});
  const AlgoChoice tensor_op{.algo = 7, .workspace_bytes = 128, .math_type = 1};  // CUDNN_TENSOR_OP_MATH
  CHECK(cache.get_or_choose({g, ConvPass::forward, true}, [&] { return tensor_op; }) == tensor_op);
  CHECK(cache.get_or_choose({g, ConvPass::forward, false}, [] { return AlgoChoice{2, 0}; }) == AlgoChoice{1, 64});
  CHECK(cache.size() == 2);
  CHECK_FALSE(ConvKeyHash{}(ConvKey{g, ConvPass::forward, true}) == ConvKeyHash{}(ConvKey{g, ConvPass::forward}));
  // choose_algorithm hands the candidate's math type on, for the descriptor that runs it.
  const std::vector<AlgoCandidate> candidates = {{.algo = 4, .supported = true, .workspace_bytes = 0, .math_type = 1}};
  CHECK(choose_algorithm(candidates, 0)->math_type == 1);
}
