// Private to the CPU backend: bfloat16 GEMMs and convolutions through oneDNN's native bfloat16
// primitives (AVX512_BF16 or AMX), which the half adapter (half_kernels.cpp) asks before it widens a
// step's operands to float32.
#pragma once

#include <cstdint>

#include "tower/core/op_registry.h"

namespace tower::cpu::onednn_bf16 {

// Runs ctx's step in bfloat16 and answers true when it is one of matmul, batch_matmul, dense, conv2d,
// conv2d_backward_data or conv2d_backward_filter with every operand and output bfloat16, available()
// holds and oneDNN has a non-reference primitive for the shape: products accumulated in float32 (dense's
// bias and ReLU added there too), each output rounded to bfloat16 once, as the widening path does but
// in another summation order. False, having written nothing, for every other step: the caller widens.
bool run(KernelContext& ctx);

// Whether run can answer true at all: oneDNN is built in, neither TOWER_ONEDNN=0 nor
// TOWER_ONEDNN_BF16=0 is set, set_enabled(false) was not called, and the processor has bfloat16
// instructions (AVX512_BF16 or AMX) as oneDNN sees it (DNNL_MAX_CPU_ISA may hide them). oneDNN would
// emulate bfloat16 on a plain AVX-512 core, slower than widening: then this is false.
bool available();

// The ISA oneDNN runs on, e.g. "avx512_core_bf16" ("none" without oneDNN); for tests and benchmarks.
const char* isa_name();

// Tests: false makes run answer false (the widening path runs), to compare the two paths.
void set_enabled(bool enabled);

// Steps run here since the process started (tests check that the path they compare really ran).
std::int64_t steps_run();

}  // namespace tower::cpu::onednn_bf16
