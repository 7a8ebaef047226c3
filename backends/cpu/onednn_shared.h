// Private to the CPU backend's oneDNN files (onednn.cpp, onednn_bf16.cpp), built only with oneDNN
// (TOWER_WITH_ONEDNN): the one CPU engine and each pool thread's stream and reusable buffers, so both
// paths share them (defined in onednn.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include <dnnl.hpp>

namespace tower::cpu::onednn {

// Never destroyed: pool threads' streams may outlive a static engine at exit.
dnnl::engine& cpu_engine();
// The calling thread's stream on cpu_engine().
dnnl::stream& thread_stream();
// The calling thread's buffer `which` (0: primitives' scratchpads, 1: a kernel in a primitive's
// layout) of at least `bytes`, kept across calls (it only grows): a steady step allocates nothing.
std::uint8_t* thread_buffer(int which, std::size_t bytes);

}  // namespace tower::cpu::onednn
