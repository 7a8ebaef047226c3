// bench_pipeline: an MLP trained as pipeline stages (parallel::pipeline_model) on K CPU devices with M
// micro-batches: samples per second, each device's idle ("bubble") fraction of a step beside GPipe's
// (K - 1) / (M + K - 1), and the bytes each device holds while it trains. Prints a markdown table
// (docs/benchmarks.md, "Pipeline stages").
//
//   build/apps/bench_pipeline [--stages 1,2,3] [--micro-batches 1,2,4,8] [--batch 256] [--steps 12]
//
// cpu:1, cpu:2, ... are single-threaded devices (cpu:0 has every core), so K stages use K threads: on a
// machine with fewer cores than stages the lanes share them and the idle fraction says so.
#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

#include "tower/core/caching_allocator.h"
#include "tower/tower.h"

using namespace tower;
namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<int> ints(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

// 784 -> 4 x Dense(1024, relu) -> Dense(10, softmax): 3.96 M parameters, nearly even layers.
Model mlp() {
  clear_session();
  set_random_seed(1);
  Sequential m;
  m.add(layers::Input({784}));
  for (int i = 0; i < 4; ++i) m.add(layers::Dense(1024, {.activation = "relu"}));
  m.add(layers::Dense(10, {.activation = "softmax"}));
  return m;
}

struct Result {
  double samples_per_second = 0;
  std::vector<double> idle;            // per stage: 1 - busy / step time, averaged over the steps
  std::vector<std::size_t> held;       // per stage: bytes its device holds while training
};

Result run(int stages, int micro_batches, std::int64_t batch, int steps) {
  std::vector<std::string> devices;
  for (int k = 1; k <= stages; ++k) devices.push_back(fmt::format("cpu:{}", k));
  std::vector<std::size_t> before;
  for (const auto& d : devices) before.push_back(device(d).memory_stats().in_use);
  Result result;
  {
    Model inner = mlp();
    Model model = parallel::pipeline_model(inner, devices, {.micro_batches = micro_batches});
    model.compile(optimizers::SGD(0.01), "sparse_categorical_crossentropy");
    const Tensor x = random_normal({batch, 784}, 0, 1, 2);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
    const Tensor y = Tensor::from_vector<std::int32_t>({batch}, labels);
    for (int k = 0; k < 2; ++k) model.train_on_batch({x}, {y});  // plans compiled, memory placed
    result.idle.assign(devices.size(), 0.0);
    double total = 0;
    for (int s = 0; s < steps; ++s) {
      const auto start = Clock::now();
      model.train_on_batch({x}, {y});
      const double step = std::chrono::duration<double>(Clock::now() - start).count();
      total += step;
      const Plan* plan = model.last_plan(Model::Mode::train);
      for (std::size_t k = 0; k < devices.size(); ++k)
        result.idle[k] += (1.0 - (plan ? plan->busy_seconds(device(devices[k])) : step) / step) / steps;
    }
    result.samples_per_second = static_cast<double>(batch) * steps / total;
    for (std::size_t k = 0; k < devices.size(); ++k)
      result.held.push_back(device(devices[k]).memory_stats().in_use - before[k]);
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::string stage_list = "1,2,3", micro_list = "1,2,4,8";
  std::int64_t batch = 256;
  int steps = 12;
  po::options_description options("bench_pipeline options");
  options.add_options()("help,h", "show this help")(
      "stages", po::value(&stage_list)->default_value(stage_list), "stage counts K, comma-separated")(
      "micro-batches", po::value(&micro_list)->default_value(micro_list), "micro-batch counts M, comma-separated")(
      "batch", po::value(&batch)->default_value(batch), "batch size")(
      "steps", po::value(&steps)->default_value(steps), "timed steps per configuration");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "bench_pipeline: " << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  std::cout << fmt::format("MLP 784-4x1024-10 (3.96 M parameters), SGD, batch {}, {} timed steps; cpu:1.. one thread each\n\n",
                           batch, steps);
  std::cout << "| K stages | M micro-batches | samples/s | idle per device (measured) | GPipe (K-1)/(M+K-1) | "
               "bytes held per device |\n|---:|---:|---:|---|---:|---|\n";
  for (int k : ints(stage_list))
    for (int m : ints(micro_list)) {
      if (k == 1 && m > 1) continue;  // one stage: micro-batches only split the work
      const Result r = run(k, m, batch, steps);
      std::vector<std::string> idle, held;
      for (double v : r.idle) idle.push_back(k == 1 ? "— (one lane)" : fmt::format("{:.0f} %", 100 * v));
      for (std::size_t b : r.held) held.push_back(format_bytes(b));
      std::cout << fmt::format("| {} | {} | {:.0f} | {} | {:.0f} % | {} |\n", k, m, r.samples_per_second,
                               fmt::join(idle, ", "), 100.0 * (k - 1) / (m + k - 1), fmt::join(held, ", "));
    }
  return 0;
}
