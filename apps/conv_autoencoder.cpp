// keras.io's "Convolutional autoencoder for image denoising" (examples/vision/autoencoder.py), line by
// line: the autoencoder part, trained to reconstruct digits. Its decoder is two strided Conv2DTranspose
// layers; --upsampling swaps them for UpSampling2D + Conv2D, as the Keras blog's earlier version.
// docs/examples.md shows it beside the Python original and gives the test loss it reaches.
#include <iostream>

#include "apps/example_args.h"
#include "tower/io/datasets.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

int main(int argc, char** argv) try {
  bool upsampling = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--upsampling") {
      upsampling = true;
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  auto args = apps::parse_example_args(argc, argv, "conv_autoencoder [--upsampling]", 50);

  // def preprocess(array): normalizes and reshapes into the appropriate format.
  auto [train, test] = io::load_mnist(args.data);
  train = apps::first_samples(train, args.train_samples);
  Tensor train_data = io::to_float(train.first, 1.0 / 255, {-1, 28, 28, 1});
  Tensor test_data = io::to_float(test.first, 1.0 / 255, {-1, 28, 28, 1});

  auto input = layers::Input({28, 28, 1});
  // Encoder
  auto x = layers::Conv2D(32, {3, 3}, {.padding = "same", .activation = "relu"})(input);
  x = layers::MaxPooling2D({2, 2}, {.padding = "same"})(x);
  x = layers::Conv2D(32, {3, 3}, {.padding = "same", .activation = "relu"})(x);
  x = layers::MaxPooling2D({2, 2}, {.padding = "same"})(x);
  // Decoder
  if (upsampling) {
    x = layers::UpSampling2D({2, 2})(x);
    x = layers::Conv2D(32, {3, 3}, {.padding = "same", .activation = "relu"})(x);
    x = layers::UpSampling2D({2, 2})(x);
    x = layers::Conv2D(32, {3, 3}, {.padding = "same", .activation = "relu"})(x);
  } else {
    x = layers::Conv2DTranspose(32, {3, 3}, {.strides = {2}, .padding = "same", .activation = "relu"})(x);
    x = layers::Conv2DTranspose(32, {3, 3}, {.strides = {2}, .padding = "same", .activation = "relu"})(x);
  }
  x = layers::Conv2D(1, {3, 3}, {.padding = "same", .activation = "sigmoid"})(x);

  // Autoencoder
  Model autoencoder(input, x);
  autoencoder.compile("adam", losses::BinaryCrossentropy());
  if (args.verbose) autoencoder.summary();

  autoencoder.fit(train_data, train_data,
                  {.batch_size = args.batch_size,
                   .epochs = args.epochs,
                   .verbose = args.verbose,
                   .validation_data = std::pair{std::vector{test_data}, std::vector{test_data}},
                   .shuffle = true});
  const auto score = autoencoder.evaluate(test_data, test_data, {.verbose = 0});
  std::cout << "Test loss: " << score[0] << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "conv_autoencoder: " << e.what() << "\n";
  return 1;
}
