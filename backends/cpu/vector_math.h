// Float loops the CPU kernels share where a running value would chain every step (a max, a sum) or
// libm's scalar exp would stop vectorization: softmax's lanes. They keep 16 partial results and use
// the branch-free exp of core/gate_activation.h. vector_math.cpp compiles them for baseline x86-64,
// AVX2+FMA and AVX-512 (TOWER_CPU_CLONES), with -fno-trapping-math (backends/cpu/CMakeLists.txt).
#pragma once

#include <cstdint>

// GCC's target_clones: a function compiled three times, the loader picks the widest the CPU has
// (the build itself targets baseline x86-64; OpenBLAS picks its own kernels at run time). Clang (the
// fuzz build) takes the baseline only: its target_clones does not take templates.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TOWER_CPU_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define TOWER_CPU_CLONES
#endif

namespace tower::cpu {

// The largest of x[0..n), -infinity when n is 0.
float max_of(const float* x, std::int64_t n);
// y[i] = exp(x[i] - shift) for i < n (within a few ulp of libm's expf; 0 where that is below the
// normal floats, e^-87.3); returns their sum.
float exp_shifted(const float* x, float shift, float* y, std::int64_t n);
// The sum of a[i] b[i] for i < n.
float dot(const float* a, const float* b, std::int64_t n);

}  // namespace tower::cpu
