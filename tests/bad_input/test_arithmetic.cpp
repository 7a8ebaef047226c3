// Bad input, kind "sizes, counts, ratios and offsets" (docs/refusals.md): huge but parseable values are
// refused with a named error instead of overflowing; device counts beyond the machine are refused and
// planning stays near-linear in the device count.
#include "tests/bad_input/bad_input.h"
