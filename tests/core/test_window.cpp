// Window geometry (core/window.h): output lengths and TF "same"/"valid" padding, as Keras computes them.
#include <doctest/doctest.h>

#include "tower/core/window.h"

using namespace tower::window;

TEST_CASE("window: output lengths for valid and same padding") {
  CHECK(output_length(28, 3, 1, 1, Padding::valid) == 26);
  CHECK(output_length(28, 3, 1, 1, Padding::same) == 28);
  CHECK(output_length(28, 2, 2, 1, Padding::valid) == 14);
  CHECK(output_length(7, 2, 2, 1, Padding::valid) == 3);
  CHECK(output_length(7, 2, 2, 1, Padding::same) == 4);
  CHECK(output_length(10, 3, 1, 2, Padding::valid) == 6);  // dilated: spans 5
  CHECK(output_length(2, 3, 1, 1, Padding::valid) == 0);   // longer than the input: no position
  CHECK(output_length(-1, 3, 1, 1, Padding::same) == -1);  // unknown stays unknown
  static_assert(output_length(5, 5, 1, 1, Padding::valid) == 1);
  static_assert(span(3, 2) == 5);
}

TEST_CASE("window: same padding puts the smaller half before, as TF") {
  const Pad p = same_padding(7, 4, 2, 2, 1);  // total (4 - 1) * 2 + 2 - 7 = 1
  CHECK(p.before == 0);
  CHECK(p.after == 1);
  const Pad q = same_padding(28, 28, 5, 1, 1);  // total 4
  CHECK(q.before == 2);
  CHECK(q.after == 2);
  const Pad r = same_padding(8, 4, 1, 2, 1);  // a 1x1 stride-2 window needs none
  CHECK(r.before == 0);
  CHECK(r.after == 0);
  const Pad v = padding_of(28, 26, 3, 1, 1, Padding::valid);
  CHECK(v.before == 0);
  CHECK(v.after == 0);
}

TEST_CASE("window: the part of a window inside the input and the windows that contain a position") {
  // 5 inputs, windows of 3, stride 2, one row of padding before: outputs start at -1, 1, 3.
  CHECK(window_start(0, 2, 1) == -1);
  const Range first = window_inside(0, 3, 2, 1, 5);
  CHECK(first.lo == 0);
  CHECK(first.hi == 2);
  const Range last = window_inside(2, 3, 2, 1, 5);
  CHECK(last.lo == 3);
  CHECK(last.hi == 5);
  // Input 1 is in windows 0 ([-1, 2)) and 1 ([1, 4)); input 4 only in window 2 ([3, 6)).
  const Range r1 = windows_containing(1, 3, 2, 1, 3);
  CHECK(r1.lo == 0);
  CHECK(r1.hi == 2);
  const Range r4 = windows_containing(4, 3, 2, 1, 3);
  CHECK(r4.lo == 2);
  CHECK(r4.hi == 3);
  CHECK(r4.size() == 1);
}

TEST_CASE("window: geometry in 1, 2 and 3 spatial dimensions") {
  const std::int64_t in1[] = {10}, k1[] = {3}, s1[] = {1};
  const Geometry<1> g1 = make_geometry<1>(in1, k1, s1, nullptr, Padding::valid);
  CHECK(g1.out[0] == 8);
  CHECK(g1.dilation[0] == 1);
  const std::int64_t in2[] = {7, 6}, k2[] = {2, 3}, s2[] = {2, 1}, d2[] = {1, 2};
  const Geometry<2> g2 = make_geometry<2>(in2, k2, s2, d2, Padding::same);
  CHECK(g2.out[0] == 4);
  CHECK(g2.out[1] == 6);
  CHECK(g2.pad[0].before == 0);
  CHECK(g2.pad[0].after == 1);
  CHECK(g2.pad[1].before == 2);  // dilated 3 taps span 5: total 4
  CHECK(g2.pad[1].after == 2);
  const std::int64_t in3[] = {4, 5, 6}, k3[] = {2, 2, 2}, s3[] = {2, 2, 2};
  const Geometry<3> g3 = make_geometry<3>(in3, k3, s3, nullptr, Padding::valid);
  CHECK(g3.out[0] == 2);
  CHECK(g3.out[1] == 2);
  CHECK(g3.out[2] == 3);
}
