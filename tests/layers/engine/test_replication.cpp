// The replication seam (layers/engine/replication.h): a model's engine graphs go through the
// Replication it holds (here a counting one, as a process group would sit there), and the single
// replica's custom-loss path (a scalar loss counts for every sample).
#include <doctest/doctest.h>

#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;

namespace {

struct Counts {
  int calls = 0, means = 0, updates = 0, before = 0, after = 0, callbacks = 0;
};

// One replica that counts what the model asks of it and passes it on to single_replica().
class CountingReplication : public Replication {
 public:
  explicit CountingReplication(Counts& counts) : counts_(counts) {}
  class Call : public ReplicatedCall {
   public:
    Call(std::unique_ptr<ReplicatedCall> inner, Counts& counts) : inner_(std::move(inner)), counts_(counts) {}
    const std::vector<SymbolicTensor>& outputs() const override { return inner_->outputs(); }
    SymbolicTensor batch_mean(std::size_t k, const SymbolicTensor& y, const SymbolicTensor& w,
                              const PerSample& per_sample) override {
      ++counts_.means;
      return inner_->batch_mean(k, y, w, per_sample);
    }
    std::vector<Node*> apply_gradients(const SymbolicTensor& loss, const std::vector<VariablePtr>& variables,
                                       optimizers::Optimizer& optimizer, const SymbolicTensor& lr,
                                       const SymbolicTensor& iteration) override {
      ++counts_.updates;
      return inner_->apply_gradients(loss, variables, optimizer, lr, iteration);
    }
    void before_step() override { ++counts_.before; }
    void after_step() override { ++counts_.after; }

   private:
    std::unique_ptr<ReplicatedCall> inner_;
    Counts& counts_;
  };
  std::unique_ptr<ReplicatedCall> call(Model& model, CallContext& ctx,
                                       const std::vector<SymbolicTensor>& inputs) const override {
    ++counts_.calls;
    return std::make_unique<Call>(single_replica().call(model, ctx, inputs), counts_);
  }
  int num_replicas_in_sync() const override { return 1; }
  std::vector<CallbackPtr> fit_callbacks() const override {
    ++counts_.callbacks;
    return {};
  }

 private:
  Counts& counts_;
};

Sequential small_model(std::uint64_t seed) {
  set_random_seed(seed);
  return Sequential({layers::Input({4}), layers::Dense(5, {.activation = "tanh"}), layers::Dense(2)});
}

std::pair<Tensor, Tensor> small_data() {
  return {random_normal({12, 4}, 0.0, 1.0, 7), random_normal({12, 2}, 0.0, 1.0, 8)};
}

}  // namespace

TEST_CASE("replication: fit, evaluate and predict run through the replication a model holds") {
  clear_session();
  Counts counts;
  auto model = small_model(1), reference = small_model(1);
  model.set_replication(std::make_shared<CountingReplication>(counts));
  CHECK(model.replication() != nullptr);
  for (auto* m : {&model, &reference}) m->compile(optimizers::SGD(0.1), "mse", {"mae"});
  auto [x, y] = small_data();
  const FitOptions fit{.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false};
  const auto h = model.fit(x, y, fit), h_ref = reference.fit(x, y, fit);
  CHECK(counts.calls == 1);      // one training graph, built once
  CHECK(counts.means == 2);      // the loss and the metric
  CHECK(counts.updates == 1);
  CHECK(counts.before == 6);     // 3 batches, 2 epochs
  CHECK(counts.after == 6);
  CHECK(counts.callbacks == 1);  // asked once per fit
  CHECK(h.history.at("loss") == h_ref.history.at("loss"));  // it passed everything on
  model.evaluate(x, y, {.verbose = 0});
  model.predict(x);
  CHECK(counts.calls == 3);  // the test and predict graphs
  check_close(model.predict(x), reference.predict(x), 0, 0);
  model.set_replication(nullptr);  // back to running as it is
  model.predict(x);
  CHECK(counts.calls == 3);
}

TEST_CASE("replication: a custom loss that returns a scalar counts for every sample, as in Keras") {
  clear_session();
  auto scalar = small_model(2), per_sample = small_model(2);
  // The batch's mean squared error as one number, and Keras's "mse" (per sample, then the mean).
  const losses::Loss batch_mse(
      [](const SymbolicTensor& t, const SymbolicTensor& p) { return ops::reduce_mean(ops::square(ops::subtract(p, t))); },
      "batch_mse");
  scalar.compile(optimizers::SGD(0.1), batch_mse);
  per_sample.compile(optimizers::SGD(0.1), "mse");
  auto [x, y] = small_data();
  const FitOptions fit{.batch_size = 4, .epochs = 2, .verbose = 0, .shuffle = false};
  const auto a = scalar.fit(x, y, fit), b = per_sample.fit(x, y, fit);
  for (std::size_t e = 0; e < 2; ++e) CHECK(a.history.at("loss")[e] == doctest::Approx(b.history.at("loss")[e]).epsilon(1e-5));
  for (std::size_t i = 0; i < scalar.get_weights().size(); ++i)
    check_close(scalar.get_weights()[i], per_sample.get_weights()[i], 1e-5, 1e-6);
}
