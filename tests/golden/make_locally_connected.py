"""Goldens for tower's LocallyConnected1D/2D from real tf.keras 2 (tf_keras; Keras 3 has no such layers).

Run from the repository root:  /tmp/venv-tf/bin/python tests/golden/make_locally_connected.py
Writes tests/golden/files/locally_connected.h5, one group per case:

  x, kernel, bias       the input and the layer's weights (tf.keras's layout of the case's implementation:
                        1, (positions, window, filters); 2, the dense masked kernel; 3, the sparse values)
  y                     layer(x)
  r, grad/x, grad/kernel, grad/bias
                        gradients of sum(y * r) (tf.GradientTape)
  t, after1/kernel, after1/bias, after3/kernel, after3/bias
                        the weights after one and three train_on_batch(x, t) steps of
                        Sequential([layer]) compiled with SGD(0.1) and "mse", from the weights above
"""
import os

import h5py
import numpy as np
import tensorflow as tf
import tf_keras as keras

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files", "locally_connected.h5")
L = keras.layers

CASES = {
    "lc2d": (lambda: L.LocallyConnected2D(3, (2, 3), strides=(2, 1), activation="tanh"), (3, 6, 5, 2)),
    "lc2d_cf": (lambda: L.LocallyConnected2D(2, 2, data_format="channels_first"), (3, 2, 5, 4)),
    "lc1d": (lambda: L.LocallyConnected1D(4, 3, strides=2, activation="relu"), (3, 9, 2)),
    "lc1d_cf": (lambda: L.LocallyConnected1D(2, 2, data_format="channels_first", activation="sigmoid"), (3, 3, 7)),
    # Implementations 2 (dense masked kernel) and 3 (sparse kernel), "valid" and "same" (not allowed with 1).
    "lc2d_i2": (lambda: L.LocallyConnected2D(2, (2, 3), strides=(2, 1), activation="tanh", implementation=2),
                (2, 5, 4, 2)),
    "lc2d_i2_same_cf": (lambda: L.LocallyConnected2D(2, (2, 3), strides=(2, 1), padding="same",
                                                     data_format="channels_first", implementation=2), (2, 2, 3, 4)),
    "lc2d_i3": (lambda: L.LocallyConnected2D(3, 2, data_format="channels_first", activation="relu",
                                             implementation=3), (2, 2, 4, 3)),
    "lc2d_i3_same": (lambda: L.LocallyConnected2D(2, (3, 2), strides=2, padding="same", activation="tanh",
                                                  implementation=3), (2, 5, 4, 2)),
    "lc1d_i2": (lambda: L.LocallyConnected1D(2, 3, strides=2, activation="relu", implementation=2), (2, 7, 2)),
    "lc1d_i2_same_cf": (lambda: L.LocallyConnected1D(2, 2, padding="same", data_format="channels_first",
                                                     activation="sigmoid", implementation=2), (2, 3, 5)),
    "lc1d_i3": (lambda: L.LocallyConnected1D(3, 2, activation="tanh", implementation=3), (2, 6, 2)),
    "lc1d_i3_same_cf": (lambda: L.LocallyConnected1D(2, 3, strides=2, padding="same", data_format="channels_first",
                                                     implementation=3), (2, 2, 7)),
}


def main():
    rng = np.random.default_rng(18)
    keras.utils.set_random_seed(18)
    with h5py.File(OUT, "w") as f:
        for name, (make, shape) in CASES.items():
            g = f.create_group(name)
            x = rng.standard_normal(shape).astype("float32")
            layer = make()
            model = keras.Sequential([keras.Input(shape[1:]), layer])
            kernel, bias = layer.get_weights()
            bias = rng.standard_normal(bias.shape).astype("float32") * 0.5
            layer.set_weights([kernel, bias])
            g["x"], g["kernel"], g["bias"] = x, kernel, bias
            xt = tf.constant(x)
            with tf.GradientTape() as tape:
                tape.watch(xt)
                y = layer(xt)
                r = tf.constant(rng.standard_normal(y.shape).astype("float32"))
                loss = tf.reduce_sum(y * r)
            gx, gk, gb = tape.gradient(loss, [xt, layer.kernel, layer.bias])
            g["y"], g["r"] = y.numpy(), r.numpy()
            g["grad/x"], g["grad/kernel"], g["grad/bias"] = gx.numpy(), gk.numpy(), gb.numpy()
            t = rng.standard_normal(y.shape).astype("float32")
            g["t"] = t
            model.compile(keras.optimizers.SGD(0.1), "mse")
            for step in range(3):
                model.train_on_batch(x, t)
                if step in (0, 2):
                    k, b = layer.get_weights()
                    g[f"after{step + 1}/kernel"], g[f"after{step + 1}/bias"] = k, b
            print(name, "y", y.shape, "kernel", kernel.shape, "bias", bias.shape)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
