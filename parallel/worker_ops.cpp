// worker_all_reduce_start / worker_all_reduce_finish: their op definitions and CPU kernels,
// registered on first use.
#include "tower/parallel/worker_ops.h"

#include <mutex>

#include "tower/core/device.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/parallel/process_group.h"

namespace tower::parallel {

namespace {

constexpr char kStart[] = "worker_all_reduce_start";
constexpr char kFinish[] = "worker_all_reduce_finish";

// start: (n,) bucket -> () int64 ticket of its sum, queued to be made in place.
std::vector<TensorSpec> start_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  if (in.size() != 1 || in[0].shape.rank() != 1)
    raise<ShapeError>("{} takes one flat bucket (n,)", kStart);
  if (in[0].dtype != DType::float32 && in[0].dtype != DType::float64)
    raise<DTypeError>("{} sums float32 or float64, not {}", kStart, dtype_name(in[0].dtype));
  return {{Shape{}, DType::int64}};
}
void start_kernel(KernelContext& ctx) {
  const auto bucket = static_cast<int>(ctx.attrs().get_int("bucket"));
  const std::uint64_t ticket = ProcessGroup::world().start_all_reduce(
      ctx.inputs[0], {.what = ctx.attrs().get_string("what").c_str(), .bucket = bucket});
  ctx.outputs[0].data<std::int64_t>()[0] = static_cast<std::int64_t>(ticket);
}

// finish: (() ticket, (n,) bucket) -> (n,) the sum, a view of the bucket (summed in place; the bucket
// is an input so that the plan keeps its memory until the sum is there).
std::vector<TensorSpec> finish_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  if (in.size() != 2 || in[0].dtype != DType::int64) raise<ShapeError>("{} takes a start's ticket and bucket", kFinish);
  return {in[1]};
}
void finish_kernel(KernelContext& ctx) {
  ProcessGroup::world().finish(static_cast<std::uint64_t>(ctx.inputs[0].data<std::int64_t>()[0]));
}

}  // namespace

#ifdef TOWER_WITH_CUDA
// worker_ops_cuda.cpp: the kernels on GPUs (NCCL), and the communicator.
void register_worker_cuda_kernels(const char* start, const char* finish);
#else
std::string nccl_across_workers_unsupported(const std::string& device_name) {
  return fmt::format("its first device, {}, is not a GPU (tower was built without CUDA)", device(device_name).name());
}
void join_nccl_workers(ProcessGroup&, const std::string&) {
  raise<Error>("join_nccl_workers: tower was built without CUDA, so its workers sum through MPI");
}
#endif

namespace {

void register_worker_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_op({.name = kStart, .shape = start_shape, .early = true});
    register_op({.name = kFinish, .shape = finish_shape, .alias_input = 1, .alias_runs_kernel = true});
    register_kernel(kStart, DeviceKind::cpu, start_kernel);
    register_kernel(kFinish, DeviceKind::cpu, finish_kernel);
#ifdef TOWER_WITH_CUDA
    register_worker_cuda_kernels(kStart, kFinish);
#endif
  });
}

}  // namespace

SymbolicTensor worker_all_reduce(const SymbolicTensor& bucket, int index, WorkerTransport transport,
                                 const std::string& what) {
  register_worker_ops();
  Graph& graph = bucket.graph();
  // NCCL sums where the bucket is (its GPU); MPI on the host.
  Graph::DeviceScope on(graph, transport == WorkerTransport::nccl ? bucket.node()->device() : cpu_device().name());
  // The sum is made in the bucket's memory: a view of a constant or a variable (a zero gradient) is
  // copied first, or the sum would outlive the step in it.
  const Node* root = bucket.node();
  while (root->def().alias_input >= 0) root = root->inputs()[static_cast<std::size_t>(root->def().alias_input)].node();
  const SymbolicTensor mine = root->def().source == OpSource::none ? bucket : ops::scale(bucket, 1.0);
  const SymbolicTensor ticket = graph.add1(kStart, {mine}, {{"bucket", std::int64_t{index}}, {"what", what}});
  return graph.add1(kFinish, {ticket, mine});
}

}  // namespace tower::parallel
