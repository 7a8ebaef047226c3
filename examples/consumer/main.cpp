// A program of one's own on the installed tower (docs/using-tower.md): a small Sequential classifier
// fitted for a few epochs on random points (label: which side of a plane a point lies), then evaluated.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include <tower/tower.h>

int main() {
  using namespace tower;
  try {
    const std::int64_t samples = 256, features = 8;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> points(samples * features);  // (samples, features)
    std::vector<std::int32_t> sides(samples);       // (samples,)
    for (std::int64_t i = 0; i < samples; ++i) {
      for (std::int64_t j = 0; j < features; ++j) points[i * features + j] = normal(rng);
      sides[i] = points[i * features] + points[i * features + 1] > 0 ? 1 : 0;
    }
    auto x = Tensor::from_vector<float>({samples, features}, points);
    auto y = Tensor::from_vector<std::int32_t>({samples}, sides);

    Sequential model({
        layers::Input({features}),
        layers::Dense(16, {.activation = "relu"}),
        layers::Dense(2, {.activation = "softmax"}),
    });
    model.compile(optimizers::Adam(1e-2), "sparse_categorical_crossentropy", {"accuracy"});
    auto history = model.fit(x, y, {.batch_size = 32, .epochs = 5, .verbose = 0, .seed = 1});
    auto logs = model.evaluate(x, y, {.verbose = 0});
    std::printf("tower consumer: %zu epochs of %lld steps, loss %.4f, accuracy %.4f\n",
                history.epoch.size(), static_cast<long long>(samples / 32), logs.at("loss"), logs.at("accuracy"));
    return logs.at("accuracy") > 0.8 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tower consumer: %s\n", e.what());
    return 1;
  }
}
