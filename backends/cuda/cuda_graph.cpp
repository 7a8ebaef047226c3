// Whole-step CUDA graphs: stream capture of a plan's step on its GPU's compute stream, replay with one
// cudaGraphLaunch, and the feed blocks' uploads ordered by events (cuda_graph.h; core/plan_graphs.cpp
// decides when). Every CUDA object here has one owner that destroys it.
#include "tower/backends/cuda/cuda_graph.h"

#include <cuda_runtime.h>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/cuda_device.h"

namespace tower::cuda {

namespace {

// An instantiated graph, replayed on the GPU's compute stream.
class CudaStepGraph final : public StepGraph {
 public:
  CudaStepGraph(CudaDevice& gpu, cudaGraphExec_t exec) : gpu_(gpu), exec_(exec) {}
  // Waits for the stream first: a replay may still be running (destroyed rarely: a new plan, a switch).
  ~CudaStepGraph() override {
    cudaSetDevice(gpu_.ordinal());  // never throws: a destructor
    cudaStreamSynchronize(gpu_.stream());
    cudaGraphExecDestroy(exec_);
  }
  CudaStepGraph(const CudaStepGraph&) = delete;
  CudaStepGraph& operator=(const CudaStepGraph&) = delete;

  void replay() override {
    gpu_.make_current();
    CUDA_CHECK(cudaGraphLaunch(exec_, gpu_.stream()));
  }

 private:
  CudaDevice& gpu_;
  cudaGraphExec_t exec_;
};

// A captured graph until it is instantiated (cudaGraphDestroy either way).
struct GraphOwner {
  cudaGraph_t graph = nullptr;
  ~GraphOwner() {
    if (graph) cudaGraphDestroy(graph);
  }
};

class CudaStepRecorder final : public StepRecorder {
 public:
  explicit CudaStepRecorder(CudaDevice& gpu) : gpu_(gpu) {
    gpu_.make_current();
    CUDA_CHECK(cudaStreamCreateWithFlags(&upload_stream_, cudaStreamNonBlocking));
    for (int slot = 0; slot < 2; ++slot) {
      CUDA_CHECK(cudaEventCreateWithFlags(&uploaded_[slot], cudaEventDisableTiming));
      CUDA_CHECK(cudaEventCreateWithFlags(&read_[slot], cudaEventDisableTiming));
    }
  }
  // The plan destroys its graphs (which wait for the stream) before the recorder; what the uploads
  // still do is waited for here, then the graphs' scratch memory goes back to the device's cache.
  ~CudaStepRecorder() override {
    cudaSetDevice(gpu_.ordinal());
    cudaStreamSynchronize(upload_stream_);
    cudaStreamSynchronize(gpu_.stream());
    cudaStreamDestroy(upload_stream_);
    for (int slot = 0; slot < 2; ++slot) {
      cudaEventDestroy(uploaded_[slot]);
      cudaEventDestroy(read_[slot]);
    }
    gpu_.release_capture_pool(pool_);
  }
  CudaStepRecorder(const CudaStepRecorder&) = delete;
  CudaStepRecorder& operator=(const CudaStepRecorder&) = delete;

  void begin() override {
    gpu_.make_current();
    gpu_.set_capture_pool(&pool_);
    const cudaError_t status = cudaStreamBeginCapture(gpu_.stream(), cudaStreamCaptureModeThreadLocal);
    if (status != cudaSuccess) {
      gpu_.set_capture_pool(nullptr);
      CUDA_CHECK(status);
    }
  }

  std::unique_ptr<StepGraph> end() override {
    GraphOwner captured;
    const cudaError_t status = cudaStreamEndCapture(gpu_.stream(), &captured.graph);
    gpu_.set_capture_pool(nullptr);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();  // capture errors are not sticky: clear it for the eager step that follows
      raise<DeviceError>("{}: cudaStreamEndCapture: {} ({}); a kernel of the step made a call that stream capture "
                         "does not allow (a host wait, a synchronous copy, cudaFree)",
                         gpu_.name(), cudaGetErrorName(status), cudaGetErrorString(status));
    }
    cudaGraphExec_t exec = nullptr;
    if (const cudaError_t s = cudaGraphInstantiate(&exec, captured.graph, 0); s != cudaSuccess) {
      (void)cudaGetLastError();
      raise<DeviceError>("{}: cudaGraphInstantiate: {} ({})", gpu_.name(), cudaGetErrorName(s), cudaGetErrorString(s));
    }
    // One upload per graph to the GPU now rather than at its first launch (CUDA >= 11.1).
    if (cudaGraphUpload(exec, gpu_.stream()) != cudaSuccess) (void)cudaGetLastError();
    return std::make_unique<CudaStepGraph>(gpu_, exec);
  }

  void abort() noexcept override {
    cudaSetDevice(gpu_.ordinal());
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(gpu_.stream(), &capturing) == cudaSuccess && capturing != cudaStreamCaptureStatusNone) {
      cudaGraph_t graph = nullptr;
      cudaStreamEndCapture(gpu_.stream(), &graph);  // invalidated captures give no graph
      if (graph) cudaGraphDestroy(graph);
    }
    (void)cudaGetLastError();
    gpu_.set_capture_pool(nullptr);
  }

  void wait_host_slot(int slot) override {
    if (uploads_[slot]) CUDA_CHECK(cudaEventSynchronize(uploaded_[slot]));
  }

  // On the upload stream: after the last step that read this slot's device block, then the compute
  // stream's later work after the copy. The step before (the other slot) may still run meanwhile.
  void upload(int slot, void* dst, const void* src, std::size_t bytes) override {
    gpu_.make_current();
    if (reads_[slot]) CUDA_CHECK(cudaStreamWaitEvent(upload_stream_, read_[slot], 0));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, upload_stream_));
    CUDA_CHECK(cudaEventRecord(uploaded_[slot], upload_stream_));
    CUDA_CHECK(cudaStreamWaitEvent(gpu_.stream(), uploaded_[slot], 0));
    uploads_[slot] = true;
  }

  void step_queued(int slot) override {
    gpu_.make_current();
    CUDA_CHECK(cudaEventRecord(read_[slot], gpu_.stream()));
    reads_[slot] = true;
  }

 private:
  CudaDevice& gpu_;
  CapturePool pool_;
  cudaStream_t upload_stream_ = nullptr;
  cudaEvent_t uploaded_[2] = {nullptr, nullptr};  // a slot's last upload (the host block is free after it)
  cudaEvent_t read_[2] = {nullptr, nullptr};      // the last step that read a slot's device block
  bool uploads_[2] = {false, false}, reads_[2] = {false, false};  // recorded once (unrecorded: nothing to wait for)
};

}  // namespace

std::unique_ptr<StepRecorder> make_step_recorder(CudaDevice& gpu) { return std::make_unique<CudaStepRecorder>(gpu); }

}  // namespace tower::cuda
