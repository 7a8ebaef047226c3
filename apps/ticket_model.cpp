// The Keras functional API guide's "models with multiple inputs and outputs" (keras.io/guides/
// functional_api), line by line: issue tickets ranked by priority and routed to a department from
// their title, body and tags, with an LSTM over each text, two losses and loss weights, on the
// guide's random dummy data. docs/examples.md shows it beside the Python original.
#include <iostream>
#include <random>
#include <vector>

#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;
namespace L = tower::layers;

int main() try {
  const std::int64_t num_tags = 12;          // Number of unique issue tags
  const std::int64_t num_words = 10000;      // Size of vocabulary obtained when preprocessing text data
  const std::int64_t num_departments = 4;    // Number of departments for predictions

  auto title_input = L::Input({-1}, {.name = "title"});      // Variable-length sequence of ints
  auto body_input = L::Input({-1}, {.name = "body"});        // Variable-length sequence of ints
  auto tags_input = L::Input({num_tags}, {.name = "tags"});  // Binary vectors of size `num_tags`

  // Embed each word in the title into a 64-dimensional vector
  auto title_features = L::Embedding(num_words, 64)(title_input);
  // Embed each word in the text into a 64-dimensional vector
  auto body_features = L::Embedding(num_words, 64)(body_input);

  // Reduce sequence of embedded words in the title into a single 128-dimensional vector
  title_features = L::LSTM(128)(title_features);
  // Reduce sequence of embedded words in the body into a single 32-dimensional vector
  body_features = L::LSTM(32)(body_features);

  // Merge all available features into a single large vector via concatenation
  auto x = L::Concatenate()({title_features, body_features, tags_input});

  // Stick a logistic regression for priority prediction on top of the features
  auto priority_pred = L::Dense(1, {.name = "priority"})(x);
  // Stick a department classifier on top of the features
  auto department_pred = L::Dense(num_departments, {.name = "department"})(x);

  // Instantiate an end-to-end model predicting both priority and department
  Model model({title_input, body_input, tags_input}, {priority_pred, department_pred});
  model.summary();

  model.compile(optimizers::RMSprop(1e-3),
                {losses::BinaryCrossentropy({.from_logits = true}),
                 losses::CategoricalCrossentropy({.from_logits = true})},
                {}, {.loss_weights = {1.0, 0.2}});

  // Dummy input data
  std::mt19937 rng(0);
  auto randint = [&](std::int64_t high, Shape shape) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(shape.num_elements()));
    for (auto& e : v) e = std::uniform_int_distribution<std::int32_t>(0, static_cast<std::int32_t>(high - 1))(rng);
    return Tensor::from_vector<std::int32_t>(shape, v);
  };
  auto as_float = [](const Tensor& t) {
    std::vector<float> v(t.data<std::int32_t>(), t.data<std::int32_t>() + t.num_elements());
    return Tensor::from_vector<float>(t.shape(), v);
  };
  const Tensor title_data = randint(num_words, {1280, 10});
  const Tensor body_data = randint(num_words, {1280, 100});
  const Tensor tags_data = as_float(randint(2, {1280, num_tags}));
  // Dummy target data
  std::vector<float> priority(1280);
  for (auto& p : priority) p = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
  const Tensor priority_targets = Tensor::from_vector<float>({1280, 1}, priority);
  const Tensor dept_targets = as_float(randint(2, {1280, num_departments}));

  auto history = model.fit({title_data, body_data, tags_data}, {priority_targets, dept_targets},
                           {.batch_size = 32, .epochs = 2});
  const auto& loss = history.history.at("loss");
  std::cout << "loss: " << loss.front() << " -> " << loss.back() << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "ticket_model: " << e.what() << "\n";
  return 1;
}
