// Bad input, kind "clear messages and nothing silently wrong" (docs/refusals.md): compressed IDX bombs,
// images of the wrong size, damaged BackupAndRestore metadata, class_weight, learning rates, empty
// arrays, checkpoints past --epochs.
#include "tests/bad_input/bad_input.h"
