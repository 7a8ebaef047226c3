// LocallyConnected1D/2D against real tf.keras 2 (tests/golden/make_locally_connected.py), implementations 1,
// 2 and 3 (each with its own kernel layout), padding "valid" and "same": forward values, gradients of
// sum(y * r) for the input, kernel and bias, and the weights after one and three SGD steps.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "tests/support/grad_check.h"
#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/io/hdf5.h"
#include "tower/layers/engine/sequential.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

namespace tower {
namespace {

using testing::check_close;
using testing::evaluate;

const std::string kFile = std::string(TOWER_GOLDEN_DIR) + "/files/locally_connected.h5";

// The layers of make_locally_connected.py's CASES.
LayerPtr make_case(const std::string& name) {
  using namespace layers;
  if (name == "lc2d") return LocallyConnected2D(3, {2, 3}, {.strides = {2, 1}, .activation = "tanh"}).share();
  if (name == "lc2d_cf") return LocallyConnected2D(2, 2, {.data_format = "channels_first"}).share();
  if (name == "lc1d") return LocallyConnected1D(4, 3, {.strides = 2, .activation = "relu"}).share();
  if (name == "lc1d_cf") return LocallyConnected1D(2, 2, {.activation = "sigmoid", .data_format = "channels_first"}).share();
  // Implementations 2 (dense masked kernel) and 3 (sparse kernel), "valid" and "same".
  const std::string cf = "channels_first";
  if (name == "lc2d_i2")
    return LocallyConnected2D(2, {2, 3}, {.strides = {2, 1}, .activation = "tanh", .implementation = 2}).share();
  if (name == "lc2d_i2_same_cf")
    return LocallyConnected2D(2, {2, 3}, {.strides = {2, 1}, .padding = "same", .data_format = cf, .implementation = 2})
        .share();
  if (name == "lc2d_i3")
    return LocallyConnected2D(3, 2, {.activation = "relu", .data_format = cf, .implementation = 3}).share();
  if (name == "lc2d_i3_same")
    return LocallyConnected2D(2, {3, 2}, {.strides = {2}, .padding = "same", .activation = "tanh", .implementation = 3})
        .share();
  if (name == "lc1d_i2") return LocallyConnected1D(2, 3, {.strides = 2, .activation = "relu", .implementation = 2}).share();
  if (name == "lc1d_i2_same_cf")
    return LocallyConnected1D(2, 2, {.padding = "same", .activation = "sigmoid", .data_format = cf, .implementation = 2})
        .share();
  if (name == "lc1d_i3") return LocallyConnected1D(3, 2, {.activation = "tanh", .implementation = 3}).share();
  if (name == "lc1d_i3_same_cf")
    return LocallyConnected1D(2, 3, {.strides = 2, .padding = "same", .data_format = cf, .implementation = 3}).share();
  FAIL("no such case " << name);
  return nullptr;
}

}  // namespace

TEST_CASE("golden: LocallyConnected1D/2D against tf.keras 2 (implementations 1, 2, 3; valid and same; values, "
          "gradients, SGD steps)") {
  auto file = io::hdf5::File::open(kFile);
  for (const std::string name : {"lc2d", "lc2d_cf", "lc1d", "lc1d_cf", "lc2d_i2", "lc2d_i2_same_cf", "lc2d_i3",
                                 "lc2d_i3_same", "lc1d_i2", "lc1d_i2_same_cf", "lc1d_i3", "lc1d_i3_same_cf"}) {
    INFO(name);
    auto g = file.group(name);
    const Tensor x = g.read_dataset("x"), kernel = g.read_dataset("kernel"), bias = g.read_dataset("bias");
    clear_session();
    LayerPtr layer = make_case(name);
    std::vector<std::int64_t> dims = x.shape().dims();
    Sequential model({layers::Input(Shape(std::vector<std::int64_t>(dims.begin() + 1, dims.end()))), layer});
    REQUIRE(layer->weights().size() == 2);
    CHECK(layer->weights()[0]->shape() == kernel.shape());
    CHECK(layer->weights()[1]->shape() == bias.shape());
    layer->set_weights({kernel, bias});
    check_close(model.predict(x), g.read_dataset("y"), 1e-5, 1e-6);

    // Gradients of sum(y * r).
    Graph graph;
    dims[0] = -1;
    SymbolicTensor xp = graph.placeholder(Shape(dims));
    CallContext ctx{.graph = graph};
    SymbolicTensor y = layer->apply(ctx, {xp})[0];
    SymbolicTensor loss = ops::reduce_sum(ops::multiply(y, graph.constant(g.read_dataset("r"))));
    auto grads = gradients(loss, {xp, graph.variable(layer->weights()[0]), graph.variable(layer->weights()[1])});
    auto got = evaluate(grads, {{xp, x}});
    check_close(got[0], g.read_dataset("grad/x"), 1e-5, 1e-5);
    check_close(got[1], g.read_dataset("grad/kernel"), 1e-5, 1e-5);
    check_close(got[2], g.read_dataset("grad/bias"), 1e-5, 1e-5);

    // One and three SGD(0.1) steps on mse, from the golden weights each time.
    for (int steps : {1, 3}) {
      layer->set_weights({kernel, bias});
      model.compile(optimizers::SGD(0.1), "mse");
      for (int s = 0; s < steps; ++s) model.train_on_batch({x}, {g.read_dataset("t")});
      const std::string at = "after" + std::to_string(steps) + "/";
      const auto w = layer->get_weights();
      check_close(w[0], g.read_dataset(at + "kernel"), 1e-5, 1e-6);
      check_close(w[1], g.read_dataset(at + "bias"), 1e-5, 1e-6);
    }
  }
}

}  // namespace tower
