// GPU checks of convolution (cuDNN), pooling, batch and layer normalization and scaled dot-product
// attention against the CPU (label gpu):
// forward ops and gradients, "valid" and "same" padding (odd sizes where "same" is asymmetric),
// strides 2, dilation 2, float32 and float64. With no visible GPU the executable prints why and exits
// with 77, which CTest reports as skipped.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "tower/core/autodiff.h"
#include "tower/core/executor.h"
#include "tower/core/op_names.h"
#include "tower/core/ops.h"
#include "tests/support/gpu_parity.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gemm_parity;
using tower::testing::check_parity;

namespace {


// Float32 within 1e-5 relative (atol for values that cancel to near zero); float64 much tighter.
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType dtype, double atol32 = 1e-5) {
  return dtype == DType::float32 ? Tolerance{1e-5, atol32} : Tolerance{1e-10, 1e-10};
}

Tensor random(const Shape& shape, std::uint64_t seed, DType dtype, double max_abs = 1.0) {
  return testing::random_tensor(shape, seed, 0.1, max_abs, false, dtype);
}

Tensor positive(const Shape& shape, std::uint64_t seed, DType dtype) {
  return testing::random_tensor(shape, seed, 0.1, 2.0, true, dtype);
}

struct ConvCase {
  const char* name;
  Shape x, kernel;
  ops::Conv2DArgs args;
};

// "same" is asymmetric where the total padding is odd: (out - 1) * s + (k - 1) * d + 1 - in.
const std::vector<ConvCase> kConvCases = {
    {"3x3 valid", {2, 7, 9, 3}, {3, 3, 3, 4}, {{1, 1}, "valid", {1, 1}}},
    {"3x3 same (symmetric)", {2, 7, 9, 3}, {3, 3, 3, 4}, {{1, 1}, "same", {1, 1}}},
    {"4x4 same (asymmetric: 1 before, 2 after)", {2, 8, 7, 3}, {4, 4, 3, 5}, {{1, 1}, "same", {1, 1}}},
    {"3x3 same stride 2, odd and even sizes (rows symmetric, columns asymmetric)", {2, 9, 8, 3}, {3, 3, 3, 4},
     {{2, 2}, "same", {1, 1}}},
    {"3x3 valid stride 2", {3, 11, 10, 2}, {3, 3, 2, 6}, {{2, 2}, "valid", {1, 1}}},
    {"3x3 valid dilation 2", {1, 11, 10, 2}, {3, 3, 2, 3}, {{1, 1}, "valid", {2, 2}}},
    {"2x2 same dilation 2 (symmetric)", {2, 9, 9, 3}, {2, 2, 3, 4}, {{1, 1}, "same", {2, 2}}},
    {"3x3 same stride 2 dilation 2 (rows asymmetric: 1 before, 2 after)", {2, 8, 9, 3}, {3, 3, 3, 4},
     {{2, 2}, "same", {2, 2}}},
    {"2x3 same dilation (1, 2) (rows asymmetric)", {2, 7, 8, 2}, {2, 3, 2, 3}, {{1, 1}, "same", {1, 2}}},
    {"1x1 valid stride 2", {2, 9, 9, 5}, {1, 1, 5, 7}, {{2, 2}, "valid", {1, 1}}},
    {"5x5 same (mnist_cnn-like)", {4, 28, 28, 1}, {5, 5, 1, 8}, {{1, 1}, "same", {1, 1}}},
    {"3x3 same depthwise (groups = channels)", {2, 8, 7, 6}, {3, 3, 1, 6}, {{1, 1}, "same", {1, 1}, 6}},
    {"3x3 same stride 2 depthwise multiplier 2", {2, 9, 8, 3}, {3, 3, 1, 6}, {{2, 2}, "same", {1, 1}, 3}},
    {"3x3 valid, 2 groups", {2, 7, 9, 4}, {3, 3, 2, 6}, {{1, 1}, "valid", {1, 1}, 2}},
};

}  // namespace

