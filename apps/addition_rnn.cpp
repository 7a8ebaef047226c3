// Keras's examples/addition_rnn.py (Keras 2.2), line by line: an LSTM encoder reads "535+61 " (reversed),
// RepeatVector feeds its summary to an LSTM decoder, and TimeDistributed(Dense) spells "596 ".
// docs/examples.md shows it beside the Python original, with the epochs and minutes it took.
#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "apps/command_line.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

namespace {

// Given a set of characters: one-hot encodes them, decodes the one-hot (or argmax) back.
class CharacterTable {
 public:
  explicit CharacterTable(const std::string& chars) : chars_(chars) {
    std::sort(chars_.begin(), chars_.end());
    chars_.erase(std::unique(chars_.begin(), chars_.end()), chars_.end());
    for (std::size_t i = 0; i < chars_.size(); ++i) char_indices_[chars_[i]] = static_cast<int>(i);
  }
  std::size_t size() const { return chars_.size(); }

  // C as num_rows one-hot rows, appended to `out`.
  void encode(const std::string& c, std::size_t num_rows, std::vector<float>& out) const {
    for (std::size_t i = 0; i < num_rows; ++i)
      for (std::size_t k = 0; k < chars_.size(); ++k) out.push_back(i < c.size() && char_indices_.at(c[i]) == int(k));
  }
  // Rows of scores (num_rows, size) -> the characters of their argmax.
  std::string decode(const float* x, std::size_t num_rows) const {
    std::string out;
    for (std::size_t i = 0; i < num_rows; ++i) {
      const float* row = x + i * chars_.size();
      out += chars_[static_cast<std::size_t>(std::max_element(row, row + chars_.size()) - row)];
    }
    return out;
  }

 private:
  std::string chars_;
  std::map<char, int> char_indices_;
};

struct Args {
  int iterations = 30;      // the Python loop runs 199: each is one epoch
  double target = 0.0;      // stop once val_accuracy reaches it (0: never)
  std::int64_t training_size = 50000;
  int verbose = 1;
};

Args parse(int argc, char** argv) {
  namespace po = boost::program_options;
  Args args;
  po::options_description options("Usage: addition_rnn [options]\nOptions");
  options.add_options()("help,h", "show this help")(
      "iterations", po::value(&args.iterations)->default_value(args.iterations), "epochs (the script's iterations)")(
      "target", po::value(&args.target)->default_value(args.target),
      "stop after the iteration whose val_accuracy reaches this (0: run them all)")(
      "training-size", po::value(&args.training_size)->default_value(args.training_size), "questions generated")(
      "verbose", po::value(&args.verbose)->default_value(args.verbose), "0 silent, 1 progress bar, 2 one line");
  if (!apps::parse_command_line(options, argc, argv)) std::exit(0);
  return args;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  // Parameters for the model and dataset.
  const std::int64_t TRAINING_SIZE = args.training_size;
  const int DIGITS = 3;
  const bool REVERSE = true;
  // Maximum length of input is 'int + int' (e.g., '345+678'). Maximum length of int is DIGITS.
  const std::size_t MAXLEN = DIGITS + 1 + DIGITS;

  // All the numbers, plus sign and space for padding.
  const std::string chars = "0123456789+ ";
  CharacterTable ctable(chars);

  std::vector<std::string> questions, expected;
  std::set<std::pair<int, int>> seen;
  std::mt19937 rng(1337);  // np.random, seeded
  std::cout << "Generating data...\n";
  while (static_cast<std::int64_t>(questions.size()) < TRAINING_SIZE) {
    auto f = [&] {
      const int length = std::uniform_int_distribution<int>(1, DIGITS)(rng);
      std::string digits;
      for (int i = 0; i < length; ++i) digits += static_cast<char>('0' + std::uniform_int_distribution<int>(0, 9)(rng));
      return std::stoi(digits);
    };
    const int a = f(), b = f();
    // Skip any addition questions we've already seen; also skip any such that x+Y == Y+x (hence the sorting).
    const auto key = std::minmax(a, b);
    if (!seen.insert({key.first, key.second}).second) continue;
    // Pad the data with spaces such that it is always MAXLEN.
    const std::string q = std::to_string(a) + "+" + std::to_string(b);
    std::string query = q + std::string(MAXLEN - q.size(), ' ');
    std::string ans = std::to_string(a + b);
    // Answers can be of maximum size DIGITS + 1.
    ans += std::string(DIGITS + 1 - ans.size(), ' ');
    if (REVERSE) std::reverse(query.begin(), query.end());  // reverse the query, e.g., '12+345  ' becomes '  543+21'
    questions.push_back(query);
    expected.push_back(ans);
  }
  std::cout << "Total addition questions: " << questions.size() << "\n";

  std::cout << "Vectorization...\n";
  // Shuffle (x, y) in unison as the later parts of x will almost all be larger digits.
  std::vector<std::size_t> indices(questions.size());
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  std::shuffle(indices.begin(), indices.end(), rng);
  // Explicitly set apart 10% for validation data that we never train over.
  const std::size_t n = questions.size(), split_at = n - n / 10, C = ctable.size();
  std::vector<float> xs_train, ys_train, xs_val, ys_val;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = indices[k];
    ctable.encode(questions[i], MAXLEN, k < split_at ? xs_train : xs_val);
    ctable.encode(expected[i], DIGITS + 1, k < split_at ? ys_train : ys_val);
  }
  const auto rows = [](std::size_t count) { return static_cast<std::int64_t>(count); };
  const Tensor x_train = Tensor::from_vector<float>({rows(split_at), rows(MAXLEN), rows(C)}, xs_train);
  const Tensor y_train = Tensor::from_vector<float>({rows(split_at), DIGITS + 1, rows(C)}, ys_train);
  const Tensor x_val = Tensor::from_vector<float>({rows(n - split_at), rows(MAXLEN), rows(C)}, xs_val);
  const Tensor y_val = Tensor::from_vector<float>({rows(n - split_at), DIGITS + 1, rows(C)}, ys_val);
  std::cout << "Training Data: " << x_train.shape().to_string() << " " << y_train.shape().to_string() << "\n";
  std::cout << "Validation Data: " << x_val.shape().to_string() << " " << y_val.shape().to_string() << "\n";

