// image_transform against TF's ImageProjectiveTransformV3 (tests/golden/make_image_transform.py wrote
// the values) for every fill mode and interpolation; rotation_transform against Keras's matrix; shape
// errors; no gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/backends/window_reference.h"
#include "tests/support/grad_check.h"
#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/io/hdf5.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_throws_naming;
using tower::testing::evaluate;

namespace {

const std::string kFile = std::string(TOWER_GOLDEN_DIR) + "/files/image_transform.h5";

Tensor transform_of(const Tensor& images, const Tensor& transforms, std::int64_t h, std::int64_t w,
                    const std::string& interpolation, const std::string& mode, double fill) {
  Graph g;
  auto x = g.placeholder({-1, images.shape()[1], images.shape()[2], images.shape()[3]}, images.dtype());
  auto t = g.placeholder({-1, 8}, transforms.dtype());
  return evaluate({ops::image_transform(x, t, h, w, interpolation, mode, fill)}, {{x, images}, {t, transforms}})[0];
}

Tensor as_float64(const Tensor& t) { return Tensor::from_vector<double>(t.shape(), t.to_vector<double>()); }

}  // namespace

TEST_CASE("image_transform: TF's ImageProjectiveTransformV3 values for every fill mode and interpolation") {
  auto file = io::hdf5::File::open(kFile);
  const Tensor images = file.read_dataset("images");  // (2, 5, 6, 2) float32
  for (int k = 0; k < 3; ++k) {
    const std::string c = "case" + std::to_string(k);
    const Tensor transforms = file.read_dataset(c + "/transforms");
    const auto size = file.read_dataset(c + "/output_size").to_vector<double>();
    for (const std::string interpolation : {"nearest", "bilinear"})
      for (const std::string mode : {"reflect", "wrap", "constant", "nearest"}) {
        CAPTURE(c);
        CAPTURE(interpolation);
        CAPTURE(mode);
        const Tensor expected = file.read_dataset(c + "/" + interpolation + "_" + mode);
        const auto h = static_cast<std::int64_t>(size[0]), w = static_cast<std::int64_t>(size[1]);
        check_close(transform_of(images, transforms, h, w, interpolation, mode, 0.5), expected, 1e-5, 1e-5);
        // float64 images: the same sampling (TF's float arithmetic), cast back.
        check_close(transform_of(as_float64(images), as_float64(transforms), h, w, interpolation, mode, 0.5), expected,
                    1e-5, 1e-5);
      }
  }
  // keras.ops.image.affine_transform itself, and the rotations from rotation_transform.
  Graph g;
  auto x = g.placeholder({-1, 5, 6, 2});
  auto angles = g.placeholder({-1, 1});
  auto rotations = ops::rotation_transform(angles, 5, 6);
  const Tensor a = Tensor::from_vector<float>({2, 1}, {0.7f, -2.1f});
  const auto r = evaluate({rotations, ops::image_transform(x, rotations, 5, 6, "bilinear", "reflect", 0.5)},
                          {{x, images}, {angles, a}});
  check_close(r[0], file.read_dataset("case0/transforms"), 1e-6, 1e-6);
  check_close(r[1], file.read_dataset("case3/bilinear_reflect"), 1e-5, 1e-5);
}

TEST_CASE("image_transform: identity and integer shifts read the pixels exactly") {
  const Tensor images = tower::testing::random_tensor({1, 3, 4, 1}, 3, 0.1, 1.0, false, DType::float32);
  const auto v = images.to_vector<double>();
  const Tensor identity = Tensor::from_vector<float>({1, 8}, {1, 0, 0, 0, 1, 0, 0, 0});
  for (const std::string interpolation : {"nearest", "bilinear"})
    check_close(transform_of(images, identity, 3, 4, interpolation, "reflect", 0), v, 0, 0);
  // Output (x, y) reads (x + 1, y - 1): a crop window of another size, constant fill above.
  const Tensor shift = Tensor::from_vector<float>({1, 8}, {1, 0, 1, 0, 1, -1, 0, 0});
  check_close(transform_of(images, shift, 2, 2, "bilinear", "constant", 9), {9, 9, v[1], v[2]}, 0, 0);
}

TEST_CASE("image_transform: errors name the problem; no gradient") {
  Graph g;
  auto x = g.placeholder({2, 5, 6, 1});
  auto t = g.placeholder({2, 8});
  check_throws_naming<ShapeError>([&] { ops::image_transform(x, g.placeholder({2, 6}), 5, 6); }, {"8 columns"});
  check_throws_naming<ShapeError>(
      [&] {
        ops::image_transform(x, g.placeholder({3, 8}), 5, 6);
      },
      {"one transform per image"});
  check_throws_naming<ValueError>([&] { ops::image_transform(x, t, 5, 6, "bicubic"); }, {"bicubic"});
  check_throws_naming<ValueError>([&] { ops::image_transform(x, t, 5, 6, "bilinear", "mirror"); }, {"mirror"});
  check_throws_naming<ValueError>([&] { ops::image_transform(x, t, 0, 6); }, {"positive"});
  auto y = ops::image_transform(x, t, 5, 6);
  check_throws_naming<ValueError>([&] { gradients(ops::reduce_sum(y, {}, false), {x}); },
                                  {"image_transform has no gradient"});
}