TEST_CASE("cuda: conv2d and its backward ops (cuDNN) match the CPU") {
  for (DType dtype : {DType::float32, DType::float64})
    for (const ConvCase& c : kConvCases) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(c.name);
      const ops::Conv2DArgs args = c.args;
      Tensor x = random(c.x, 101, dtype);
      Tensor kernel = random(c.kernel, 102, dtype);
      // dy with conv2d's output shape, from the CPU's shape function.
      Graph shapes;
      const Shape y_shape = ops::conv2d(shapes.placeholder(c.x, dtype, "x"), shapes.placeholder(c.kernel, dtype, "k"), args)
                                .shape();
      Tensor dy = random(y_shape, 103, dtype);
      // Reduction lengths: a window of input channels; a window of one group's filters; every output position.
      const std::int64_t window = c.kernel[0] * c.kernel[1], groups = args.groups;
      check_gemm_parity({x, kernel}, [&](std::vector<SymbolicTensor> v) { return ops::conv2d(v[0], v[1], args); },
                        window * c.kernel[2]);
      check_gemm_parity({dy, kernel, x},
                        [&](std::vector<SymbolicTensor> v) { return ops::conv2d_backward_data(v[0], v[1], v[2], args); },
                        window * c.kernel[3] / groups);
      check_gemm_parity({x, dy, kernel},
                        [&](std::vector<SymbolicTensor> v) { return ops::conv2d_backward_filter(v[0], v[1], v[2], args); },
                        y_shape.num_elements() / y_shape[3]);
    }
}

TEST_CASE("cuda: conv2d_transpose (cuDNN's data gradient) matches the CPU") {
  for (DType dtype : {DType::float32, DType::float64}) {
    CAPTURE(dtype_name(dtype));
    const Tolerance t = tolerance(dtype);
    Tensor x = random({2, 5, 4, 3}, 121, dtype);
    Tensor kernel = random({3, 3, 4, 3}, 122, dtype);  // (kh, kw, filters, in)
    check_parity({x, kernel},
                 [](std::vector<SymbolicTensor> v) {
                   return ops::conv2d_transpose(v[0], v[1], {.strides = {2, 2}, .padding = "same"});
                 },
                 t.rtol, t.atol);
    check_parity({x, kernel},
                 [](std::vector<SymbolicTensor> v) {
                   return ops::conv2d_transpose(v[0], v[1], {.strides = {2, 2}, .padding = "valid"}, {1, 1});
                 },
                 t.rtol, t.atol);
  }
}

TEST_CASE("cuda: resize and its gradient (a gather per input pixel) match the CPU") {
  for (DType dtype : {DType::float32, DType::float64})
    for (const char* method : {"bilinear", "nearest"}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(method);
      const Tolerance t = tolerance(dtype);
      for (const auto& [in, h, w] : {std::tuple<Shape, std::int64_t, std::int64_t>{{2, 5, 4, 3}, 10, 8},
                                     {{2, 9, 7, 2}, 4, 3}, {{1, 4, 6, 2}, 7, 11}}) {
        Tensor x = random(in, 131, dtype);
        check_parity({x}, [&](std::vector<SymbolicTensor> v) { return ops::resize(v[0], h, w, method); }, t.rtol,
                     t.atol);
        Tensor dy = random({in[0], h, w, in[3]}, 132, dtype);
        check_parity({dy, x},
                     [&](std::vector<SymbolicTensor> v) {
                       return v[0].graph().add1(op_names::resize_grad, {v[0], v[1]},
                                                {{"height", h}, {"width", w}, {"interpolation", std::string(method)}});
                     },
                     t.rtol, t.atol);
      }
    }
}

TEST_CASE("cuda: image_transform (every fill mode, both interpolations) and rotation_transform match the CPU") {
  // Dyadic coefficients: the sampled points are exact in float, so fused multiply-adds on the GPU
  // cannot move a nearest read across a rounding boundary.
  const std::vector<double> transforms = {0.75, 0.25, -3.5, -0.5, 1.25, 2.0,  0.0,    0.0,       // in and out
                                          -1.5, 0.0,  9.25, 0.0,  2.5,  -6.75, 0.0,   0.0,       // many folds
                                          1.0,  0.0,  0.5,  0.0,  1.0,  -0.5, 0.0625, -0.03125};  // projective
  for (DType dtype : {DType::float32, DType::float64})
    for (const char* method : {"bilinear", "nearest"})
      for (const char* mode : {"reflect", "wrap", "constant", "nearest"}) {
        CAPTURE(dtype_name(dtype));
        CAPTURE(method);
        CAPTURE(mode);
        const Tolerance t = tolerance(dtype);
        Tensor x = random({3, 5, 7, 2}, 141, dtype);
        const std::vector<float> transforms32(transforms.begin(), transforms.end());
        Tensor tr = dtype == DType::float32 ? Tensor::from_vector<float>({3, 8}, transforms32)
                                            : Tensor::from_vector<double>({3, 8}, transforms);
        check_parity({x, tr},
                     [&](std::vector<SymbolicTensor> v) {
                       return ops::image_transform(v[0], v[1], 6, 4, method, mode, 0.5);
                     },
                     t.rtol, t.atol);
      }
  Tensor angles = random({4, 1}, 142, DType::float32);
  check_parity({angles}, [](std::vector<SymbolicTensor> v) { return ops::rotation_transform(v[0], 5, 8); }, 1e-5, 1e-5);
}

