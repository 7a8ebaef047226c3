// Training throughput of keras.io's text classification models (apps/text_models.h): the transformer
// classifier or the Conv1D one, on (batch, 200) token ids from a 20,000-word vocabulary, sparse
// categorical crossentropy, Adam, batch 32, on random tokens (speed does not depend on the values).
// For comparison with scripts/bench/text_torch.py and text_keras.py, which build the same models
// (scripts/bench/run_text.sh runs the three; docs/benchmarks.md holds the results).
#include <boost/program_options.hpp>
#include <iostream>
#include <random>

#include "apps/bench_fit.h"
#include "apps/command_line.h"
#include "apps/text_models.h"
#include "tower/core/random.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

int main(int argc, char** argv) try {
  namespace po = boost::program_options;
  std::string kind = "transformer";
  std::int64_t batch_size = 32, samples = 8192, maxlen = 200, vocab_size = 20000;
  int epochs = 1;
  po::options_description options("Usage: bench_text [options]\nOptions");
  options.add_options()("help,h", "show this help")("model", po::value(&kind)->default_value(kind),
                                                    "transformer or conv1d")(
      "batch-size", po::value(&batch_size)->default_value(batch_size), "samples per step")(
      "samples", po::value(&samples)->default_value(samples), "training samples per epoch")(
      "epochs", po::value(&epochs)->default_value(epochs), "timed epochs");
  if (!apps::parse_command_line(options, argc, argv)) return 0;
  if (kind != "transformer" && kind != "conv1d") throw apps::UsageError("--model must be transformer or conv1d");

  set_random_seed(1);
  std::mt19937 rng(2);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(samples * maxlen)), labels(static_cast<std::size_t>(samples));
  for (auto& t : tokens) t = std::uniform_int_distribution<std::int32_t>(1, static_cast<std::int32_t>(vocab_size) - 1)(rng);
  for (auto& l : labels) l = std::uniform_int_distribution<std::int32_t>(0, 1)(rng);
  const Tensor x = Tensor::from_vector<std::int32_t>({samples, maxlen}, tokens);
  const Tensor y = Tensor::from_vector<std::int32_t>({samples}, labels);
  Model model = apps::text_classifier(kind, maxlen, vocab_size);
  model.compile(optimizers::Adam(), "sparse_categorical_crossentropy");
  apps::timed_fit(model, x, y, batch_size, epochs,
                  kind + " maxlen " + std::to_string(maxlen) + " batch " + std::to_string(batch_size));
  return 0;
} catch (const tower::apps::UsageError& e) {
  std::cerr << "bench_text: " << e.what() << "\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "bench_text: " << e.what() << "\n";
  return 1;
}
