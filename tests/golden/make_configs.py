#!/usr/bin/env python3
"""Generates the model_config JSON goldens that tests/io/test_model_config.cpp reads.

Run from the repository root (environment: tests/golden/README.md):

    /work/venv-tf/bin/python tests/golden/make_configs.py

For every case below, in files/configs/:

  <case>.tf_keras.json   tf_keras's model.to_json() (the tf.keras 2.x format: legacy inbound_nodes
                         [[["input_1", 0, 0, {}]]], keras_version and backend at the root)
  <case>.keras3.json     the root attribute model_config of the .h5 that Keras 3's model.save("x.h5")
                         writes (not Keras 3's to_json(), whose format differs): inbound_nodes as
                         {"args": [{"class_name": "__keras_tensor__", ...}], "kwargs": {}}
  <case>.weights.h5      the tf_keras model's weights in Keras's legacy save_weights layout
  <case>.io.h5           /x0, /x1, ...: an input batch; /y0, /y1, ...: tf_keras's predict(x) with those
                         weights (Keras 3's predictions with the same weights are checked equal here)

Every layer is named, so the C++ tests can build the same models by hand. Weights come from a seeded
numpy generator (moving variances kept positive), everything is float32 (Embedding inputs int32).
Checking tower's own JSON with Keras (nothing is written to files/):

    TOWER_WRITE_CONFIG_DIR=/tmp/cfg build/tests/test_serialization -tc="*equal tf_keras*"
    /work/venv-tf/bin/python tests/golden/make_configs.py --check-cpp /tmp/cfg

loads every <case>.tower.json with tf_keras's model_from_json and with Keras 3's legacy loader (the
one its load_model uses for .h5 files), loads <case>.weights.h5 and compares the predictions with
<case>.io.h5.

The hand-written configs of Keras 1.2 and Keras 2.0-2.2.4 (keras1_*.json, keras2_*.json) are not
made here; see tests/golden/README.md.
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import h5py
import keras
import numpy as np
import tf_keras
from keras.src.legacy.saving import legacy_h5_format
from tf_keras.src.saving.legacy import hdf5_format

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files", "configs")


# Each builder gets a Keras module (tf_keras or keras) and returns (model, [input arrays]).
def mlp(K, rng):
    L = K.layers
    model = K.Sequential([
        K.Input((20,), name="mlp_input"),
        L.Dense(16, activation="relu", kernel_initializer="he_normal",
                bias_initializer=K.initializers.Constant(0.1),
                kernel_regularizer=K.regularizers.l2(0.01), name="dense_a"),
        L.BatchNormalization(name="bn"),
        L.Dropout(0.25, name="drop"),
        L.Dense(8, kernel_initializer=K.initializers.RandomUniform(-0.1, 0.1),
                bias_regularizer=K.regularizers.l1(0.001), name="dense_b"),
        L.Activation("tanh", name="act"),
        L.Dense(4, activation="softmax", kernel_regularizer=K.regularizers.l1_l2(0.01, 0.02), name="dense_c"),
    ], name="mlp")
    return model, [rng.normal(size=(4, 20))]


def cnn(K, rng):
    L = K.layers
    model = K.Sequential([
        K.Input((10, 10, 3), name="cnn_input"),
        L.Conv2D(4, 3, padding="same", activation="relu", name="conv_a"),
        L.ZeroPadding2D(((1, 0), (0, 1)), name="pad"),
        L.MaxPooling2D(2, name="max_pool"),
        L.Conv2D(6, (3, 2), strides=(1, 1), use_bias=False, name="conv_b"),
        L.AveragePooling2D(2, strides=1, padding="same", name="avg_pool"),
        L.Flatten(name="flat"),
        L.Reshape((3, 4, 6), name="reshape"),
        L.GlobalAveragePooling2D(name="gap"),
        L.Dense(3, name="out"),
    ], name="cnn")
    return model, [rng.normal(size=(3, 10, 10, 3))]


def merge(K, rng):
    L = K.layers
    a = K.Input((6,), name="in_a")
    b = K.Input((6,), name="in_b")
    d1 = L.Dense(8, activation="relu", name="d1")(a)
    d2 = L.Dense(8, activation="tanh", name="d2")(b)
    cat = L.Concatenate(name="cat")([d1, d2])
    add = L.Add(name="add")([d1, d2])
    mul = L.Multiply(name="mul")([d1, d2])
    sub = L.Subtract(name="sub")([d1, d2])
    avg = L.Average(name="avg")([d1, d2, add])
    mx = L.Maximum(name="max")([d1, d2])
    all_ = L.Concatenate(axis=-1, name="cat_all")([cat, mul, sub, avg])
    y1 = L.Dense(3, activation="softmax", name="y1")(all_)
    y2 = L.Dense(1, name="y2")(mx)
    model = K.Model([a, b], [y1, y2], name="merge")
    return model, [rng.normal(size=(4, 6)), rng.normal(size=(4, 6))]


def nested(K, rng):
    L = K.layers
    inner = K.Sequential([K.Input((5,), name="inner_input"), L.Dense(4, activation="relu", name="inner_d1"),
                          L.Dense(3, name="inner_d2")], name="inner_seq")
    fi = K.Input((3,), name="func_input")
    inner_f = K.Model(fi, L.Dense(2, activation="tanh", name="func_d")(fi), name="inner_func")
    x = K.Input((5,), name="outer_input")
    h = inner(x)
    y = inner_f(h)
    z = L.Dense(2, name="outer_d")(L.Concatenate(name="outer_cat")([h, y]))
    model = K.Model(x, z, name="nested")
    return model, [rng.normal(size=(4, 5))]


def shared(K, rng):
    L = K.layers
    a = K.Input((4,), name="left")
    b = K.Input((4,), name="right")
    dense = L.Dense(3, activation="relu", name="shared_dense")
    sa, sb = dense(a), dense(b)
    diff = L.Subtract(name="diff")([sa, sb])
    again = dense(L.Dense(4, name="proj")(diff))  # a third call of the shared layer
    y = L.Dense(1, name="score")(L.Concatenate(name="join")([diff, again]))
    model = K.Model([a, b], y, name="siamese")
    return model, [rng.normal(size=(4, 4)), rng.normal(size=(4, 4))]


def embedding(K, rng):
    L = K.layers
    model = K.Sequential([
        K.Input((5,), dtype="int32", name="tokens"),
        L.Embedding(10, 4, name="embed"),
        L.Flatten(name="flat"),
        L.Dense(2, name="out"),
    ], name="embedding")
    return model, [rng.integers(0, 10, size=(4, 5)).astype("int32")]


def activations(K, rng):
    L = K.layers
    model = K.Sequential([
        K.Input((4, 4, 2), name="act_input"),
        L.Conv2D(3, 2, name="conv"),
        L.GlobalMaxPooling2D(name="gmp"),
        L.Dense(8, name="d1"),
        L.ReLU(max_value=2.0, negative_slope=0.1, threshold=0.2, name="relu"),
        L.LeakyReLU(0.2, name="leaky"),
        L.ELU(0.5, name="elu"),
        L.Dense(5, name="d2"),
        L.Softmax(name="softmax"),
    ], name="activations")
    return model, [rng.normal(size=(4, 4, 4, 2))]


# The architecture that the hand-written Keras 1.2 / 2.0 / 2.2.4 configs describe, with the names
# those versions gave (dense_1, dropout_1, ...).
def dialect_mlp(K, rng):
    L = K.layers
    model = K.Sequential([
        K.Input((20,), name="dense_1_input"),
        L.Dense(16, activation="relu", name="dense_1"),
        L.Dropout(0.5, name="dropout_1"),
        L.Dense(4, name="dense_2"),
        L.Activation("softmax", name="activation_1"),
    ], name="sequential_1")
    return model, [rng.normal(size=(4, 20))]


def dialect_cnn(K, rng):
    L = K.layers
    model = K.Sequential([
        K.Input((8, 8, 1), name="convolution2d_input_1"),
        L.Conv2D(4, (3, 3), padding="same", activation="relu", name="convolution2d_1"),
        L.MaxPooling2D((2, 2), name="maxpooling2d_1"),
        L.Flatten(name="flatten_1"),
        L.Dense(3, name="dense_1"),
    ], name="sequential_1")
    return model, [rng.normal(size=(3, 8, 8, 1))]


def dialect_func(K, rng):
    L = K.layers
    a = K.Input((6,), name="input_1")
    b = K.Input((6,), name="input_2")
    h = L.Dense(5, activation="relu", name="dense_1")(a)
    c = L.Concatenate(name="merge_1")([h, b])
    y = L.Dense(2, activation="softmax", name="dense_2")(c)
    return K.Model([a, b], y, name="model_1"), [rng.normal(size=(4, 6)), rng.normal(size=(4, 6))]


CASES = [mlp, cnn, merge, nested, shared, embedding, activations, dialect_mlp, dialect_cnn, dialect_func]


def random_weights(model, rng):
    out = []
    for w in model.weights:
        value = rng.normal(scale=0.5, size=tuple(w.shape))
        if "moving_variance" in w.name:
            value = np.abs(value) + 0.5
        out.append(value.astype("float32"))
    return out


def main():
    os.makedirs(HERE, exist_ok=True)
    for build in CASES:
        name = build.__name__
        tf_keras.backend.clear_session()
        keras.backend.clear_session()
        rng = np.random.default_rng(len(name) * 31 + 7)
        model, xs = build(tf_keras, rng)
        xs = [x if x.dtype == np.int32 else x.astype("float32") for x in xs]
        weights = random_weights(model, rng)
        model.set_weights(weights)
        ys = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        ys = ys if isinstance(ys, list) else [ys]

        with open(os.path.join(HERE, f"{name}.tf_keras.json"), "w") as f:
            json.dump(json.loads(model.to_json()), f, indent=1)
            f.write("\n")
        with h5py.File(os.path.join(HERE, f"{name}.weights.h5"), "w", libver=("v108", "v108")) as f:
            hdf5_format.save_weights_to_hdf5_group(f, model)
        with h5py.File(os.path.join(HERE, f"{name}.io.h5"), "w", libver=("v108", "v108")) as f:
            for i, x in enumerate(xs):
                f[f"x{i}"] = x
            for i, y in enumerate(ys):
                f[f"y{i}"] = y.astype("float32")

        # Keras 3: the same model, the same weights (same order), its legacy .h5 writer's model_config.
        model3, _ = build(keras, rng)
        model3.set_weights(weights)
        ys3 = model3.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        ys3 = ys3 if isinstance(ys3, list) else [ys3]
        for y, y3 in zip(ys, ys3):
            np.testing.assert_allclose(y, y3, rtol=1e-5, atol=1e-6)
        tmp = os.path.join(HERE, f"_{name}.keras3.h5")
        model3.save(tmp)
        with h5py.File(tmp, "r") as f:
            config = json.loads(f.attrs["model_config"])
        os.remove(tmp)
        with open(os.path.join(HERE, f"{name}.keras3.json"), "w") as f:
            json.dump(config, f, indent=1)
            f.write("\n")
        print(name, "ok")


def check_cpp(directory):
    from keras.src.legacy.saving import saving_utils
    for build in CASES:
        name = build.__name__
        path = os.path.join(directory, f"{name}.tower.json")
        with open(path) as f:
            text = f.read()
        with h5py.File(os.path.join(HERE, f"{name}.io.h5"), "r") as f:
            xs = [f[f"x{i}"][...] for i in range(len(f)) if f"x{i}" in f]
            ys = [f[f"y{i}"][...] for i in range(len(f)) if f"y{i}" in f]
        tf_keras.backend.clear_session()
        keras.backend.clear_session()
        loaded = {"tf_keras": tf_keras.models.model_from_json(text)}
        try:
            loaded["keras3"] = saving_utils.model_from_config(json.loads(text))
        except Exception as e:  # noqa: BLE001
            # Keras 3's legacy loader converts a BatchNormalization axis list and nested-model node
            # numbers only for tf.keras files' top level: it fails on tf_keras's own JSON too.
            print(name, "keras3 cannot load it:", str(e).splitlines()[-1][:120])
        for which, model in loaded.items():
            # The legacy readers directly: both Keras lines take a name ending in .weights.h5 for their
            # newer format.
            reader = hdf5_format if which == "tf_keras" else legacy_h5_format
            with h5py.File(os.path.join(HERE, f"{name}.weights.h5"), "r") as f:
                reader.load_weights_from_hdf5_group(f, model)
            got = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
            got = got if isinstance(got, list) else [got]
            for y, g in zip(ys, got):
                np.testing.assert_allclose(g, y, rtol=1e-5, atol=1e-6)
            print(name, which, "loads tower's JSON and predicts as before")


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "--check-cpp":
        check_cpp(sys.argv[2])
    else:
        main()