TEST_CASE("cuda: conv2d gradients through autodiff match the CPU, and a second run reuses the chosen algorithms") {
  for (DType dtype : {DType::float32, DType::float64}) {
    CAPTURE(dtype_name(dtype));
    const ops::Conv2DArgs args{{2, 2}, "same", {1, 1}};
    Tensor x = random({2, 9, 8, 3}, 111, dtype);
    Tensor kernel = random({3, 3, 3, 4}, 112, dtype);
    Tensor w = random({2, 5, 4, 4}, 113, dtype);  // weights of the loss, conv2d's output shape
    const Tolerance t = tolerance(dtype, 1e-4);
    for (int which : {0, 1, 0}) {
      CAPTURE(which);
      check_parity({x, kernel, w},
                   [&](std::vector<SymbolicTensor> v) {
                     auto loss = ops::reduce_sum(ops::multiply(ops::conv2d(v[0], v[1], args), v[2]));
                     return gradients(loss, {v[0], v[1]})[static_cast<std::size_t>(which)];
                   },
                   t.rtol, t.atol);
    }
  }
}

TEST_CASE("cuda: max and average pooling and their gradients match the CPU, ties routed as the CPU routes them") {
  struct PoolCase {
    const char* name;
    Shape x;
    ops::Pool2DArgs args;
  };
  const std::vector<PoolCase> cases = {
      {"2x2 valid (default strides)", {2, 8, 9, 3}, {{2, 2}, {}, "valid"}},
      {"3x3 stride 2 same on odd and even sizes (asymmetric)", {2, 7, 8, 3}, {{3, 3}, {2, 2}, "same"}},
      {"3x3 stride 1 same (overlapping windows)", {2, 6, 5, 4}, {{3, 3}, {1, 1}, "same"}},
      {"2x3 strides (1, 2) valid", {1, 7, 9, 2}, {{2, 3}, {1, 2}, "valid"}},
      {"2x2 stride 2 same on odd sizes (padding after only)", {3, 5, 7, 2}, {{2, 2}, {2, 2}, "same"}},
  };
  for (DType dtype : {DType::float32, DType::float64})
    for (const PoolCase& c : cases) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(c.name);
      const ops::Pool2DArgs args = c.args;
      // Small integers: many ties inside a window, so the routing of max_pool2d_grad is checked.
      std::vector<double> values(static_cast<std::size_t>(c.x.num_elements()));
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>((i * 7 + i / 5) % 4);
      Tensor ties = Tensor::from_vector<double>(c.x, values);  // float64: cast to dtype in the graph
      Tensor x = random(c.x, 121, dtype);
      Graph shapes;
      const Shape y_shape = ops::max_pool2d(shapes.placeholder(c.x, dtype, "x"), args).shape();
      Tensor dy = random(y_shape, 122, dtype);
      const Tolerance t = tolerance(dtype);
      for (const Tensor& input : {x, ties}) {
        check_parity({input},
                     [&](std::vector<SymbolicTensor> v) { return ops::max_pool2d(ops::cast(v[0], dtype), args); }, 0,
                     0);
        check_parity({dy, input},
                     [&](std::vector<SymbolicTensor> v) {
                       auto xi = ops::cast(v[1], dtype);
                       return ops::max_pool2d_grad(v[0], xi, ops::max_pool2d(xi, args), args);
                     },
                     t.rtol, t.atol);
        check_parity({input},
                     [&](std::vector<SymbolicTensor> v) { return ops::avg_pool2d(ops::cast(v[0], dtype), args); },
                     t.rtol, t.atol);
      }
      check_parity({dy, x}, [&](std::vector<SymbolicTensor> v) { return ops::avg_pool2d_grad(v[0], v[1], args); },
                   t.rtol, t.atol);
      // Through autodiff as a model uses them.
      check_parity({x},
                   [&](std::vector<SymbolicTensor> v) {
                     auto loss = ops::add(ops::reduce_sum(ops::square(ops::max_pool2d(v[0], args))),
                                          ops::reduce_sum(ops::square(ops::avg_pool2d(v[0], args))));
                     return gradients(loss, {v[0]})[0];
                   },
                   t.rtol, t.atol);
    }
}

