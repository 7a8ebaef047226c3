// bench_ops: the machine's sgemm peak, then the GFLOP/s of the matmul and conv2d shapes of Keras's
// mnist_mlp and mnist_cnn run through tower's ops and Executor on cpu:0, as a share of that peak.
//
//   bench_ops [--repeats N] [--batch B] [--dtype float32|bfloat16|float16]
//
// --dtype runs the layers' ops (and a square matmul) on tensors of that dtype; the peak stays float32's.
// Every timing is the median of N steady-state runs after two warm-up runs. TOWER_CPU_THREADS sets
// cpu:0's threads (default: all hardware threads).
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tower/backends/cpu/cpu_device.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"

namespace {

using namespace tower;

int g_repeats = 15;
DType g_dtype = DType::float32;  // of the layers' operands

// Median wall time of `run` in seconds, after two warm-up calls.
double median_seconds(const std::function<void()>& run) {
  run();
  run();
  std::vector<double> times;
  for (int i = 0; i < g_repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Tensor random(const Shape& shape, std::uint64_t seed) { return random_uniform(shape, -1.0, 1.0, seed); }

// random(shape, seed) in g_dtype (rounded once to a half dtype).
template <typename H>
Tensor rounded(const Tensor& wide) {
  std::vector<H> values;
  for (float v : wide.to_vector<float>()) values.push_back(H(v));
  return Tensor::from_vector<H>(wide.shape(), values);
}
Tensor random_operand(const Shape& shape, std::uint64_t seed) {
  const Tensor wide = random(shape, seed);
  if (g_dtype == DType::bfloat16) return rounded<bfloat16_t>(wide);
  if (g_dtype == DType::float16) return rounded<float16_t>(wide);
  return wide;
}

// Times one op node run as a plan target (so no fetched copy is timed) with its inputs fed.
double time_node(Node* node, const FeedMap& feeds) {
  Executor executor(cpu_device(0));
  executor.plan(feeds, {}, {node});  // compile outside the timing
  return median_seconds([&] { executor.run(feeds, {}, {node}); });
}

struct Row {
  std::string model, layer, pass;
  double flops, seconds;
  bool conv;
};

// Forward, backward-data and backward-filter matmuls of a Dense layer (batch, in) -> (batch, out).
void bench_dense(std::vector<Row>& rows, const std::string& model, std::int64_t batch, std::int64_t in,
                 std::int64_t out) {
  Graph g;
  auto x = g.placeholder({batch, in}, g_dtype), w = g.placeholder({in, out}, g_dtype),
       dy = g.placeholder({batch, out}, g_dtype);
  FeedMap feeds{{x, random_operand({batch, in}, 1)}, {w, random_operand({in, out}, 2)},
                {dy, random_operand({batch, out}, 3)}};
  const double flops = 2.0 * static_cast<double>(batch * in * out);
  const std::string layer = fmt::format("Dense {}->{}", in, out);
  rows.push_back({model, layer, "forward", flops, time_node(ops::matmul(x, w).node(), feeds), false});
  rows.push_back(
      {model, layer, "backward data", flops, time_node(ops::matmul(dy, w, false, true).node(), feeds), false});
  rows.push_back(
      {model, layer, "backward filter", flops, time_node(ops::matmul(x, dy, true, false).node(), feeds), false});
}

// Forward, backward-data and backward-filter of a valid 3x3 Conv2D on (batch, hw, hw, c_in).
void bench_conv(std::vector<Row>& rows, const std::string& model, std::int64_t batch, std::int64_t hw,
                std::int64_t c_in, std::int64_t c_out) {
  const std::int64_t out = hw - 2;
  Graph g;
  auto x = g.placeholder({batch, hw, hw, c_in}, g_dtype), k = g.placeholder({3, 3, c_in, c_out}, g_dtype);
  auto dy = g.placeholder({batch, out, out, c_out}, g_dtype);
  FeedMap feeds{{x, random_operand({batch, hw, hw, c_in}, 4)},
                {k, random_operand({3, 3, c_in, c_out}, 5)},
                {dy, random_operand({batch, out, out, c_out}, 6)}};
  const double flops = 2.0 * static_cast<double>(batch * out * out * 9 * c_in * c_out);
  const std::string layer = fmt::format("Conv2D 3x3 {}->{} on {}x{}", c_in, c_out, hw, hw);
  ops::Conv2DArgs args;
  rows.push_back({model, layer, "forward", flops, time_node(ops::conv2d(x, k, args).node(), feeds), true});
  rows.push_back(
      {model, layer, "backward data", flops, time_node(ops::conv2d_backward_data(dy, k, x, args).node(), feeds), true});
  rows.push_back({model, layer, "backward filter", flops,
                  time_node(ops::conv2d_backward_filter(x, dy, k, args).node(), feeds), true});
}

// Forward, backward-data and backward-filter of a valid 3x3x3 Conv3D on (batch, dhw, dhw, dhw, c_in).
void bench_conv3d(std::vector<Row>& rows, std::int64_t batch, std::int64_t dhw, std::int64_t c_in, std::int64_t c_out) {
  const std::int64_t out = dhw - 2;
  const Shape x_shape{batch, dhw, dhw, dhw, c_in}, k_shape{3, 3, 3, c_in, c_out}, dy_shape{batch, out, out, out, c_out};
  Graph g;
  auto x = g.placeholder(x_shape, g_dtype), k = g.placeholder(k_shape, g_dtype), dy = g.placeholder(dy_shape, g_dtype);
  FeedMap feeds{{x, random_operand(x_shape, 9)}, {k, random_operand(k_shape, 10)}, {dy, random_operand(dy_shape, 11)}};
  const double flops = 2.0 * static_cast<double>(batch * out * out * out * 27 * c_in * c_out);
  const std::string layer = fmt::format("Conv3D 3x3x3 {}->{} on {}^3, batch {}", c_in, c_out, dhw, batch);
  ops::Conv3DArgs args;
  rows.push_back({"volume", layer, "forward", flops, time_node(ops::conv3d(x, k, args).node(), feeds), false});
  rows.push_back({"volume", layer, "backward data", flops,
                  time_node(ops::conv3d_backward_data(dy, k, x, args).node(), feeds), false});
  rows.push_back({"volume", layer, "backward filter", flops,
                  time_node(ops::conv3d_backward_filter(x, dy, k, args).node(), feeds), false});
}

void print_rows(const std::vector<Row>& rows, double peak) {
  for (const Row& r : rows) {
    const double rate = r.flops / r.seconds / 1e9;
    fmt::print("| {} | {} | {} | {:.1f} | {:.3f} | {:.1f} | {:.0f}% |\n", r.model, r.layer, r.pass, r.flops / 1e6,
               r.seconds * 1e3, rate, 100 * rate / peak);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 128;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      g_repeats = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc && std::strcmp(argv[i + 1], "float32") == 0)
      g_dtype = DType::float32, ++i;
    else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc && std::strcmp(argv[i + 1], "bfloat16") == 0)
      g_dtype = DType::bfloat16, ++i;
    else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc && std::strcmp(argv[i + 1], "float16") == 0)
      g_dtype = DType::float16, ++i;
    else {
      std::fprintf(stderr, "usage: %s [--repeats N] [--batch B] [--dtype float32|bfloat16|float16]\n", argv[0]);
      return 2;
    }
  }
  try {
    auto& cpu = static_cast<CpuDevice&>(cpu_device(0));  // registers the backend (OpenBLAS set to 1 thread)
    const int threads = cpu.pool().size();

    // The peak: a large square sgemm, one OpenBLAS call on one thread, then split over cpu:0's pool
    // by tower's matmul kernel. The pooled one is measured before and after the layers and the
    // better median kept, so that a noisy neighbour during one of them does not flatter the layers.
    const std::int64_t n = 1536;
    const double gemm_flops = 2.0 * static_cast<double>(n * n * n);
    Tensor a = random({n, n}, 7), b = random({n, n}, 8), c({n, n}, DType::float32);
    openblas_set_num_threads(1);
    const double one_thread =
        gemm_flops / median_seconds([&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(n),
                      static_cast<int>(n), 1.0f, a.data<float>(), static_cast<int>(n), b.data<float>(),
                      static_cast<int>(n), 0.0f, c.data<float>(), static_cast<int>(n));
        }) /
        1e9;
    Graph g;
    auto pa = g.placeholder({n, n}), pb = g.placeholder({n, n});
    Node* square = ops::matmul(pa, pb).node();
    auto pooled_rate = [&] { return gemm_flops / time_node(square, {{pa, a}, {pb, b}}) / 1e9; };
    double pooled = pooled_rate();

