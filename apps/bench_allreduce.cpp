// bench_allreduce: the sum of a float32 buffer across the workers of an MPI job, through tower's process
// group (parallel::ProcessGroup: the handshake, then reduce-scatter and all-gather in rank order, on
// its communication thread) and through MPI_Allreduce alone, from 1 KB to 64 MB. Rank 0 prints a
// markdown table (median time of the repetitions; algbw = bytes / time).
//
//   mpirun -np 2 build/apps/bench_allreduce [max_megabytes]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tower/parallel/process_group.h"

using namespace tower;
using Clock = std::chrono::steady_clock;

namespace {

template <typename F>
double median_seconds(int repetitions, F&& f) {
  std::vector<double> times;
  for (int k = 0; k < repetitions; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    f();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  auto& group = parallel::ProcessGroup::world();  // initializes MPI
  const double max_mb = argc > 1 ? std::atof(argv[1]) : 64.0;
  if (group.rank() == 0)
    std::printf("| bytes | tower µs | tower GB/s | MPI_Allreduce µs | MPI_Allreduce GB/s | tower / MPI |\n"
                "|---:|---:|---:|---:|---:|---:|\n");
  for (std::size_t bytes = 1024; bytes <= static_cast<std::size_t>(max_mb * (1 << 20)); bytes *= 4) {
    const auto n = static_cast<std::int64_t>(bytes / sizeof(float));
    Tensor buffer = Tensor::full({n}, 1.0);
    std::vector<float> in(static_cast<std::size_t>(n), 1.0f), out(static_cast<std::size_t>(n));
    const int repetitions = bytes <= (1 << 20) ? 200 : bytes <= (16 << 20) ? 20 : 6;
    group.all_reduce_sum(buffer, {.what = "warm-up"});
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double tower_s = median_seconds(repetitions, [&] { group.all_reduce_sum(buffer, {.what = "bench"}); });
    const double mpi_s = median_seconds(repetitions, [&] {
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    if (group.rank() == 0)
      std::printf("| %zu | %.1f | %.2f | %.1f | %.2f | %.2f× |\n", bytes, tower_s * 1e6, bytes / tower_s / 1e9,
                  mpi_s * 1e6, bytes / mpi_s / 1e9, tower_s / mpi_s);
  }
  return 0;
}
