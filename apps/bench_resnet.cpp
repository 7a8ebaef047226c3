// Training throughput of a ResNet-style convnet on CIFAR-size input (32x32x3, 10 classes): ResNet-20 of
// He et al. 2016 (CIFAR variant: a 3x3 convolution of 16 filters, three stages of --blocks residual
// blocks of 16, 32 and 64 filters, the later two starting with stride 2 and a 1x1 projection shortcut,
// batch normalization after every convolution, global average pooling, a softmax Dense), trained with
// SGD and momentum on random images (throughput only: no CIFAR download here). Prints samples/s of
// fit() and peak memory, the line scripts/gpu/bench.sh sets beside scripts/bench/resnet_torch.py (the
// same network in PyTorch, with AMP and torch.compile). --dtype-policy mixed_float16/mixed_bfloat16 and
// --tf32 1 are the mixed-precision and TF32 runs.
#include <fmt/format.h>
#include <sys/resource.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>

#include "apps/command_line.h"
#include "tower/core/config.h"
#include "tower/core/random.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

namespace {

KerasTensor conv_bn(const KerasTensor& x, std::int64_t filters, std::int64_t kernel, std::int64_t strides) {
  auto y = layers::Conv2D(filters, kernel, {.strides = {strides}, .padding = "same", .use_bias = false})(x);
  return layers::BatchNormalization()(y);
}

// relu(bn(conv(relu(bn(conv(x))))) + shortcut), the shortcut a strided 1x1 projection where the shape changes.
KerasTensor residual_block(const KerasTensor& x, std::int64_t filters, std::int64_t strides) {
  auto y = layers::ReLU()(conv_bn(x, filters, 3, strides));
  y = conv_bn(y, filters, 3, 1);
  const bool project = strides != 1 || x.shape()[x.rank() - 1] != filters;
  auto shortcut = project ? conv_bn(x, filters, 1, strides) : x;
  return layers::ReLU()(layers::Add()({y, shortcut}));
}

Model resnet(int blocks) {
  auto inputs = layers::Input({32, 32, 3});
  auto x = layers::ReLU()(conv_bn(inputs, 16, 3, 1));
  for (std::int64_t stage = 0; stage < 3; ++stage)
    for (int b = 0; b < blocks; ++b) x = residual_block(x, 16 << stage, stage > 0 && b == 0 ? 2 : 1);
  x = layers::GlobalAveragePooling2D()(x);
  auto outputs = layers::Dense(10, {.activation = "softmax"})(x);
  return Model(inputs, outputs, fmt::format("resnet{}", 6 * blocks + 2));
}

}  // namespace

int main(int argc, char** argv) try {
  namespace po = boost::program_options;
  std::string device_name = "cpu:0", dtype_policy = "float32";
  std::int64_t batch_size = 512, samples = 10240;
  int epochs = 1, blocks = 3, tf32 = 0, cuda_graphs = config::cuda_graphs_enabled() ? 1 : 0;
  po::options_description options("Usage: bench_resnet [options]\nOptions");
  options.add_options()("help,h", "show this help")("batch-size", po::value(&batch_size)->default_value(batch_size),
                                                    "samples per step")(
      "samples", po::value(&samples)->default_value(samples), "random training images per epoch")(
      "epochs", po::value(&epochs)->default_value(epochs), "timed epochs (after one untimed warm-up step)")(
      "blocks", po::value(&blocks)->default_value(blocks), "residual blocks per stage (3: ResNet-20, 5: ResNet-32)")(
      "device", po::value(&device_name)->default_value(device_name), "where the model trains: cpu:0, cuda:0, ...")(
      "cuda-graphs", po::value(&cuda_graphs)->default_value(cuda_graphs),
      "1: replay each steady-state step on a GPU as a CUDA graph; 0: launch its kernels one by one")(
      "tf32", po::value(&tf32)->default_value(tf32), "1: float32 GEMMs and convolutions on a GPU in TF32")(
      "dtype-policy", po::value(&dtype_policy)->default_value(dtype_policy),
      "global dtype policy of the layers: float32, mixed_float16 or mixed_bfloat16");
  if (!apps::parse_command_line(options, argc, argv)) return 0;
  if (blocks < 1) throw apps::UsageError(fmt::format("--blocks must be >= 1, got {}", blocks));
  if (batch_size < 1 || samples < batch_size)
    throw apps::UsageError(fmt::format("--samples ({}) must be at least --batch-size ({}), which must be >= 1",
                                       samples, batch_size));
  samples -= samples % batch_size;  // whole batches only: one plan

  config::enable_cuda_graphs(cuda_graphs != 0);
  config::enable_tensor_float_32_execution(tf32 != 0);
  mixed_precision::set_global_policy(dtype_policy);
  set_random_seed(1);
  const Tensor x = random_uniform({samples, 32, 32, 3}, 0.0, 1.0, 1);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(samples));
  for (std::int64_t i = 0; i < samples; ++i) labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7) % 10);
  const Tensor y = Tensor::from_vector<std::int32_t>({samples}, labels);

  Device& where = device(device_name);
  Model model = [&] {
    DefaultDeviceScope scope(where);
    return resnet(blocks);
  }();
  model.compile(optimizers::SGD(0.1, {.momentum = 0.9}), "sparse_categorical_crossentropy");
  // Warm-up on the first batch: the plan compiled (and, on a GPU, the algorithms chosen) before timing.
  const float* pixels = x.data<float>();
  model.train_on_batch(
      {Tensor::from_vector<float>({batch_size, 32, 32, 3}, std::vector<float>(pixels, pixels + batch_size * 32 * 32 * 3))},
      {Tensor::from_vector<std::int32_t>({batch_size}, std::vector<std::int32_t>(labels.begin(), labels.begin() + batch_size))});
  const auto start = std::chrono::steady_clock::now();
  auto history = model.fit(x, y, {.batch_size = batch_size, .epochs = epochs, .verbose = 0});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::cout << "tower " << model.name() << " " << dtype_policy << " on " << where.name();
  if (!where.host_accessible()) std::cout << fmt::format(" cuda-graphs {}{}", cuda_graphs, tf32 ? " tf32" : "");
  std::cout << " batch " << batch_size << ": " << static_cast<double>(samples * epochs) / seconds
            << " samples/s, peak RSS " << usage.ru_maxrss / 1024 << " MiB";
  if (!where.host_accessible())
    std::cout << ", " << where.name() << " peak " << where.memory_stats().peak / (1024 * 1024) << " MiB";
  std::cout << ", loss " << history.history.at("loss").back() << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_resnet: " << e.what() << "\n";
  return 1;
}
