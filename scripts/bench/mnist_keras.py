"""The mnist_mlp / mnist_cnn example models in tf.keras (CPU): training samples/s and peak RSS.
Same layers, optimizer, loss and batch size as apps/bench_mnist.cpp."""
import os
import resource
import time

import mnist_data

args = mnist_data.parse_args()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402


tf.config.threading.set_intra_op_parallelism_threads(args.threads)
tf.config.threading.set_inter_op_parallelism_threads(args.threads)
keras.utils.set_random_seed(1)

x, y = mnist_data.load(args.data, args.samples)
y = keras.utils.to_categorical(y, 10)
if args.model == "mlp":
    x = x.reshape(-1, 784)
    model = keras.Sequential([keras.Input((784,)), layers.Dense(512, activation="relu"), layers.Dropout(0.2),
                              layers.Dense(512, activation="relu"), layers.Dropout(0.2),
                              layers.Dense(10, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.RMSprop(), metrics=["accuracy"])
else:
    x = x.reshape(-1, 28, 28, 1)
    model = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(32, (3, 3), activation="relu"),
                              layers.Conv2D(64, (3, 3), activation="relu"), layers.MaxPooling2D((2, 2)),
                              layers.Dropout(0.25), layers.Flatten(), layers.Dense(128, activation="relu"),
                              layers.Dropout(0.5), layers.Dense(10, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adadelta(1.0), metrics=["accuracy"])
model.fit(x[:2 * args.batch_size], y[:2 * args.batch_size], batch_size=args.batch_size, epochs=1, verbose=0)  # warm-up
start = time.perf_counter()
history = model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, verbose=0)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
n = x.shape[0]
print(f"tf.keras {args.model} batch {args.batch_size}: {n * args.epochs / seconds:.1f} samples/s, peak RSS {peak} MiB, "
      f"loss {history.history['loss'][-1]:.4f}")