  // Try replacing LSTM with GRU or SimpleRNN.
  using RNN = layers::LSTM;
  const std::int64_t HIDDEN_SIZE = 128, BATCH_SIZE = 128;
  const int LAYERS = 1;

  std::cout << "Build model...\n";
  Sequential model;
  // "Encode" the input sequence using an RNN, producing an output of HIDDEN_SIZE.
  model.add(layers::Input({rows(MAXLEN), rows(C)}));
  model.add(RNN(HIDDEN_SIZE));
  // As the decoder RNN's input, repeatedly provide with the last output of RNN for each time step.
  model.add(layers::RepeatVector(DIGITS + 1));
  // The decoder RNN could be multiple layers stacked or a single layer.
  for (int i = 0; i < LAYERS; ++i) model.add(RNN(HIDDEN_SIZE, {.return_sequences = true}));
  // Apply a dense layer to every temporal slice of an input; for each step of the output sequence,
  // decide which character should be chosen.
  model.add(layers::TimeDistributed(layers::Dense(rows(C), {.activation = "softmax"})));
  model.compile(optimizers::Adam(), "categorical_crossentropy", {"accuracy"});
  model.summary();

  // Train the model each generation and show predictions against the validation dataset.
  std::uniform_int_distribution<std::int64_t> pick(0, x_val.shape()[0] - 1);
  double val_accuracy = 0;
  for (int iteration = 1; iteration <= args.iterations; ++iteration) {
    std::cout << std::string(50, '-') << "\nIteration " << iteration << "\n";
    auto history = model.fit(x_train, y_train,
                             {.batch_size = BATCH_SIZE,
                              .epochs = 1,
                              .verbose = args.verbose,
                              .validation_data = std::pair{std::vector{x_val}, std::vector{y_val}}});
    // Select 10 samples from the validation set at random so we can visualize errors.
    for (int i = 0; i < 10; ++i) {
      const std::int64_t ind = pick(rng);
      const float* rowx = x_val.data<float>() + ind * rows(MAXLEN * C);
      const float* rowy = y_val.data<float>() + ind * (DIGITS + 1) * rows(C);
      const Tensor preds = model.predict(Tensor::from_vector<float>(
          {1, rows(MAXLEN), rows(C)}, std::vector<float>(rowx, rowx + MAXLEN * C)));
      std::string q = ctable.decode(rowx, MAXLEN);
      const std::string correct = ctable.decode(rowy, DIGITS + 1);
      const std::string guess = ctable.decode(preds.data<float>(), DIGITS + 1);
      if (REVERSE) std::reverse(q.begin(), q.end());
      std::cout << "Q " << q << " T " << correct << " " << (correct == guess ? "☑" : "☒") << " " << guess << "\n";
    }
    val_accuracy = history.history.at("val_accuracy").back();
    std::cout << "val_accuracy: " << val_accuracy << "\n";
    if (args.target > 0 && val_accuracy >= args.target) {
      std::cout << "Reached val_accuracy " << val_accuracy << " after " << iteration << " iterations\n";
      break;
    }
  }
  // Not in the script: the last per-character accuracy on the 10% held out, for tests/examples.
  std::cout << "Test accuracy: " << val_accuracy << "\n";
  return 0;
} catch (const boost::program_options::error& e) {
  std::cerr << "addition_rnn: " << e.what() << " (--help lists the options)\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "addition_rnn: " << e.what() << "\n";
  return 1;
}
