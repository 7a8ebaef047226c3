// Independent references for the window ops' tests (test_conv_ops.cpp, test_nn_ops.cpp): TF's window
// geometry, a walk over every window tap, and a check that an exception names what is wrong.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tower/core/shape.h"

namespace tower::testing {

using Ints = std::vector<std::int64_t>;

// Window geometry computed independently of the library: TF's rule for "same", none for "valid".
struct Geo {
  std::int64_t n, h, w, c, kh, kw, sh, sw, dh, dw, oh, ow, pt, pl;
};

inline Geo geometry(const Shape& x, std::int64_t kh, std::int64_t kw, Ints strides, Ints dilation,
             const std::string& padding) {
  Geo g{x[0], x[1], x[2], x[3], kh, kw, strides[0], strides[1], dilation[0], dilation[1], 0, 0, 0, 0};
  auto axis = [&](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t d, std::int64_t& out,
                  std::int64_t& pad) {
    if (padding == "same") {
      out = (in + s - 1) / s;
      pad = std::max<std::int64_t>((out - 1) * s + (k - 1) * d + 1 - in, 0) / 2;
    } else {
      out = (in - (k - 1) * d - 1) / s + 1;
      pad = 0;
    }
  };
  axis(g.h, kh, g.sh, g.dh, g.oh, g.pt);
  axis(g.w, kw, g.sw, g.dw, g.ow, g.pl);
  return g;
}

// Calls f(n, oy, ox, i, j, iy, ix) for every window tap that lands inside the input.
template <typename F>
void for_each_tap(const Geo& g, F&& f) {
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t oy = 0; oy < g.oh; ++oy)
      for (std::int64_t ox = 0; ox < g.ow; ++ox)
        for (std::int64_t i = 0; i < g.kh; ++i)
          for (std::int64_t j = 0; j < g.kw; ++j) {
            std::int64_t iy = oy * g.sh - g.pt + i * g.dh, ix = ox * g.sw - g.pl + j * g.dw;
            if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) f(n, oy, ox, i, j, iy, ix);
          }
}

// Runs f and checks it throws E whose message contains every one of `parts`.
template <typename E, typename F>
void check_throws_naming(F&& f, std::vector<std::string> parts) {
  bool thrown = false;
  try {
    f();
  } catch (const E& e) {
    thrown = true;
    std::string message = e.what();
    for (const auto& p : parts) CHECK_MESSAGE(message.find(p) != std::string::npos, message, " lacks ", p);
  }
  CHECK_MESSAGE(thrown, "expected an exception naming ", parts.front());
}

}  // namespace tower::testing
