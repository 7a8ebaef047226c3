// Training throughput of recurrent models: LSTM(128) or GRU(128) over 50 steps of 32 features, then
// Dense(10) softmax, sparse categorical crossentropy, Adam, batch 128, on random data (speed does not
// depend on the values). For comparison with scripts/bench/rnn_torch.py and rnn_keras.py, which build
// the same model (scripts/bench/run_rnn.sh runs the three; docs/benchmarks.md holds the results).
#include <boost/program_options.hpp>
#include <iostream>

#include "apps/bench_fit.h"
#include "apps/command_line.h"
#include "tower/core/random.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

int main(int argc, char** argv) try {
  namespace po = boost::program_options;
  std::string cell = "lstm";
  std::int64_t batch_size = 128, samples = 4096, steps = 50, features = 32, units = 128;
  int epochs = 2;
  po::options_description options("Usage: bench_rnn [options]\nOptions");
  options.add_options()("help,h", "show this help")("cell", po::value(&cell)->default_value(cell), "lstm or gru")(
      "batch-size", po::value(&batch_size)->default_value(batch_size), "samples per step")(
      "samples", po::value(&samples)->default_value(samples), "training samples per epoch")(
      "steps", po::value(&steps)->default_value(steps), "time steps")(
      "units", po::value(&units)->default_value(units), "recurrent units")(
      "epochs", po::value(&epochs)->default_value(epochs), "timed epochs");
  if (!apps::parse_command_line(options, argc, argv)) return 0;
  if (cell != "lstm" && cell != "gru") throw ValueError("--cell must be lstm or gru, got " + cell);

  set_random_seed(1);
  const Tensor x = random_normal({samples, steps, features}, 0.0, 1.0, 2);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(samples));
  for (std::int64_t i = 0; i < samples; ++i) labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % 10);
  const Tensor y = Tensor::from_vector<std::int32_t>({samples}, labels);
  Sequential model({layers::Input({steps, features}),
                    cell == "lstm" ? LayerRef(layers::LSTM(units)) : LayerRef(layers::GRU(units)),
                    layers::Dense(10, {.activation = "softmax"})});
  model.compile(optimizers::Adam(), "sparse_categorical_crossentropy");
  apps::timed_fit(model, x, y, batch_size, epochs,
                  cell + "(" + std::to_string(units) + ") steps " + std::to_string(steps) + " batch " +
                      std::to_string(batch_size));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_rnn: " << e.what() << "\n";
  return 1;
}
