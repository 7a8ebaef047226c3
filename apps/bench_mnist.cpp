// Training throughput of the mnist_mlp and mnist_cnn example models: samples/s of fit() and the
// process's peak resident memory (with --device cuda:0, the GPU's peak memory too), for comparison
// with scripts/bench/mnist_torch.py and mnist_keras.py (scripts/bench/run_mnist.sh runs all three on
// CPUs, scripts/gpu/bench.sh on a GPU; docs/benchmarks.md holds the results).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>

#include "apps/device_args.h"
#include "apps/mnist_models.h"
#include "tower/core/config.h"
#include "tower/core/random.h"
#include "tower/io/dataset.h"
#include "tower/io/datasets.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/multi_gpu_model.h"

using namespace tower;

namespace {

// The first `rows` samples of a float32 array.
Tensor head(const Tensor& t, std::int64_t rows) {
  auto dims = t.shape().dims();
  dims[0] = rows;
  const float* p = t.data<float>();
  return Tensor::from_vector<float>(Shape(dims), std::vector<float>(p, p + Shape(dims).num_elements()));
}

}  // namespace

int main(int argc, char** argv) try {
  namespace po = boost::program_options;
  std::string kind = "mlp", data = io::kFashionMnistDir, input = "arrays", device_name = "cpu:0";
  std::vector<std::string> towers;
  std::vector<std::string> ratio_args;  // integers, or "auto"
  std::vector<std::string> slowdowns;   // DEVICE=FACTOR
  std::string cross_device_ops = "auto";
  std::string dtype_policy = "float32";
  std::int64_t batch_size = 128, samples = 0;
  int epochs = 1, virtual_gpus = 0;
  int cuda_graphs = config::cuda_graphs_enabled() ? 1 : 0, tf32 = 0;
  po::options_description options("Usage: bench_mnist [options]\nOptions");
  options.add_options()("help,h", "show this help")("model", po::value(&kind)->default_value(kind), "mlp or cnn")(
      "batch-size", po::value(&batch_size)->default_value(batch_size), "samples per step")(
      "samples", po::value(&samples)->default_value(samples), "training samples per epoch (0 = all)")(
      "epochs", po::value(&epochs)->default_value(epochs), "timed epochs")(
      "data", po::value(&data)->default_value(data), "directory with the IDX files")(
      "input", po::value(&input)->default_value(input),
      "arrays (fit(x, y)) or dataset (fit on io::Dataset from_tensor_slices.shuffle.batch.prefetch, into pinned "
      "memory on a GPU)")("device", po::value(&device_name)->default_value(device_name),
                          "where the model's weights live and it trains: cpu:0, cuda:0, ...")(
      "towers", po::value(&towers)->multitoken(),
      "train through parallel::multi_gpu_model on these devices (cpu:0 cpu:1, cuda:0 cuda:1); the weights stay on "
      "--device")("ratios", po::value(&ratio_args)->multitoken(),
                  "with --towers: each device's share of a batch, or auto (measured in a first, untimed epoch)")(
      "slowdown", po::value(&slowdowns)->multitoken(),
      "DEVICE=FACTOR: run DEVICE FACTOR times slower (a test throttle for uneven devices), e.g. cpu:1=2")(
      "virtual-gpus", po::value(&virtual_gpus)->default_value(virtual_gpus),
      "split GPU 0 into N logical GPUs first (towers on one GPU: --towers cuda:0 cuda:1 ...)")(
      "cross-device-ops", po::value(&cross_device_ops)->default_value(cross_device_ops), apps::kCrossDeviceOpsHelp)(
      "cuda-graphs", po::value(&cuda_graphs)->default_value(cuda_graphs),
      "1: replay each steady-state step on a GPU as a CUDA graph; 0: launch its kernels one by one (to compare; "
      "TOWER_CUDA_GRAPHS=0 sets the default)")(
      "tf32", po::value(&tf32)->default_value(tf32), "1: float32 GEMMs and convolutions on a GPU in TF32")(
      "dtype-policy", po::value(&dtype_policy)->default_value(dtype_policy),
      "global dtype policy of the layers: float32, mixed_float16 or mixed_bfloat16 (mixed precision)");
  if (!apps::parse_command_line(options, argc, argv)) return 0;
  if (kind != "mlp" && kind != "cnn") throw ValueError("--model must be mlp or cnn, got " + kind);
  if (input != "arrays" && input != "dataset") throw ValueError("--input must be arrays or dataset, got " + input);

  config::enable_cuda_graphs(cuda_graphs != 0);
  config::enable_tensor_float_32_execution(tf32 != 0);
  mixed_precision::set_global_policy(dtype_policy);  // before the model, as Keras's guide sets it
  apps::split_gpu0(virtual_gpus);
  auto [train, test] = io::load_mnist(data);
  Shape shape = kind == "mlp" ? Shape{-1, 784} : Shape{-1, 28, 28, 1};
  Tensor x = io::to_float(train.first, 1.0 / 255, shape);
  Tensor y = io::to_categorical(train.second, 10);
  if (samples > 0 && samples < x.shape()[0]) {
    x = head(x, samples);
    y = head(y, samples);
  }
  const std::int64_t n = x.shape()[0];

  set_random_seed(1);
  Device& where = device(device_name);
  Sequential inner = [&] {
    DefaultDeviceScope scope(where);
    return apps::mnist_model(kind);
  }();
  const bool auto_ratios = ratio_args.size() == 1 && ratio_args[0] == "auto";
  std::vector<std::int64_t> ratios;
  if (!auto_ratios)
    for (const auto& r : ratio_args) ratios.push_back(std::stoll(r));
  apps::apply_slowdowns(slowdowns);
  Model model = towers.empty()
                    ? Model(inner)
                    : parallel::multi_gpu_model(inner, towers,
                                                {.ratios = ratios,
                                                 .auto_ratios = auto_ratios,
                                                 .cross_device_ops = apps::cross_device_ops(cross_device_ops)});
  if (kind == "mlp")
    model.compile(optimizers::RMSprop(), "categorical_crossentropy", {"accuracy"});
  else
    model.compile(optimizers::Adadelta(1.0), "categorical_crossentropy", {"accuracy"});
  // Warm-up: compile the plans of a full and of the last partial batch before timing.
  model.train_on_batch({head(x, batch_size)}, {head(y, batch_size)});
  if (n % batch_size) model.train_on_batch({head(x, n % batch_size)}, {head(y, n % batch_size)});
  if (auto_ratios) model.fit(x, y, {.batch_size = batch_size, .epochs = 1, .verbose = 2});  // measures, rebalances
  auto start = std::chrono::steady_clock::now();
  auto history = input == "arrays" ? model.fit(x, y, {.batch_size = batch_size, .epochs = epochs, .verbose = 0})
                                   : model.fit(io::Dataset::from_tensor_slices({x}, {y})
                                                   .shuffle(io::Dataset::kAll, 1)
                                                   .batch(batch_size)
                                                   .prefetch(2, io::pinned_memory()),
                                               {.epochs = epochs, .verbose = 0});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::string on = where.name();
  if (!towers.empty())
    on = fmt::format("towers {}{}", fmt::join(towers, " "),
                     ratio_args.empty() ? "" : fmt::format(" ratios {}", fmt::join(ratio_args, ":")));
  if (!slowdowns.empty()) on += fmt::format(" slowdown {}", fmt::join(slowdowns, " "));
  if (!where.host_accessible()) on += fmt::format(" cuda-graphs {}{}", cuda_graphs, tf32 ? " tf32" : "");
  std::cout << "tower " << kind << " (" << input << ") on " << on << " batch " << batch_size << ": "
            << static_cast<double>(n * epochs) / seconds << " samples/s, peak RSS " << usage.ru_maxrss / 1024 << " MiB";
  if (!where.host_accessible())  // what tensors held at most, and what the caching allocator held
    std::cout << ", " << where.name() << " peak " << where.memory_stats().peak / (1024 * 1024) << " MiB (reserved "
              << where.memory_stats().reserved / (1024 * 1024) << " MiB)";
  std::cout << ", loss " << history.history.at("loss").back() << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_mnist: " << e.what() << "\n";
  return 1;
}