    std::vector<Row> rows;
    bench_dense(rows, "mnist_mlp", batch, 784, 512);
    bench_dense(rows, "mnist_mlp", batch, 512, 512);
    bench_dense(rows, "mnist_mlp", batch, 512, 10);
    const std::size_t first_conv_data = rows.size() + 1;  // forward, backward data, backward filter
    bench_conv(rows, "mnist_cnn", batch, 28, 1, 32);
    bench_conv(rows, "mnist_cnn", batch, 26, 32, 64);
    bench_dense(rows, "mnist_cnn", batch, 9216, 128);
    bench_dense(rows, "mnist_cnn", batch, 128, 10);
    // Issue 18's 3-D convolutions (im2col + GEMM as conv2d): two shapes of a small volumetric net.
    std::vector<Row> volume;
    bench_conv3d(volume, 8, 16, 4, 16);
    bench_conv3d(volume, 8, 14, 16, 32);

    pooled = std::max(pooled, pooled_rate());
    const double peak = pooled;
    // The same square matmul in the layers' dtype (a half one: the CPU's half adapter, oneDNN's
    // bfloat16 primitives where the processor has them).
    double square_rate = pooled;
    if (g_dtype != DType::float32) {
      Graph gh;
      auto ha = gh.placeholder({n, n}, g_dtype), hb = gh.placeholder({n, n}, g_dtype);
      square_rate = gemm_flops /
                    time_node(ops::matmul(ha, hb).node(), {{ha, random_operand({n, n}, 7)}, {hb, random_operand({n, n}, 8)}}) /
                    1e9;
    }

