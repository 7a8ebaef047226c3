"""keras.io's convolutional autoencoder (examples/vision/autoencoder.py, the autoencoder part) on the
same digits as apps/conv_autoencoder.cpp, for the loss tower's test is held to (docs/examples.md).
Run: python tests/examples/conv_autoencoder_keras.py DIGITS_DIR EPOCHS"""
import gzip, sys
import numpy as np
import keras
from keras import layers


def idx_images(path):
    with gzip.open(path) as f:
        data = f.read()
    n = int.from_bytes(data[4:8], "big")
    return np.frombuffer(data, np.uint8, offset=16).reshape(n, 28, 28, 1).astype("float32") / 255.0


root, epochs = sys.argv[1], int(sys.argv[2])
train_data = idx_images(f"{root}/train-images-idx3-ubyte.gz")
test_data = idx_images(f"{root}/t10k-images-idx3-ubyte.gz")
keras.utils.set_random_seed(1)
input = layers.Input(shape=(28, 28, 1))
x = layers.Conv2D(32, (3, 3), activation="relu", padding="same")(input)
x = layers.MaxPooling2D((2, 2), padding="same")(x)
x = layers.Conv2D(32, (3, 3), activation="relu", padding="same")(x)
x = layers.MaxPooling2D((2, 2), padding="same")(x)
x = layers.Conv2DTranspose(32, (3, 3), strides=2, activation="relu", padding="same")(x)
x = layers.Conv2DTranspose(32, (3, 3), strides=2, activation="relu", padding="same")(x)
x = layers.Conv2D(1, (3, 3), activation="sigmoid", padding="same")(x)
autoencoder = keras.Model(input, x)
autoencoder.compile(optimizer="adam", loss="binary_crossentropy")
autoencoder.fit(x=train_data, y=train_data, epochs=epochs, batch_size=128, shuffle=True,
                validation_data=(test_data, test_data), verbose=2)
print("Test loss:", autoencoder.evaluate(test_data, test_data, verbose=0))
