"""Full-model HDF5 files written by real Keras, for tower's load_model tests (tests/io/test_keras_model.cpp).

Run from the repository root:  /work/venv-tf/bin/python tests/golden/make_model_files.py
(tensorflow-cpu with Keras 3 and tf_keras, h5py); an argument tf_keras, keras3 or keras1 writes one part. Writes tests/golden/files/models/:

  <case>_<writer>.h5       model.save("x.h5") after 3 training steps on the case's batch; writer is
                           tf_keras (tf.keras 2.x) or keras3 (Keras 3's legacy .h5 writer)
  <case>_<writer>_data.h5  x (x0, x1 for two inputs), y, predict = model.predict(x) when saved, and
                           after/<layer>/<i>: every weight of every layer after ONE more train_on_batch(x, y)
                           on the saved model -- what a loaded model must reach to prove that training
                           continues where it stopped (optimizer slots and step count restored)

Cases: mlp (Sequential Dense-Dense, Adam, sparse labels), cnn (Conv2D-MaxPooling2D-Flatten-Dense, SGD with
momentum, one-hot labels), merge (two inputs, a nested Sequential, Concatenate, RMSprop with momentum),
multi_gpu (tf_keras only: Keras's multi_gpu_model layout built by hand -- Input, two Lambda slices, the
template Sequential called on each, Concatenate -- whose template must come back), theano (the cnn file
re-labelled backend "theano" with its kernels flipped, as a Theano-backend Keras wrote them), and keras1
(written with h5py in Keras 1.2.2's layout: list-style Sequential config with output_dim/init, weights
"dense_1_W"/"dense_1_b", keras_version 1.2.2, Keras 1's training_config with "lr").
"""
import json
import os
import sys

import h5py
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files", "models")
rng = np.random.default_rng(7)


def batch(case):
    if case == "cnn":
        x = rng.standard_normal((6, 6, 6, 1)).astype("float32")
        y = np.eye(2, dtype="float32")[[0, 1, 1, 0, 1, 0]]
        return [x], y
    if case == "merge":
        return [rng.standard_normal((5, 4)).astype("float32"), rng.standard_normal((5, 3)).astype("float32")], \
            rng.standard_normal((5, 2)).astype("float32")
    return [rng.standard_normal((8, 5)).astype("float32")], np.array([0, 1, 2, 1, 0, 2, 2, 1], dtype="int32")


def build(keras, case):
    L = keras.layers
    if case == "mlp":
        m = keras.Sequential([keras.Input((5,)), L.Dense(7, activation="relu"), L.Dense(3, activation="softmax")])
        m.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
    elif case == "cnn":
        m = keras.Sequential([keras.Input((6, 6, 1)), L.Conv2D(3, (3, 3), activation="relu"), L.MaxPooling2D((2, 2)),
                              L.Flatten(), L.Dense(2, activation="softmax")])
        m.compile(keras.optimizers.SGD(0.1, momentum=0.9), "categorical_crossentropy", metrics=["accuracy"])
    elif case == "merge":
        a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
        inner = keras.Sequential([keras.Input((4,)), L.Dense(3, activation="tanh")], name="inner")
        h = L.Concatenate()([inner(a), b])
        out = L.Dense(2, name="out")(h)
        m = keras.Model([a, b], out, name="merge")
        m.compile(keras.optimizers.RMSprop(0.01, momentum=0.5), "mse", metrics=["mae"])
    elif case == "multi_gpu":
        template = keras.Sequential([keras.Input((5,)), L.Dense(4, activation="relu"), L.Dense(3, activation="softmax")],
                                    name="sequential_1")
        x = keras.Input((5,), name="input_1")
        s0 = L.Lambda(lambda t: t[:4], name="lambda_1")(x)
        s1 = L.Lambda(lambda t: t[4:], name="lambda_2")(x)
        out = L.Concatenate(axis=0, name="dense_2")([template(s0), template(s1)])
        m = keras.Model(x, out)
        m.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
        return m, template
    return m, m


def layer_weights(model):
    out = {}
    for layer in model.layers:
        for i, w in enumerate(layer.get_weights()):
            out[f"{layer.name}/{i}"] = w
    return out


def write_data(path, xs, y, predict, after):
    with h5py.File(path, "w") as f:
        for i, x in enumerate(xs):
            f[f"x{i}" if len(xs) > 1 else "x"] = x
        f["y"] = y
        f["predict"] = predict
        for k, v in (after or {}).items():
            f[f"after/{k}"] = v


def make(writer, case):
    if writer == "tf_keras":
        import tf_keras as keras
    else:
        import keras
    keras.utils.set_random_seed(1)
    xs, y = batch("mlp" if case == "multi_gpu" else case)
    model, template = build(keras, case)
    for _ in range(3):
        model.train_on_batch(xs if len(xs) > 1 else xs[0], y)
    path = os.path.join(OUT, f"{case}_{writer}.h5")
    model.save(path)
    x_in = xs if len(xs) > 1 else xs[0]
    predict = template.predict(x_in, verbose=0)
    after = None
    if case != "multi_gpu":
        model.train_on_batch(x_in, y)
        after = layer_weights(model)
    write_data(os.path.join(OUT, f"{case}_{writer}_data.h5"), xs, y, predict, after)
    print("wrote", path)


