// Bad input, kind "files that never lie" (docs/refusals.md): saves that hit the file-size limit, read-only
// targets, destinations checked before training, non-finite weights, checksums of tower's own files.
#include "tests/bad_input/bad_input.h"
