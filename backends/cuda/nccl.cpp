// NCCL, loaded with dlopen, and the communicators of each list of GPUs.
#include "tower/backends/cuda/nccl.h"

#include <algorithm>
#include <mutex>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/nccl_cliques.h"
#include "tower/core/error.h"

#ifdef TOWER_WITH_NCCL
#include <dlfcn.h>
#include <nccl.h>
#endif

namespace tower::cuda {

#ifdef TOWER_WITH_NCCL

namespace {

// The NCCL functions tower calls, from libnccl.so.2. The library stays loaded until the process ends:
// NCCL's own threads may outlive any point where unloading it would be safe.
struct NcclLibrary {
  std::string unavailable;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommGetAsyncError) get_async_error = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;

  NcclLibrary() {
    void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      unavailable = fmt::format(
          "NCCL could not be loaded ({}). Install it (Debian: libnccl2; pip: nvidia-nccl-cu13, with its lib folder on "
          "LD_LIBRARY_PATH), or reduce on one device: MultiGpuOptions::cross_device_ops = "
          "CrossDeviceOps::reduction_to_one_device",
          dlerror());
      return;
    }
    const auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (!fn && unavailable.empty())
        unavailable = fmt::format("libnccl.so.2 has no {}: it is older than NCCL 2.4; install a newer NCCL", name);
    };
    load(comm_init_all, "ncclCommInitAll");
    load(all_reduce, "ncclAllReduce");
    load(error_string, "ncclGetErrorString");
    load(get_unique_id, "ncclGetUniqueId");
    load(comm_init_rank, "ncclCommInitRank");
    load(get_async_error, "ncclCommGetAsyncError");
    load(comm_abort, "ncclCommAbort");
  }

  void check(ncclResult_t status, const char* call) const {
    if (status != ncclSuccess) raise<DeviceError>("{} failed: {}", call, error_string(status));
  }
};

const NcclLibrary& library() {
  static const NcclLibrary lib;
  return lib;
}

// The communicators of each list of GPUs, one per rank (nccl_cliques.h). Never destroyed: a static
// destructor would call into NCCL after the CUDA runtime's exit teardown (and NCCL's own threads may
// still run); the process's end frees them. A failed lane aborts and evicts its group's clique.
CommunicatorCliques& cliques() {
  static auto* c = new CommunicatorCliques(CommunicatorCliques::Ops{
      .init =
          [](const std::vector<int>& ordinals) {
            std::vector<ncclComm_t> comms(ordinals.size());
            int current = 0;
            CUDA_CHECK(cudaGetDevice(&current));
            library().check(library().comm_init_all(comms.data(), static_cast<int>(ordinals.size()), ordinals.data()),
                            "ncclCommInitAll");
            CUDA_CHECK(cudaSetDevice(current));  // ncclCommInitAll visits every GPU of the list
            return std::vector<CommunicatorCliques::Comm>(comms.begin(), comms.end());
          },
      .abort = [](CommunicatorCliques::Comm comm) { library().comm_abort(static_cast<ncclComm_t>(comm)); }});
  return *c;
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    default: raise<DTypeError>("NCCL all_reduce sums float32 or float64, not {}", dtype_name(dtype));
  }
}

}  // namespace

const std::string& nccl_unavailable() { return library().unavailable; }

void nccl_all_reduce_sum(const std::string& group, const std::vector<int>& ordinals, int rank, const void* in,
                         void* out, std::size_t count, DType dtype, cudaStream_t stream) {
  if (!nccl_unavailable().empty()) raise<DeviceError>("all_reduce on GPUs: {}", nccl_unavailable());
  const ncclDataType_t type = nccl_type(dtype);
  const CommunicatorCliques::Lease lease = cliques().acquire(group, ordinals, rank);
  library().check(
      library().all_reduce(in, out, count, type, ncclSum, static_cast<ncclComm_t>(lease.comm()), stream),
      "ncclAllReduce");
}

void nccl_abort_group(const std::string& group) { cliques().abort(group); }
void nccl_reset_group(const std::string& group) { cliques().reset(group); }

namespace {
ncclComm_t g_workers = nullptr;  // the workers' communicator (one per process), never destroyed: NCCL's
                                 // threads may outlive the static destructors
const NcclLibrary& loaded(const char* what) {
  if (!nccl_unavailable().empty()) raise<DeviceError>("{} across workers: {}", what, nccl_unavailable());
  return library();
}
}  // namespace

std::string nccl_unique_id() {
  ncclUniqueId id;
  loaded("NCCL").check(library().get_unique_id(&id), "ncclGetUniqueId");
  return std::string(id.internal, sizeof id.internal);
}

void nccl_join_workers(const std::string& id, int size, int rank, int ordinal) {
  const NcclLibrary& lib = loaded("NCCL");
  if (g_workers) raise<ValueError>("nccl_join_workers: this process has joined its workers' communicator already");
  ncclUniqueId unique;
  if (id.size() != sizeof unique.internal)
    raise<ValueError>("nccl_join_workers: an id of {} bytes, NCCL's have {}", id.size(), sizeof unique.internal);
  std::copy(id.begin(), id.end(), unique.internal);
  int current = 0;
  CUDA_CHECK(cudaGetDevice(&current));
  CUDA_CHECK(cudaSetDevice(ordinal));
  const ncclResult_t status = lib.comm_init_rank(&g_workers, size, unique, rank);
  CUDA_CHECK(cudaSetDevice(current));
  lib.check(status, "ncclCommInitRank");
}

void nccl_workers_all_reduce_in_place(void* buffer, std::size_t count, DType dtype, cudaStream_t stream) {
  const NcclLibrary& lib = loaded("all_reduce");
  if (!g_workers) raise<ValueError>("all_reduce across workers: no NCCL communicator (nccl_join_workers first)");
  lib.check(lib.all_reduce(buffer, buffer, count, nccl_type(dtype), ncclSum, g_workers, stream), "ncclAllReduce");
}

std::string nccl_workers_error() {
  if (!g_workers || !nccl_unavailable().empty()) return "";
  ncclResult_t async = ncclSuccess;
  if (library().get_async_error(g_workers, &async) != ncclSuccess || async == ncclSuccess) return "";
  return library().error_string(async);
}

void nccl_workers_abort() {
  if (g_workers && nccl_unavailable().empty()) library().comm_abort(g_workers);
  g_workers = nullptr;
}

#else  // built without nccl.h

const std::string& nccl_unavailable() {
  static const std::string why =
      "tower was built without NCCL (CMake found no nccl.h); install NCCL's headers and rebuild, or reduce on one "
      "device: MultiGpuOptions::cross_device_ops = CrossDeviceOps::reduction_to_one_device";
  return why;
}

void nccl_all_reduce_sum(const std::string&, const std::vector<int>&, int, const void*, void*, std::size_t, DType,
                         cudaStream_t) {
  raise<DeviceError>("all_reduce on GPUs: {}", nccl_unavailable());
}
void nccl_abort_group(const std::string&) {}
void nccl_reset_group(const std::string&) {}
std::string nccl_unique_id() { raise<DeviceError>("NCCL across workers: {}", nccl_unavailable()); }
void nccl_join_workers(const std::string&, int, int, int) {
  raise<DeviceError>("NCCL across workers: {}", nccl_unavailable());
}
void nccl_workers_all_reduce_in_place(void*, std::size_t, DType, cudaStream_t) {
  raise<DeviceError>("all_reduce across workers: {}", nccl_unavailable());
}
std::string nccl_workers_error() { return ""; }
void nccl_workers_abort() {}

#endif

}  // namespace tower::cuda
