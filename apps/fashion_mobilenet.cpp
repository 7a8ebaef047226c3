// A small MobileNet-style classifier on Fashion-MNIST, written as a Keras user would: preprocessing and
// augmentation inside the model (Rescaling, RandomFlip, RandomContrast), then depthwise-separable blocks
// (DepthwiseConv2D + BatchNormalization + ReLU, 1x1 Conv2D + BatchNormalization + ReLU, MobileNet's
// "conv_dw"), a SeparableConv2D, global average pooling and a softmax. Prints "Test accuracy: X".
// docs/examples.md gives the accuracy and epochs it takes.
#include <algorithm>
#include <iostream>
#include <memory>

#include "apps/example_args.h"
#include "tower/io/datasets.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

namespace {

// MobileNet's depthwise-separable block: 3x3 depthwise, BN, ReLU, then 1x1 pointwise, BN, ReLU.
KerasTensor conv_dw(const KerasTensor& x, std::int64_t filters, std::int64_t strides) {
  auto y = layers::DepthwiseConv2D(3, {.strides = {strides}, .padding = "same", .use_bias = false})(x);
  y = layers::ReLU()(layers::BatchNormalization()(y));
  y = layers::Conv2D(filters, 1, {.use_bias = false})(y);
  return layers::ReLU()(layers::BatchNormalization()(y));
}

}  // namespace

int main(int argc, char** argv) try {
  auto args = apps::parse_example_args(argc, argv, "fashion_mobilenet", 8);
  auto [train, test] = io::load_mnist(args.data);
  train = apps::first_samples(train, args.train_samples);
  // The images stay uint8 values in float32 (0..255): Rescaling in the model divides them.
  Tensor x_train = io::to_float(train.first, 1.0, {-1, 28, 28, 1});
  Tensor x_test = io::to_float(test.first, 1.0, {-1, 28, 28, 1});
  Tensor y_train = io::to_categorical(train.second, 10);
  Tensor y_test = io::to_categorical(test.second, 10);

  auto inputs = layers::Input({28, 28, 1});
  auto x = layers::RandomFlip("horizontal", {.seed = 1})(inputs);      // active in training only
  x = layers::RandomContrast(0.1, {.value_range = {0, 255}, .seed = 2})(x);
  x = layers::Rescaling(1.0 / 255)(x);
  x = layers::Conv2D(32, 3, {.strides = {2}, .padding = "same", .use_bias = false})(x);  // 14x14
  x = layers::ReLU()(layers::BatchNormalization()(x));
  x = conv_dw(x, 64, 1);
  x = conv_dw(x, 128, 2);  // 7x7
  x = conv_dw(x, 128, 1);
  x = layers::SeparableConv2D(256, 3, {.padding = "same", .activation = "relu"})(x);
  x = layers::GlobalAveragePooling2D()(x);
  x = layers::Dropout(0.2)(x);
  auto outputs = layers::Dense(10, {.activation = "softmax"})(x);
  Model model(inputs, outputs, "fashion_mobilenet");
  // Adam with a cosine decay of its learning rate over the whole run (keras.optimizers.schedules.CosineDecay).
  const std::int64_t steps = args.epochs * ((x_train.shape()[0] + args.batch_size - 1) / args.batch_size);
  auto schedule = std::make_shared<optimizers::CosineDecay>(0.002, std::max<std::int64_t>(steps, 1));
  model.compile(optimizers::Adam(schedule), losses::CategoricalCrossentropy(), {"accuracy"});
  if (args.verbose) model.summary();

  model.fit(x_train, y_train,
            {.batch_size = args.batch_size,
             .epochs = args.epochs,
             .verbose = args.verbose,
             .validation_data = std::pair{std::vector{x_test}, std::vector{y_test}}});
  auto score = model.evaluate(x_test, y_test, {.verbose = 0});
  std::cout << "Test loss: " << score[0] << "\n";
  std::cout << "Test accuracy: " << score[1] << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fashion_mobilenet: " << e.what() << "\n";
  return 1;
}
