#!/usr/bin/env python3
"""Generates the weight file of a Keras 2 multi_gpu_model wrapper that tests/io/test_keras_weights.cpp
loads into the plain model (docs/architecture.md: "a Keras file saved from a multi_gpu_model loads too").

Run from the repository root with tf_keras (the tf.keras 2 line; see tests/golden/README.md):

    python tests/golden/make_multi_gpu_file.py

tf.keras removed multi_gpu_model in TF 2.4; this builds the same graph its code built: an Input, one
Lambda per GPU slicing the batch, a call of the inner model per slice, and a Concatenate along the
batch named after the inner model's output. Saving the wrapper (what users of multi_gpu_model did,
keras #8123, #11253) nests the inner model: one layer group "seq" holds all its weights.

files/keras_multi_gpu_weights.h5   the wrapper's save_weights (tf_keras's legacy HDF5 writer)
files/keras_multi_gpu_expected.h5  /x (4, 6) and /y (4, 3): a batch and the inner model's predict(x)

The inner model, every layer named so the C++ test builds the same one:
    Sequential([Input((6,)), Dense(8, relu, name="a"), BatchNormalization(name="bn"),
                Dense(3, softmax, name="b")], name="seq")
Weights (the moving statistics included) come from a seeded numpy generator; float32.
"""
import os

import h5py
import numpy as np
import tensorflow as tf
import tf_keras as keras
from tf_keras.src.saving.legacy import hdf5_format

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files")
GPUS = 2


def get_slice(data, i, parts):  # as keras.utils.multi_gpu_model's
    shape = tf.shape(data)
    batch_size = shape[:1]
    step = batch_size // parts
    size = batch_size - step * i if i == parts - 1 else step
    start = step * i
    return tf.slice(data, tf.concat([start, tf.zeros_like(shape[1:])], axis=0),
                    tf.concat([size, shape[1:]], axis=0))


def main():
    inner = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu", name="a"),
                              keras.layers.BatchNormalization(name="bn"),
                              keras.layers.Dense(3, activation="softmax", name="b")], name="seq")
    rng = np.random.default_rng(11)
    inner.set_weights([rng.uniform(0.1 if "variance" in w.name else -1, 1, w.shape).astype("float32")
                       for w in inner.weights])
    x = keras.Input((6,), name="input_1")
    outputs = [inner(keras.layers.Lambda(get_slice, output_shape=(6,), arguments={"i": i, "parts": GPUS},
                                         name=f"lambda_{i + 1}")(x)) for i in range(GPUS)]
    wrapper = keras.Model(x, keras.layers.Concatenate(axis=0, name="b")(outputs))
    batch = rng.uniform(-1, 1, (4, 6)).astype("float32")
    with h5py.File(os.path.join(HERE, "keras_multi_gpu_weights.h5"), "w") as f:
        hdf5_format.save_weights_to_hdf5_group(f, wrapper)
    with h5py.File(os.path.join(HERE, "keras_multi_gpu_expected.h5"), "w", libver=("v108", "v108")) as f:
        f["x"] = batch
        f["y"] = inner.predict(batch, verbose=0)
        f.attrs["keras_version"] = keras.__version__


if __name__ == "__main__":
    main()
