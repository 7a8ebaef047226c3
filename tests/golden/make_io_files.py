#!/usr/bin/env python3
"""Generates the Keras-written legacy HDF5 weight files that tests/io/test_keras_weights.cpp loads.

Run from the repository root with Keras 3 and h5py (see tests/golden/README.md for the environment):

    python tests/golden/make_io_files.py

files/keras_io_weights.h5   written by Keras 3's legacy writer
                            (keras.src.legacy.saving.legacy_h5_format.save_weights_to_hdf5_group),
                            exactly what model.save_weights("x.h5") wrote before Keras 3 (variable-length
                            string attributes as h5py 3 writes them, weight names as Variable.path:
                            "d1/kernel", "inner/d3/kernel", no ":0").
files/keras_io_expected.h5  /x (2, 4) and /y (2, 2): an input batch and Keras's model.predict(x).

The model (every layer named, so the C++ test builds the same one):
    x = Input((4,), name="x")
    h = Dense(5, activation="relu", name="d1")(x)
    inner = Model(Input((5,)), Dense(2, name="d4")(Dense(3, activation="tanh", name="d3")(...)), name="inner")
    y = inner(h)                      # a nested model: one group "inner" with all four weights
with d3 frozen (trainable = False) so that the nested group lists d4's weights before d3's (trainable
first). Weights come from a seeded numpy generator; everything is float32.
"""
import os

import h5py
import keras
import numpy as np
from keras.src.legacy.saving import legacy_h5_format

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files")


def build():
    inner_in = keras.Input((5,), name="inner_x")
    d3 = keras.layers.Dense(3, activation="tanh", name="d3")
    inner = keras.Model(inner_in, keras.layers.Dense(2, name="d4")(d3(inner_in)), name="inner")
    d3.trainable = False
    x = keras.Input((4,), name="x")
    y = inner(keras.layers.Dense(5, activation="relu", name="d1")(x))
    return keras.Model(x, y, name="outer")


def main():
    rng = np.random.default_rng(7)
    model = build()
    model.set_weights([rng.uniform(-1, 1, w.shape).astype("float32") for w in model.get_weights()])
    x = rng.uniform(-1, 1, (2, 4)).astype("float32")
    y = model.predict(x, verbose=0)
    with h5py.File(os.path.join(HERE, "keras_io_weights.h5"), "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, model)
    # HDF5's 1.8 format (compact groups, readable by HDF5 1.10) keeps this file small.
    with h5py.File(os.path.join(HERE, "keras_io_expected.h5"), "w", libver=("v108", "v108")) as f:
        f["x"] = x
        f["y"] = y
        f.attrs["keras_version"] = keras.__version__


if __name__ == "__main__":
    main()