TEST_CASE("cuda: conv3d, its backward ops and conv3d_transpose (cuDNN Nd descriptors) match the CPU") {
  struct Case {
    const char* name;
    Shape x, kernel;
    ops::Conv3DArgs args;
  };
  const std::vector<Case> cases = {
      {"3x3x3 valid", {2, 5, 6, 5, 3}, {3, 3, 3, 3, 4}, {}},
      {"strides (2, 1, 2) same (asymmetric padding, explicit copy)", {2, 6, 5, 7, 2}, {3, 2, 3, 2, 3},
       {.strides = {2, 1, 2}, .padding = "same"}},
      {"dilation (2, 1, 2) same", {1, 6, 5, 6, 2}, {2, 3, 2, 2, 3}, {.padding = "same", .dilation_rate = {2, 1, 2}}},
      {"2 groups same", {2, 4, 5, 4, 4}, {3, 3, 2, 2, 6}, {.padding = "same", .groups = 2}},
  };
  for (DType dtype : {DType::float32, DType::float64})
    for (const Case& c : cases) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(c.name);
      const ops::Conv3DArgs args = c.args;
      Tensor x = random(c.x, 141, dtype);
      Tensor kernel = random(c.kernel, 142, dtype);
      Graph shapes;
      const Shape y_shape =
          ops::conv3d(shapes.placeholder(c.x, dtype, "x"), shapes.placeholder(c.kernel, dtype, "k"), args).shape();
      Tensor dy = random(y_shape, 143, dtype);
      const std::int64_t window = c.kernel[0] * c.kernel[1] * c.kernel[2];
      check_gemm_parity({x, kernel}, [&](std::vector<SymbolicTensor> v) { return ops::conv3d(v[0], v[1], args); },
                        window * c.kernel[3]);
      check_gemm_parity({dy, kernel, x},
                        [&](std::vector<SymbolicTensor> v) { return ops::conv3d_backward_data(v[0], v[1], v[2], args); },
                        window * c.kernel[4] / args.groups);
      check_gemm_parity({x, dy, kernel},
                        [&](std::vector<SymbolicTensor> v) { return ops::conv3d_backward_filter(v[0], v[1], v[2], args); },
                        y_shape.num_elements() / y_shape[4]);
    }
  for (DType dtype : {DType::float32, DType::float64}) {
    const Tolerance t = tolerance(dtype);
    Tensor x = random({2, 3, 4, 3, 3}, 144, dtype);
    Tensor kernel = random({3, 3, 3, 2, 3}, 145, dtype);  // (kd, kh, kw, filters, in)
    check_parity({x, kernel},
                 [](std::vector<SymbolicTensor> v) {
                   return ops::conv3d_transpose(v[0], v[1], {.strides = {2, 2, 1}, .padding = "same"}, {1, 0, 0});
                 },
                 t.rtol, t.atol);
  }
}

TEST_CASE("cuda: 3-D max and average pooling and their gradients match the CPU, ties routed as the CPU routes them") {
  const std::vector<std::pair<Shape, ops::Pool3DArgs>> cases = {
      {{2, 4, 6, 5, 3}, {}},
      {{2, 5, 6, 7, 2}, {.pool_size = {3, 3, 2}, .strides = {2, 1, 2}, .padding = "same"}},
      {{1, 5, 5, 4, 3}, {.pool_size = {2, 3, 2}, .strides = {1, 2, 1}, .padding = "valid"}},
  };
  for (DType dtype : {DType::float32, DType::float64})
    for (const auto& [shape, args] : cases) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(shape.to_string());
      std::vector<double> values(static_cast<std::size_t>(shape.num_elements()));
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>((i * 7 + i / 5) % 4);
      Tensor ties = Tensor::from_vector<double>(shape, values);  // float64: cast to dtype in the graph
      Tensor x = random(shape, 151, dtype);
      Graph shapes;
      const Shape y_shape = ops::max_pool3d(shapes.placeholder(shape, dtype, "x"), args).shape();
      Tensor dy = random(y_shape, 152, dtype);
      const Tolerance t = tolerance(dtype);
      for (const Tensor& input : {x, ties}) {
        check_parity({input},
                     [&](std::vector<SymbolicTensor> v) { return ops::max_pool3d(ops::cast(v[0], dtype), args); }, 0, 0);
        check_parity({dy, input},
                     [&](std::vector<SymbolicTensor> v) {
                       auto xi = ops::cast(v[1], dtype);
                       return ops::max_pool3d_grad(v[0], xi, ops::max_pool3d(xi, args), args);
                     },
                     t.rtol, t.atol);
        check_parity({input},
                     [&](std::vector<SymbolicTensor> v) { return ops::avg_pool3d(ops::cast(v[0], dtype), args); },
                     t.rtol, t.atol);
      }
      check_parity({dy, x}, [&](std::vector<SymbolicTensor> v) { return ops::avg_pool3d_grad(v[0], v[1], args); },
                   t.rtol, t.atol);
    }
}