def make_theano():
    """The tf_keras cnn file as a Theano-backend Keras would have written it: kernels flipped."""
    src = os.path.join(OUT, "cnn_tf_keras.h5")
    dst = os.path.join(OUT, "theano_tf_keras.h5")
    with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
        for k, v in f.attrs.items():
            g.attrs[k] = v
        g.attrs["backend"] = "theano"
        f.copy("model_weights", g)
        f.copy("optimizer_weights", g)
        g["model_weights"].attrs["backend"] = "theano"
        for layer in g["model_weights"].attrs["layer_names"]:
            layer = layer.decode() if isinstance(layer, bytes) else layer
            grp = g["model_weights"][layer]
            for name in grp.attrs["weight_names"]:
                name = name.decode() if isinstance(name, bytes) else name
                if layer.startswith("conv2d") and "kernel" in name:
                    grp[name][...] = grp[name][()][::-1, ::-1, :, :]
    os.system(f"cp {os.path.join(OUT, 'cnn_tf_keras_data.h5')} {os.path.join(OUT, 'theano_tf_keras_data.h5')}")
    print("wrote", dst)


def make_keras1():
    """Keras 1.2.2's layout, written by hand (Keras 1 cannot be installed next to TF 2)."""
    xs, _ = batch("mlp")
    x = xs[0]
    w1 = rng.standard_normal((5, 4)).astype("float32")
    b1 = rng.standard_normal((4,)).astype("float32")
    w2 = rng.standard_normal((4, 3)).astype("float32")
    b2 = rng.standard_normal((3,)).astype("float32")
    h = np.maximum(x @ w1 + b1, 0)
    z = h @ w2 + b2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    config = {"class_name": "Sequential", "config": [
        {"class_name": "Dense", "config": {"name": "dense_1", "trainable": True, "batch_input_shape": [None, 5],
                                           "input_dtype": "float32", "output_dim": 4, "init": "glorot_uniform",
                                           "activation": "relu", "W_regularizer": None, "b_regularizer": None,
                                           "activity_regularizer": None, "W_constraint": None, "b_constraint": None,
                                           "bias": True, "input_dim": 5}},
        {"class_name": "Dense", "config": {"name": "dense_2", "trainable": True, "output_dim": 3,
                                           "init": "glorot_uniform", "activation": "softmax", "W_regularizer": None,
                                           "b_regularizer": None, "activity_regularizer": None, "W_constraint": None,
                                           "b_constraint": None, "bias": True, "input_dim": 4}}]}
    training = {"optimizer_config": {"class_name": "SGD", "config": {"lr": 0.01, "momentum": 0.0, "decay": 0.0,
                                                                     "nesterov": False}},
                "loss": "categorical_crossentropy", "metrics": ["accuracy"], "sample_weight_mode": None,
                "loss_weights": None}
    path = os.path.join(OUT, "keras1_mlp.h5")
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = np.bytes_("1.2.2")
        f.attrs["model_config"] = np.bytes_(json.dumps(config))
        f.attrs["training_config"] = np.bytes_(json.dumps(training))
        mw = f.create_group("model_weights")
        mw.attrs["layer_names"] = np.array([b"dense_1", b"dense_2"], dtype="S7")
        for name, w, b in (("dense_1", w1, b1), ("dense_2", w2, b2)):
            g = mw.create_group(name)
            g.attrs["weight_names"] = np.array([f"{name}_W".encode(), f"{name}_b".encode()], dtype="S9")
            g[f"{name}_W"] = w
            g[f"{name}_b"] = b
    write_data(os.path.join(OUT, "keras1_mlp_data.h5"), [x], np.eye(3, dtype="float32")[[0, 1, 2, 1, 0, 2, 2, 1]],
               p.astype("float32"), None)
    print("wrote", path)


if __name__ == "__main__":
    # One writer per process: tf_keras and Keras 3 do not share a process well. No argument runs all three.
    os.makedirs(OUT, exist_ok=True)
    if len(sys.argv) == 1:
        for w in ("tf_keras", "keras3", "keras1"):
            if os.system(f"{sys.executable} {os.path.abspath(__file__)} {w}") != 0:
                sys.exit(1)
    elif sys.argv[1] == "tf_keras":
        for case in ("mlp", "cnn", "merge", "multi_gpu"):
            make("tf_keras", case)
        make_theano()
    elif sys.argv[1] == "keras3":
        for case in ("mlp", "cnn", "merge"):
            make("keras3", case)
    elif sys.argv[1] == "keras1":
        make_keras1()
