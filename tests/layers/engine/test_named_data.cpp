// fit, evaluate and predict with inputs and outputs by name (Keras's dicts): the same training as
// positional arrays, and errors that list the model's names.
#include <doctest/doctest.h>

#include "tower/core/random.h"
#include "tower/io/dataset.h"
#include "tower/layers/layers.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/engine/sequential.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

// Inputs "image" (6,) and "meta" (2,); outputs "label" (1, sigmoid) and "aux" (3, linear): in model order
// label before aux, whereas a std::map sorts aux first.
Model two_in_two_out() {
  clear_session();
  set_random_seed(21);
  auto image = layers::Input({6}, {.name = "image"});
  auto meta = layers::Input({2}, {.name = "meta"});
  auto h = layers::Dense(8, {.activation = "relu", .name = "hidden"})(image);
  auto c = layers::Concatenate({.name = "merge"})({h, meta});
  auto label = layers::Dense(1, {.activation = "sigmoid", .name = "label"})(c);
  auto aux = layers::Dense(3, {.name = "aux"})(c);
  Model model({image, meta}, {label, aux}, "named");
  model.compile("adam", std::vector<losses::Loss>{losses::Loss("binary_crossentropy"), losses::Loss("mse")});
  return model;
}

struct Data {
  Tensor image, meta, label, aux;
};
Data make_data(std::int64_t n, std::uint64_t seed) {
  Data d{random_normal({n, 6}, 0, 1, seed), random_normal({n, 2}, 0, 1, seed + 1), {}, random_normal({n, 3}, 0, 1, seed + 2)};
  auto xs = d.image.to_vector<float>();
  std::vector<float> ys;
  for (std::int64_t i = 0; i < n; ++i) ys.push_back(xs[static_cast<std::size_t>(6 * i)] > 0 ? 1.0f : 0.0f);
  d.label = Tensor::from_vector<float>({n, 1}, ys);
  return d;
}

void check_same_weights(const Model& a, const Model& b) {
  auto wa = a.get_weights(), wb = b.get_weights();
  REQUIRE(wa.size() == wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i) CHECK(wa[i].to_vector<float>() == wb[i].to_vector<float>());
}

}  // namespace

TEST_CASE("fit by name trains exactly as fit in order; evaluate and predict by name agree") {
  const Data d = make_data(40, 5), v = make_data(12, 50);
  Model positional = two_in_two_out();
  Model named = two_in_two_out();
  check_same_weights(positional, named);  // the same start
  auto hp = positional.fit({d.image, d.meta}, {d.label, d.aux},
                           {.batch_size = 8, .epochs = 3, .verbose = 0,
                            .validation_data = std::pair{std::vector{v.image, v.meta}, std::vector{v.label, v.aux}},
                            .seed = 9});
  auto hn = named.fit(TensorMap{{"meta", d.meta}, {"image", d.image}}, TensorMap{{"aux", d.aux}, {"label", d.label}},
                      {.batch_size = 8, .epochs = 3, .verbose = 0,
                       .validation_data_by_name = std::pair{TensorMap{{"image", v.image}, {"meta", v.meta}},
                                                            TensorMap{{"label", v.label}, {"aux", v.aux}}},
                       .seed = 9});
  check_same_weights(positional, named);
  CHECK(hn.history.at("loss") == hp.history.at("loss"));
  CHECK(hn.history.at("val_loss") == hp.history.at("val_loss"));

  auto ep = positional.evaluate({v.image, v.meta}, {v.label, v.aux}, {.verbose = 0});
  auto en = named.evaluate(TensorMap{{"image", v.image}, {"meta", v.meta}}, TensorMap{{"aux", v.aux}, {"label", v.label}},
                           {.verbose = 0});
  CHECK(en.entries() == ep.entries());

  auto pp = positional.predict(std::vector<Tensor>{v.image, v.meta});
  TensorMap pn = named.predict(TensorMap{{"image", v.image}, {"meta", v.meta}});
  REQUIRE(pn.size() == 2);
  CHECK(pn.at("label").to_vector<float>() == pp[0].to_vector<float>());
  CHECK(pn.at("aux").to_vector<float>() == pp[1].to_vector<float>());
  CHECK(named.input_names() == std::vector<std::string>{"image", "meta"});
}

TEST_CASE("a dataset of named arrays: from_tensor_slices(inputs_by_name, outputs_by_name)") {
  const Data d = make_data(32, 7);
  Model a = two_in_two_out();
  a.fit({d.image, d.meta}, {d.label, d.aux}, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
  Model b = two_in_two_out();
  auto ds = io::Dataset::from_tensor_slices(b.inputs_by_name({{"meta", d.meta}, {"image", d.image}}),
                                            b.outputs_by_name({{"aux", d.aux}, {"label", d.label}}))
                .batch(8);
  b.fit(ds, {.epochs = 2, .verbose = 0});
  check_same_weights(a, b);
}

TEST_CASE("unknown or missing names throw, listing the model's input and output names") {
  const Data d = make_data(8, 3);
  Model model = two_in_two_out();
  auto msg = message_of<ValueError>([&] {
    model.fit(std::map<std::string, Tensor>{{"imag", d.image}, {"meta", d.meta}},
              std::map<std::string, Tensor>{{"label", d.label}, {"aux", d.aux}}, {.verbose = 0});
  });
  CHECK(contains(msg, "\"imag\" is not one of the model's input names"));
  CHECK(contains(msg, "\"image\", \"meta\""));
  msg = message_of<ValueError>([&] { model.predict(TensorMap{{"image", d.image}}); });
  CHECK(contains(msg, "no array for the input \"meta\""));
  msg = message_of<ValueError>([&] {
    model.evaluate(TensorMap{{"image", d.image}, {"meta", d.meta}}, TensorMap{{"label", d.label}}, {.verbose = 0});
  });
  CHECK(contains(msg, "no array for the output \"aux\""));
  CHECK(contains(msg, "\"label\", \"aux\""));
  msg = message_of<ValueError>([&] {
    model.fit(TensorMap{{"image", d.image}, {"meta", d.meta}}, TensorMap{{"label", d.label}, {"aux", d.aux}},
              {.verbose = 0, .validation_data_by_name = std::pair{TensorMap{{"image", d.image}, {"meta", d.meta}},
                                                                  TensorMap{{"labels", d.label}, {"aux", d.aux}}}});
  });
  CHECK(contains(msg, "fit(validation_data_by_name)"));
  CHECK(contains(msg, "\"labels\""));
  Sequential unbuilt({layers::Dense(1)});
  const auto unbuilt_msg = message_of<ValueError>([&] { unbuilt.inputs_by_name({{"x", d.image}}); });
  CHECK_MESSAGE(contains(unbuilt_msg, "has none yet"), unbuilt_msg);
}
