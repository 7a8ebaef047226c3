// Keras's examples/lstm_text_generation.py (Keras 2.2), line by line: an LSTM learns to predict the
// next character of a text, and after every epoch writes 400 characters at a few temperatures. The
// script reads Nietzsche; this port reads any text, by default the GPL that Debian ships
// (/usr/share/common-licenses/GPL-3). docs/examples.md shows it beside the Python original.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "apps/command_line.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

namespace {

struct Args {
  std::string text = "/usr/share/common-licenses/GPL-3";
  int epochs = 60;
  int generate = 400;  // characters written per temperature after each epoch
  int verbose = 1;
};

Args parse(int argc, char** argv) {
  namespace po = boost::program_options;
  Args args;
  po::options_description options("Usage: lstm_text_generation [options]\nOptions");
  options.add_options()("help,h", "show this help")("text", po::value(&args.text)->default_value(args.text),
                                                    "a text file to learn")(
      "epochs", po::value(&args.epochs)->default_value(args.epochs), "training epochs")(
      "generate", po::value(&args.generate)->default_value(args.generate), "characters written per temperature")(
      "verbose", po::value(&args.verbose)->default_value(args.verbose), "0 silent, 1 progress bar, 2 one line");
  if (!apps::parse_command_line(options, argc, argv)) std::exit(0);
  return args;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  std::ifstream file(args.text, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read the text \"" + args.text + "\" (--text FILE)");
  std::stringstream buffer;
  buffer << file.rdbuf();
  std::string text = buffer.str();
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::cout << "corpus length: " << text.size() << "\n";

  const std::set<char> char_set(text.begin(), text.end());
  const std::vector<char> chars(char_set.begin(), char_set.end());  // sorted
  std::cout << "total chars: " << chars.size() << "\n";
  std::map<char, std::int64_t> char_indices;
  for (std::size_t i = 0; i < chars.size(); ++i) char_indices[chars[i]] = static_cast<std::int64_t>(i);
  const std::int64_t C = static_cast<std::int64_t>(chars.size());

  // cut the text in semi-redundant sequences of maxlen characters
  const std::int64_t maxlen = 40, step = 3;
  std::vector<std::string> sentences;
  std::vector<char> next_chars;
  for (std::size_t i = 0; i + maxlen < text.size(); i += step) {
    sentences.push_back(text.substr(i, maxlen));
    next_chars.push_back(text[i + maxlen]);
  }
  const std::int64_t n = static_cast<std::int64_t>(sentences.size());
  std::cout << "nb sequences: " << n << "\n";

  std::cout << "Vectorization...\n";
  std::vector<float> xs(static_cast<std::size_t>(n * maxlen * C), 0.0f), ys(static_cast<std::size_t>(n * C), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t t = 0; t < maxlen; ++t) xs[(i * maxlen + t) * C + char_indices[sentences[i][t]]] = 1.0f;
    ys[i * C + char_indices[next_chars[i]]] = 1.0f;
  }
  const Tensor x = Tensor::from_vector<float>({n, maxlen, C}, xs), y = Tensor::from_vector<float>({n, C}, ys);

  // build the model: a single LSTM
  std::cout << "Build model...\n";
  Sequential model;
  model.add(layers::Input({maxlen, C}));
  model.add(layers::LSTM(128));
  model.add(layers::Dense(C, {.activation = "softmax"}));
  model.compile(optimizers::RMSprop(0.01), "categorical_crossentropy");

  std::mt19937 rng(1337);
  // helper function to sample an index from a probability array
  auto sample = [&](const float* preds, double temperature) {
    std::vector<double> p(static_cast<std::size_t>(C));
    double total = 0;
    for (std::int64_t k = 0; k < C; ++k) total += p[k] = std::exp(std::log(std::max<double>(preds[k], 1e-30)) / temperature);
    for (double& v : p) v /= total;
    return std::discrete_distribution<std::int64_t>(p.begin(), p.end())(rng);  // np.random.multinomial(1, preds)
  };

  // Function invoked at end of each epoch. Prints generated text.
  auto on_epoch_end = [&](int epoch, Logs&) {
    std::cout << "\n----- Generating text after Epoch: " << epoch << "\n";
    const std::size_t start_index = std::uniform_int_distribution<std::size_t>(0, text.size() - maxlen - 1)(rng);
    for (double diversity : {0.2, 0.5, 1.0, 1.2}) {
      std::cout << "----- diversity: " << diversity << "\n";
      std::string sentence = text.substr(start_index, maxlen);
      std::cout << "----- Generating with seed: \"" << sentence << "\"\n" << sentence;
      for (int i = 0; i < args.generate; ++i) {
        std::vector<float> x_pred(static_cast<std::size_t>(maxlen * C), 0.0f);
        for (std::int64_t t = 0; t < maxlen; ++t) x_pred[t * C + char_indices[sentence[t]]] = 1.0f;
        const Tensor preds = model.predict(Tensor::from_vector<float>({1, maxlen, C}, x_pred));
        const char next_char = chars[static_cast<std::size_t>(sample(preds.data<float>(), diversity))];
        sentence = sentence.substr(1) + next_char;
        std::cout << next_char << std::flush;
      }
      std::cout << "\n";
    }
  };

  auto print_callback = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaHooks{.on_epoch_end = on_epoch_end});
  model.fit(x, y, {.batch_size = 128, .epochs = args.epochs, .verbose = args.verbose, .callbacks = {print_callback}});
  return 0;
} catch (const boost::program_options::error& e) {
  std::cerr << "lstm_text_generation: " << e.what() << " (--help lists the options)\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "lstm_text_generation: " << e.what() << "\n";
  return 1;
}