    fmt::print("bench_ops: cpu:0 with {} threads, {}, batch {}, median of {} runs\n\n", threads, dtype_name(g_dtype),
               batch, g_repeats);
    fmt::print("sgemm {}x{}x{}, OpenBLAS, 1 thread:        {:7.1f} GFLOP/s\n", n, n, n, one_thread);
    fmt::print("sgemm {}x{}x{}, tower matmul, {} threads:  {:7.1f} GFLOP/s  (the peak below)\n", n, n, n, threads,
               pooled);
    if (g_dtype != DType::float32)
      fmt::print("matmul {}x{}x{} in {}, {} threads:  {:7.1f} GFLOP/s\n", n, n, n, dtype_name(g_dtype), threads,
                 square_rate);
    fmt::print("\n");
    fmt::print("| model | layer | pass | MFLOP | ms | GFLOP/s | % of peak |\n");
    fmt::print("|---|---|---|---:|---:|---:|---:|\n");
    double conv_flops = 0, conv_seconds = 0, layer_flops = 0, layer_seconds = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const double rate = r.flops / r.seconds / 1e9;
      fmt::print("| {} | {} | {} | {:.1f} | {:.3f} | {:.1f} | {:.0f}% |\n", r.model, r.layer, r.pass, r.flops / 1e6,
                 r.seconds * 1e3, rate, 100 * rate / peak);
      if (r.conv) conv_flops += r.flops, conv_seconds += r.seconds;
      layer_flops += r.flops, layer_seconds += r.seconds;
      if (r.conv && (i + 1 == rows.size() || rows[i + 1].layer != r.layer)) {
        const double combined = layer_flops / layer_seconds / 1e9;
        fmt::print("| {} | {} | fwd+bwd | {:.1f} | {:.3f} | {:.1f} | {:.0f}% |\n", r.model, r.layer, layer_flops / 1e6,
                   layer_seconds * 1e3, combined, 100 * combined / peak);
      }
      if (i + 1 == rows.size() || rows[i + 1].layer != r.layer) layer_flops = layer_seconds = 0;
    }
    const double conv_rate = conv_flops / conv_seconds / 1e9;
    fmt::print(
        "\nconv2d fwd+bwd combined (both mnist_cnn convolutions, forward + backward data + backward filter): "
        "{:.1f} GFLOP/s = {:.0f}% of the sgemm peak\n",
        conv_rate, 100 * conv_rate / peak);
    // Training never computes the first layer's backward data (the images need no gradient).
    const Row& unused = rows[static_cast<std::size_t>(first_conv_data)];
    const double train_rate = (conv_flops - unused.flops) / (conv_seconds - unused.seconds) / 1e9;
    fmt::print(
        "conv2d as trained (without the first layer's backward data): {:.1f} GFLOP/s = {:.0f}% of the sgemm "
        "peak\n",
        train_rate, 100 * train_rate / peak);
    fmt::print("\n3-D convolutions (issue 18), valid 3x3x3:\n\n| model | layer | pass | MFLOP | ms | GFLOP/s | % of peak |\n"
               "|---|---|---|---:|---:|---:|---:|\n");
    print_rows(volume, peak);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_ops: %s\n", e.what());
    return 1;
  }
}
