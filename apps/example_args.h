// Command-line options shared by the Keras example ports (mnist_mlp, mnist_cnn): --data, --epochs,
// --batch-size, --verbose, --dtype-policy.
#pragma once

#include <boost/program_options.hpp>

#include <iostream>
#include <string>

#include "tower/io/datasets.h"

namespace tower::apps {

struct ExampleArgs {
  std::string data = io::kFashionMnistDir;
  int epochs = 0;
  std::int64_t batch_size = 128;
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
      "verbose", po::value(&args.verbose)->default_value(args.verbose), "0 silent, 1 progress bar, 2 one line per epoch")(
      "dtype-policy", po::value(&args.dtype_policy)->default_value(args.dtype_policy),
      "global dtype policy of the layers: float32, mixed_float16 or mixed_bfloat16 (mixed precision)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << "\n" << options << "\n";
    std::exit(2);
  }
  if (vm.count("help")) {
    std::cout << options << "\n";
    std::exit(0);
  }
  if (args.epochs < 0 || args.batch_size <= 0) {
    std::cerr << program << ": --epochs must be >= 0 and --batch-size > 0\n";
    std::exit(2);
  }
  return args;
}

}  // namespace tower::apps
