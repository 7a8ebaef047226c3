// Process-wide switches that change how kernels compute or launch, as tf.config does: TF32 for float32
// GEMMs and convolutions on GPUs, and whole-step CUDA graphs. Read by the backends at run time.
#pragma once

#include <cstdint>

namespace tower::config {

// tf.config.experimental.enable_tensor_float_32_execution: when on, float32 matrix multiplications
// (cuBLAS, cuBLASLt) and cuDNN convolutions on GPUs may round their inputs to TF32 (10 mantissa bits)
// on tensor cores: several times faster on Ampere and later, with relative errors near 1e-3 instead of
// 1e-6. Off by default (unlike TensorFlow): float32 stays exact to float32 rounding, as on the CPU.
// The CPU kernels never use TF32. Takes effect for the next kernel call; a plan replaying a CUDA graph
// captures its step again.
void enable_tensor_float_32_execution(bool enabled);
bool tensor_float_32_execution_enabled();

// Whole-step CUDA graphs (docs/engine.md, "Whole-step CUDA graphs"): a plan's steady-state step on one
// GPU is captured once and replayed with one launch. On by default; the environment variable
// TOWER_CUDA_GRAPHS=0 turns it off at start, this call at any time (a plan then runs its next steps
// eagerly, and captures again when it is turned back on).
void enable_cuda_graphs(bool enabled);
bool cuda_graphs_enabled();

// Counts the changes of the switches above: a captured step records the value it was captured under
// and is captured again when it differs (a switch changes what the kernels would launch).
std::uint64_t generation();

}  // namespace tower::config