TEST_CASE("cuda: batch normalization (training, inference and their gradients) matches the CPU") {
  // Rank 2 and 4; 4356 rows spread over several partial sums on the GPU; epsilon below cuDNN's minimum.
  const std::vector<Shape> shapes = {{64, 5}, {4, 5, 6, 7}, {4, 33, 33, 16}, {3, 40}};
  for (DType dtype : {DType::float32, DType::float64})
    for (const Shape& shape : shapes)
      for (double eps : {1e-3, 1e-7}) {
        CAPTURE(dtype_name(dtype));
        CAPTURE(shape.to_string());
        CAPTURE(eps);
        const std::int64_t c = shape.dim(-1);
        Tensor x = random(shape, 131, dtype, 3.0);
        Tensor dy = random(shape, 132, dtype);
        Tensor gamma = random({c}, 133, dtype, 2.0);
        Tensor beta = random({c}, 134, dtype);
        Tensor moving_mean = random({c}, 135, dtype);
        Tensor moving_var = positive({c}, 136, dtype);
        Tensor a = random({c}, 137, dtype), b = random({c}, 138, dtype), d = random({c}, 139, dtype);
        const Tolerance t = tolerance(dtype, 1e-5);
        for (std::size_t k = 0; k < 4; ++k) {  // y, mean, variance, inv_std
          CAPTURE(k);
          check_parity({x, gamma, beta},
                       [&](std::vector<SymbolicTensor> v) { return ops::batch_norm_training(v[0], v[1], v[2], eps)[k]; },
                       t.rtol, t.atol);
        }
        for (std::size_t k = 0; k < 3; ++k) {  // dx, dgamma, dbeta
          CAPTURE(k);
          check_parity({dy, x, gamma, beta},
                       [&](std::vector<SymbolicTensor> v) {
                         auto r = ops::batch_norm_training(v[1], v[2], v[3], eps);
                         return ops::batch_norm_training_grad(v[0], v[1], v[2], r[1], r[3])[k];
                       },
                       t.rtol, 1e-4);
        }
        // dx through the statistics outputs as well (batch_norm_stats_grad), via autodiff.
        check_parity({dy, x, gamma, beta, a, b, d},
                     [&](std::vector<SymbolicTensor> v) {
                       auto r = ops::batch_norm_training(v[1], v[2], v[3], eps);
                       auto loss = ops::add(ops::reduce_sum(ops::multiply(r[0], v[0])),
                                            ops::add(ops::reduce_sum(ops::multiply(r[1], v[4])),
                                                     ops::add(ops::reduce_sum(ops::multiply(r[2], v[5])),
                                                              ops::reduce_sum(ops::multiply(r[3], v[6])))));
                       return gradients(loss, {v[1]})[0];
                     },
                     t.rtol, 1e-4);
        check_parity({x, gamma, beta, moving_mean, moving_var},
                     [&](std::vector<SymbolicTensor> v) {
                       return ops::batch_norm_inference(v[0], v[1], v[2], v[3], v[4], eps);
                     },
                     t.rtol, t.atol);
        for (std::size_t k = 0; k < 5; ++k) {  // batch_norm_inference_grad: dx, dgamma, dbeta, dmean, dvariance
          CAPTURE(k);
          check_parity({dy, x, gamma, beta, moving_mean, moving_var},
                       [&](std::vector<SymbolicTensor> v) {
                         auto y = ops::batch_norm_inference(v[1], v[2], v[3], v[4], v[5], eps);
                         auto loss = ops::reduce_sum(ops::multiply(y, v[0]));
                         return gradients(loss, {v[1], v[2], v[3], v[4], v[5]})[k];
                       },
                       t.rtol, 1e-4);
        }
      }
}

