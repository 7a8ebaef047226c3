// Whole-step CUDA graphs, the CUDA half (core/step_graph.h is the other): a plan's step recorded by
// stream capture of its GPU's compute stream and replayed with one cudaGraphLaunch, and the ordered
// uploads of the plan's two feed blocks on a stream of their own. docs/engine.md, "Whole-step CUDA graphs".
#pragma once

#include <memory>

#include "tower/core/step_graph.h"

namespace tower::cuda {

class CudaDevice;

// A recorder for one plan on `gpu`: cudaStreamBeginCapture (thread-local mode: another thread's
// unsafe calls, such as a data loader's cudaMalloc, do not break the capture) ... cudaStreamEndCapture,
// cudaGraphInstantiate. What kernels allocate while recording comes from a pool the recorder owns
// (CudaDevice::set_capture_pool), so that no other allocation reuses memory a replay writes.
std::unique_ptr<StepRecorder> make_step_recorder(CudaDevice& gpu);

}  // namespace tower::cuda
