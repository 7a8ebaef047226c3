"""The bench_rnn model in tf.keras (Keras 3 on TensorFlow, CPU): LSTM or GRU over 50 steps of 32
features, Dense(10) softmax, sparse categorical crossentropy, Adam, batch 128, random data."""
import argparse
import os
import resource
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
p = argparse.ArgumentParser()
p.add_argument("--cell", default="lstm")
p.add_argument("--batch-size", type=int, default=128)
p.add_argument("--samples", type=int, default=4096)
p.add_argument("--steps", type=int, default=50)
p.add_argument("--units", type=int, default=128)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--threads", type=int, default=2)
args = p.parse_args()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(args.threads)
tf.config.threading.set_inter_op_parallelism_threads(args.threads)
keras.utils.set_random_seed(1)
x = np.random.default_rng(2).standard_normal((args.samples, args.steps, 32)).astype("float32")
y = (np.arange(args.samples) % 10).astype("int32")
rnn = keras.layers.LSTM if args.cell == "lstm" else keras.layers.GRU
model = keras.Sequential([keras.Input((args.steps, 32)), rnn(args.units), keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(x, y, batch_size=args.batch_size, epochs=1, verbose=0)  # warm-up
start = time.perf_counter()
history = model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, verbose=0)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"tf.keras {keras.__version__} {args.cell}({args.units}) steps {args.steps} batch {args.batch_size}: "
      f"{args.samples * args.epochs / seconds:.1f} samples/s, peak RSS {peak} MiB, loss {history.history['loss'][-1]:.4f}")
