// Command-line options shared by the Keras example ports (mnist_mlp, mnist_cnn, conv_autoencoder,
// fashion_mobilenet): --data, --epochs, --batch-size, --train-samples, --verbose, --dtype-policy (applied
// by parse_example_args itself).
#pragma once

#include <boost/program_options.hpp>

#include <iostream>
#include <string>

#include "apps/command_line.h"
#include "tower/io/datasets.h"
#include "tower/layers/dtype_policy.h"
#include "tower/layers/engine/batches.h"

namespace tower::apps {

struct ExampleArgs {
  std::string data = io::kFashionMnistDir;
  int epochs = 0;
  std::int64_t batch_size = 128;
  std::int64_t train_samples = 0;  // train on the first N samples only (x_train[:N]); 0: all of them
  int verbose = 1;
  std::string dtype_policy = "float32";  // Keras's mixed_precision.set_global_policy, before the model
};

// Parses the options; prints --help or a clear error and exits (code 0 or 2) when asked or wrong.
inline ExampleArgs parse_example_args(int argc, char** argv, const char* program, int default_epochs) {
  namespace po = boost::program_options;
  ExampleArgs args;
  args.epochs = default_epochs;
  po::options_description options(std::string("Usage: ") + program + " [options]\nOptions");
  options.add_options()("help,h", "show this help")(
      "data", po::value(&args.data)->default_value(args.data),
      "directory with the IDX files (train-images-idx3-ubyte[.gz], ..., t10k-labels-idx1-ubyte[.gz])")(
      "epochs", po::value(&args.epochs)->default_value(default_epochs), "training epochs")(
      "batch-size", po::value(&args.batch_size)->default_value(args.batch_size), "samples per step")(
      "train-samples", po::value(&args.train_samples)->default_value(args.train_samples),
      "train on the first N training samples only (Keras: x_train[:N]); 0: all")(
      "verbose", po::value(&args.verbose)->default_value(args.verbose), "0 silent, 1 progress bar, 2 one line per epoch")(
      "dtype-policy", po::value(&args.dtype_policy)->default_value(args.dtype_policy),
      "global dtype policy of the layers: float32, mixed_float16 or mixed_bfloat16 (mixed precision)");
  po::variables_map vm;
  try {
    store_command_line(options, argc, argv, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\n" << options << "\n";
    std::exit(2);
  }
  if (vm.count("help")) {
    std::cout << options << "\n";
    std::exit(0);
  }
  if (args.epochs < 0 || args.batch_size <= 0 || args.train_samples < 0) {
    std::cerr << program << ": --epochs and --train-samples must be >= 0 and --batch-size > 0\n";
    std::exit(2);
  }
  // Applied here, before the program builds its model, so that no example can take the option and
  // ignore it (Keras's mixed precision guide: keras.mixed_precision.set_global_policy(...) first).
  try {
    mixed_precision::set_global_policy(args.dtype_policy);
  } catch (const std::exception& e) {
    std::cerr << program << ": --dtype-policy: " << e.what() << "\n";
    std::exit(2);
  }
  return args;
}

// The first n samples of a split, images and labels (Keras: x_train[:n], y_train[:n]); n = 0 or more
// than there are keeps them all. CTest's accuracy tests train on part of Fashion-MNIST to fit CI's time.
inline io::Split first_samples(const io::Split& split, std::int64_t n) {
  if (n <= 0 || n >= split.first.shape()[0]) return split;
  return {engine::row_range(split.first, 0, n), engine::row_range(split.second, 0, n)};
}

}  // namespace tower::apps
