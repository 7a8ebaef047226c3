// worker_all_reduce on GPUs (a CUDA build): the CUDA kernels of worker_all_reduce_start and _finish,
// which sum a bucket across the workers with NCCL, one rank per worker process, on a stream of its own;
// and the communicator's start (NCCL's unique id sent from worker 0 over MPI).
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <thread>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/cuda_device.h"
#include "tower/backends/cuda/nccl.h"
#include "tower/core/op_registry.h"
#include "tower/parallel/process_group.h"
#include "tower/parallel/worker_ops.h"

namespace tower::parallel {

namespace {

// The joined GPU and the stream NCCL's all-reduces run on (made by join_nccl_workers).
int g_ordinal = -1;
cudaStream_t g_stream = nullptr;
// Each start node's ticket in the step that runs (a GPU kernel's outputs are in device memory: the
// finish finds its start's ticket here, by the start's node).
std::mutex g_mutex;
std::map<const Node*, std::uint64_t> g_tickets;

struct Event {  // a cudaEvent_t without timing, destroyed with this
  cudaEvent_t event = nullptr;
  Event() { CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming)); }
  ~Event() {
    if (event) cudaEventDestroy(event);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

void start_cuda_kernel(KernelContext& ctx) {
  auto& gpu = static_cast<cuda::CudaDevice&>(ctx.device);
  if (!g_stream || gpu.ordinal() != g_ordinal)
    raise<ValueError>("worker_all_reduce on {}: this worker's NCCL communicator is on GPU {}; a worker sums its "
                      "buckets on its first device",
                      gpu.name(), g_ordinal);
  auto ready = std::make_shared<Event>();  // the bucket is computed: NCCL's stream waits for it
  CUDA_CHECK(cudaEventRecord(ready->event, gpu.stream()));
  const Tensor bucket = ctx.inputs[0];  // shares its memory: kept while the sum runs
  const auto index = static_cast<int>(ctx.attrs().get_int("bucket"));
  const std::uint64_t ticket = ProcessGroup::world().start_collective(
      {.what = ctx.attrs().get_string("what").c_str(), .bucket = index}, static_cast<std::int64_t>(bucket.nbytes()),
      [bucket, ready](const std::chrono::steady_clock::time_point& deadline) {
        CUDA_CHECK(cudaSetDevice(g_ordinal));
        CUDA_CHECK(cudaStreamWaitEvent(g_stream, ready->event, 0));
        cuda::nccl_workers_all_reduce_in_place(bucket.raw_data(), static_cast<std::size_t>(bucket.num_elements()),
                                               bucket.dtype(), g_stream);
        Event done;
        CUDA_CHECK(cudaEventRecord(done.event, g_stream));
        // NCCL's kernels wait on the GPU for the other ranks: poll, so that the deadline holds.
        for (cudaError_t state; (state = cudaEventQuery(done.event)) != cudaSuccess;) {
          if (state != cudaErrorNotReady) CUDA_CHECK(state);
          if (const std::string error = cuda::nccl_workers_error(); !error.empty())
            throw CollectiveError("NCCL's all-reduce failed: " + error);
          if (std::chrono::steady_clock::now() > deadline) {
            cuda::nccl_workers_abort();
            throw CollectiveError("every worker arrived, but NCCL's all-reduce did not finish by the deadline (its "
                                  "communicator is aborted); the job ends");
          }
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
      });
  std::lock_guard lock(g_mutex);
  g_tickets[&ctx.node] = ticket;
}

void finish_cuda_kernel(KernelContext& ctx) {
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(g_mutex);
    auto it = g_tickets.find(ctx.node.inputs()[0].node());
    if (it == g_tickets.end()) raise<ValueError>("{}: its start has not run in this step", ctx.node.name());
    ticket = it->second;
    g_tickets.erase(it);  // the node may go with its graph: no entry outlives the step
  }
  ProcessGroup::world().finish(ticket);  // the sum is in the bucket: later kernels on the stream see it
}

}  // namespace

void register_worker_cuda_kernels(const char* start, const char* finish) {
  register_kernel(start, DeviceKind::cuda, start_cuda_kernel);
  register_kernel(finish, DeviceKind::cuda, finish_cuda_kernel);
}

std::string nccl_across_workers_unsupported(const std::string& device_name) {
  Device& d = device(device_name);
  if (d.kind() != DeviceKind::cuda) return fmt::format("its first device, {}, is not a GPU", d.name());
  return cuda::nccl_unavailable();
}

void join_nccl_workers(ProcessGroup& group, const std::string& device_name) {
  auto& gpu = static_cast<cuda::CudaDevice&>(device(device_name));
  std::string id = group.rank() == 0 ? cuda::nccl_unique_id() : std::string();
  group.broadcast(id, 0, {.what = "NCCL unique id"});
  cuda::nccl_join_workers(id, group.size(), group.rank(), gpu.ordinal());
  g_ordinal = gpu.ordinal();
  int current = 0;
  CUDA_CHECK(cudaGetDevice(&current));
  CUDA_CHECK(cudaSetDevice(g_ordinal));
  CUDA_CHECK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaSetDevice(current));
}

}  // namespace tower::parallel