TEST_CASE("cuda: layer normalization and its gradient match the CPU") {
  // Rows shorter and longer than a warp, a tail, one column; 6400 rows over several partial sums.
  const std::vector<Shape> shapes = {{64, 5}, {4, 7, 33}, {32, 200, 32}, {3, 300}, {8, 1}};
  for (DType dtype : {DType::float32, DType::float64})
    for (const Shape& shape : shapes) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(shape.to_string());
      const std::int64_t n = shape.dim(-1);
      Tensor x = random(shape, 141, dtype, 3.0);
      Tensor dy = random(shape, 142, dtype);
      Tensor gamma = random({n}, 143, dtype, 2.0);
      Tensor beta = random({n}, 144, dtype);
      const Tolerance t = tolerance(dtype, 1e-5);
      check_parity({x, gamma, beta},
                   [&](std::vector<SymbolicTensor> v) { return ops::layer_norm(v[0], v[1], v[2], 1e-3); }, t.rtol,
                   t.atol);
      for (std::size_t k = 0; k < 3; ++k) {  // dx, dgamma, dbeta
        CAPTURE(k);
        check_parity({dy, x, gamma},
                     [&](std::vector<SymbolicTensor> v) { return ops::layer_norm_grad(v[0], v[1], v[2], 1e-3)[k]; },
                     t.rtol, 1e-4);
      }
    }
}

TEST_CASE("cuda: dot_product_attention and its gradient match the CPU, with and without broadcast masks") {
  struct AttentionCase {
    std::int64_t batch, t, s, heads, h, hv;
  };
  // B < N (a GEMM batch over the heads, a loop over the batch), B > N (the other way), B = 1.
  const std::vector<AttentionCase> cases = {{2, 5, 7, 3, 4, 6}, {4, 50, 50, 2, 32, 32}, {1, 3, 9, 4, 8, 5}};
  for (DType dtype : {DType::float32, DType::float64})
    for (const AttentionCase& c : cases) {
      const std::int64_t B = c.batch, T = c.t, S = c.s, N = c.heads;
      for (const Shape& mask_shape : {Shape{}, Shape{B, 1, T, S}, Shape{1, N, T, S}, Shape{B, N, T, S}}) {
        CAPTURE(dtype_name(dtype));
        const std::string dims = Shape{B, T, S, N, c.h, c.hv}.to_string();  // (B, T, S, N, H, Hv)
        CAPTURE(dims);
        CAPTURE(mask_shape.to_string());
        const double scale = 1 / std::sqrt(static_cast<double>(c.h));
        std::vector<Tensor> inputs = {random({B, T, N, c.h}, 151, dtype, 2.0), random({B, S, N, c.h}, 152, dtype, 2.0),
                                      random({B, S, N, c.hv}, 153, dtype), random({B, T, N, c.hv}, 154, dtype)};
        const bool masked = mask_shape.rank() == 4;
        if (masked) {  // about a third zeros, and the first query row of (0, 0) all zeros; cast in the graph
          std::vector<double> m(static_cast<std::size_t>(mask_shape.num_elements()));
          for (std::size_t i = 0; i < m.size(); ++i) m[i] = (i * 7919 % 3 == 0) ? 0.0 : 1.0;
          for (std::int64_t j = 0; j < S; ++j) m[static_cast<std::size_t>(j)] = 0.0;
          inputs.push_back(Tensor::from_vector<double>(mask_shape, m));
        }
        const auto mask_of = [&](const std::vector<SymbolicTensor>& v) {
          return masked ? ops::cast(v[4], dtype) : SymbolicTensor();
        };
        // Float32: the softmax turns the logits' rounding into relative errors of p.
        const double rtol = dtype == DType::float32 ? 1e-4 : 1e-10, atol = dtype == DType::float32 ? 1e-5 : 1e-10;
        for (std::size_t k = 0; k < 2; ++k) {  // o, p
          CAPTURE(k);
          check_parity(inputs,
                       [&](std::vector<SymbolicTensor> v) {
                         return ops::dot_product_attention(v[0], v[1], v[2], mask_of(v), scale)[k];
                       },
                       rtol, atol);
        }
        for (std::size_t k = 0; k < 3; ++k) {  // dq, dk, dv
          CAPTURE(k);
          check_parity(inputs,
                       [&](std::vector<SymbolicTensor> v) {
                         const SymbolicTensor mask = mask_of(v);
                         auto r = ops::dot_product_attention(v[0], v[1], v[2], mask, scale);
                         return ops::dot_product_attention_grad(v[3], v[0], v[1], v[2], r[1], mask, scale)[k];
                       },
                       rtol, dtype == DType::float32 ? 1e-4 : 1e-10);
        }
      }
    }
}
