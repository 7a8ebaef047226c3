// The errors of the checked arithmetic (core/checked.h).
#include "tower/core/checked.h"

#include "tower/core/error.h"

namespace tower::detail {

void raise_overflow(std::int64_t a, std::string_view op, std::int64_t b, std::string_view what, std::string_view fix) {
  // The exact result lies beyond one end of the int64 range: below it when negative.
  const bool below = op == "*" ? (a < 0) != (b < 0) : a < 0;
  raise<ValueError>("{}: {} {} {} is {} than {}, the {} 64-bit integer{}{}", what, a, op, b, below ? "less" : "more",
                    below ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max(),
                    below ? "smallest" : "largest", fix.empty() ? "" : "; ", fix);
}

void raise_not_int(std::int64_t value, std::string_view what, std::string_view fix) {
  raise<ValueError>("{}: {} does not fit in a 32-bit int ({} to {}){}{}", what, value,
                    std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), fix.empty() ? "" : "; ", fix);
}

}  // namespace tower::detail
