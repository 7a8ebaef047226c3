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
vision (Conv2D, DepthwiseConv2D, SeparableConv2D, Conv2DTranspose, UpSampling2D bilinear and nearest,
Cropping2D; Adam), volume (functional: Conv3D, MaxPooling3D, ZeroPadding3D, Conv3DTranspose, AveragePooling3D,
UpSampling3D, Cropping3D, grouped Conv3D, GlobalAveragePooling3D, GlobalMaxPooling3D; Adam), local (tf_keras only: functional
LocallyConnected2D and LocallyConnected1D, strided, channels_last and channels_first, with and without bias;
Adam), local_impl23 (tf_keras only: the same layers with implementation=2 and 3, padding "same" and "valid",
each kernel in its own layout; Adam), channels_first
(Conv2D, BatchNormalization axis 1, MaxPooling2D, SeparableConv2D, Conv2DTranspose, AveragePooling2D, Flatten, all
with data_format="channels_first"; Adam), augment (Rescaling, an adapted Normalization, the random augmentation
layers, Resizing, CenterCrop, RandomCrop (tf_keras only), the noise layers, ActivityRegularization; no after/: the
random layers train on TF's random numbers), multi_gpu (tf_keras only: Keras's multi_gpu_model layout built by hand -- Input, two Lambda slices, the
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
    if case in ("rnn", "rnn_keras2"):
        return [rng.standard_normal((4, 6, 3)).astype("float32")], rng.standard_normal((4, 2)).astype("float32")
    if case == "vision":
        x = rng.standard_normal((4, 8, 8, 3)).astype("float32")
        return [x], np.eye(2, dtype="float32")[[0, 1, 1, 0]]
    if case == "augment":
        x = rng.uniform(0, 255, (4, 8, 8, 3)).astype("float32")
        return [x], np.eye(2, dtype="float32")[[0, 1, 0, 1]]
    if case == "channels_first":
        x = rng.standard_normal((4, 3, 8, 8)).astype("float32")
        return [x], np.eye(2, dtype="float32")[[1, 1, 0, 0]]
    if case == "local":
        x = rng.standard_normal((4, 8, 8, 2)).astype("float32")
        return [x], np.eye(2, dtype="float32")[[0, 1, 0, 1]]
    if case == "local_impl23":
        x = rng.standard_normal((4, 5, 4, 2)).astype("float32")
        return [x], np.eye(2, dtype="float32")[[1, 0, 0, 1]]
    if case == "volume":
        x = rng.standard_normal((4, 4, 6, 6, 2)).astype("float32")
        return [x], np.eye(2, dtype="float32")[[1, 0, 1, 0]]
    return [rng.standard_normal((8, 5)).astype("float32")], np.array([0, 1, 2, 1, 0, 2, 2, 1], dtype="int32")


def build(keras, case):
    L = keras.layers
    if case == "rnn":
        m = keras.Sequential([keras.Input((6, 3)),
                              L.Bidirectional(L.LSTM(4, return_sequences=True)),
                              L.GRU(5, return_sequences=True),
                              L.TimeDistributed(L.Dense(3)),
                              L.SimpleRNN(4, go_backwards=True, activation="relu"),
                              L.RepeatVector(2),
                              L.LSTM(3, recurrent_activation="hard_sigmoid"),
                              L.Dense(2)])
        m.compile(keras.optimizers.Adam(0.01), "mse")
    elif case == "rnn_keras2":  # what Keras 2.0-2.2 wrote: hard_sigmoid gates, GRU without reset_after
        m = keras.Sequential([keras.Input((6, 3)),
                              L.LSTM(4, recurrent_activation="hard_sigmoid", implementation=1,
                                     return_sequences=True),
                              L.GRU(3, recurrent_activation="hard_sigmoid", reset_after=False),
                              L.Dense(2)])
        m.compile(keras.optimizers.SGD(0.1), "mse")
    elif case == "vision":  # issue 18's convolution family
        m = keras.Sequential([keras.Input((8, 8, 3)),
                              L.Conv2D(4, 3, padding="same", activation="relu"),
                              L.DepthwiseConv2D(3, depth_multiplier=2, activation="relu"),
                              L.SeparableConv2D(5, 3, padding="same", activation="tanh"),
                              L.Conv2DTranspose(3, 3, strides=2),
                              L.UpSampling2D(interpolation="bilinear"),
                              L.Cropping2D(((2, 1), (0, 3))),
                              L.UpSampling2D((1, 2)),
                              L.Flatten(),
                              L.Dense(2, activation="softmax")])
        m.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy", metrics=["accuracy"])
    elif case == "augment":  # issue 18's preprocessing, augmentation and noise layers (inference: predict only)
        norm = L.Normalization()
        norm.adapt(batch("augment")[0][0] / 255.0)
        layers = [keras.Input((8, 8, 3)), L.Rescaling(1 / 255.0), norm,
                  L.RandomFlip(seed=1), L.RandomRotation(0.1, seed=2), L.RandomZoom(0.1, seed=3),
                  L.RandomTranslation(0.1, 0.1, seed=4), L.RandomContrast(0.2, seed=5),
                  L.Resizing(10, 10), L.CenterCrop(9, 9)]
        # Keras 3.15's RandomCrop returns its input unchanged at inference; tf.keras 2 (and tower)
        # smart-resize it to the crop's size.
        if not keras.__version__.startswith("3."):
            layers.append(L.RandomCrop(8, 8, seed=6))
        layers += [L.Conv2D(4, 3, activation="relu"), L.GaussianNoise(0.1), L.GaussianDropout(0.1),
                   L.SpatialDropout2D(0.2), L.Flatten(), L.AlphaDropout(0.1), L.ActivityRegularization(l1=0.01),
                   L.Dense(2, activation="softmax")]
        m = keras.Sequential(layers)
        m.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy", metrics=["accuracy"])
    elif case == "channels_first":  # data_format="channels_first", BatchNormalization on axis 1
        cf = "channels_first"
        # Keras 3.15 on TF 2.21 computes SeparableConv2D and DepthwiseConv2D(3, padding="same",
        # data_format="channels_first") wrongly (0.03-0.06 away from NumPy and from their channels_last
        # twins with the same weights); with a 3x3 "same" Conv2D there, one bias after the extra step
        # differed from tower's by 0.004 while every other weight agreed (not pursued): its file has a
        # "valid" Conv2D there instead.
        sep = (L.Conv2D(4, 3, activation="tanh", data_format=cf)
               if keras.__version__.startswith("3.") else
               L.SeparableConv2D(4, 3, padding="same", activation="tanh", data_format=cf))
        m = keras.Sequential([keras.Input((3, 8, 8)),
                              L.Conv2D(4, 3, padding="same", activation="relu", data_format=cf),
                              L.BatchNormalization(axis=1),
                              L.MaxPooling2D(data_format=cf),
                              sep,
                              L.Conv2DTranspose(2, 2, strides=2, data_format=cf),
                              L.AveragePooling2D(2, data_format=cf),
                              L.Flatten(data_format=cf),
                              L.Dense(2, activation="softmax")])
        m.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy", metrics=["accuracy"])
    elif case == "volume":  # issue 18's 3-D layers
        inp = keras.Input((4, 6, 6, 2))
        c = L.Conv3D(4, 3, padding="same", activation="relu")(inp)                        # (4, 6, 6, 4)
        p = L.MaxPooling3D(2)(c)                                                          # (2, 3, 3, 4)
        z = L.ZeroPadding3D(1)(p)                                                         # (4, 5, 5, 4)
        t = L.Conv3DTranspose(2, 3, strides=2, padding="same", activation="tanh")(z)      # (8, 10, 10, 2)
        a = L.AveragePooling3D((2, 2, 2))(t)                                              # (4, 5, 5, 2)
        u = L.UpSampling3D((1, 1, 2))(a)                                                  # (4, 5, 10, 2)
        k = L.Cropping3D(((1, 1), (1, 2), (2, 3)))(u)                                     # (2, 2, 5, 2)
        g = L.Conv3D(4, 2, groups=2, activation="tanh")(k)                                # (1, 1, 4, 4)
        f = L.Concatenate()([L.GlobalAveragePooling3D()(g), L.GlobalMaxPooling3D()(p)])
        m = keras.Model(inp, L.Dense(2, activation="softmax")(f), name="volume")
        m.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy", metrics=["accuracy"])
    elif case == "local":  # issue 18's LocallyConnected layers (tf_keras only: Keras 3 has none)
        inp = keras.Input((8, 8, 2))
        a = L.LocallyConnected2D(3, 3, activation="relu")(inp)                          # (6, 6, 3)
        a = L.LocallyConnected2D(2, (2, 3), strides=(2, 1), activation="tanh")(a)       # (3, 4, 2)
        a = L.Reshape((12, 2))(a)
        a = L.LocallyConnected1D(4, 3, strides=2, activation="relu")(a)                 # (5, 4)
        b = L.LocallyConnected2D(2, (3, 2), strides=2, data_format="channels_first")(inp)  # (2, 3, 1)
        c = L.LocallyConnected1D(3, 2, data_format="channels_first", use_bias=False)(L.Reshape((8, 16))(inp))
        f = L.Concatenate()([L.Flatten()(a), L.Flatten()(b), L.Flatten()(c)])
        m = keras.Model(inp, L.Dense(2, activation="softmax")(f), name="local")
        m.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy", metrics=["accuracy"])
    elif case == "local_impl23":  # LocallyConnected's implementation 2 (dense masked kernel) and 3 (sparse), "same"
        inp = keras.Input((5, 4, 2))
        a = L.LocallyConnected2D(3, (3, 2), strides=2, padding="same", activation="relu", implementation=2)(inp)  # (3, 2, 3)
        a = L.LocallyConnected2D(2, 2, activation="tanh", implementation=3)(a)                                   # (2, 1, 2)
        r = L.Reshape((5, 8))(inp)
        b = L.LocallyConnected1D(2, 3, padding="same", data_format="channels_first", implementation=3)(r)         # (2, 8)
        c = L.LocallyConnected1D(2, 2, strides=2, implementation=2, use_bias=False)(r)                          # (2, 2)
        f = L.Concatenate()([L.Flatten()(a), L.Flatten()(b), L.Flatten()(c)])
        m = keras.Model(inp, L.Dense(2, activation="softmax")(f), name="local_impl23")
        m.compile(keras.optimizers.Adam(0.01), "categorical_crossentropy", metrics=["accuracy"])
    elif case == "adafactor":  # tf.keras only: Keras 3's model.save fails on its slots' duplicate names
        m = keras.Sequential([keras.Input((5,)), L.Dense(7, activation="relu"), L.Dense(3, activation="softmax")])
        m.compile(keras.optimizers.Adafactor(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
    elif case == "mlp":
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
    if case not in ("multi_gpu", "augment"):  # augment: random layers train on TF's random numbers
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


def make_keras2_2():
    """The tf_keras rnn_keras2 file relabelled as Keras 2.2.4 wrote it: keras_version 2.2.4, its
    Sequential config (no InputLayer: batch_input_shape on the first layer; no time_major), weight names
    without the cell ("lstm/kernel:0"). hard_sigmoid is Keras 2's in both."""
    src = os.path.join(OUT, "rnn_keras2_tf_keras.h5")
    dst = os.path.join(OUT, "rnn_keras2_2.h5")
    with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
        config = json.loads(f.attrs["model_config"])
        layers = config["config"]["layers"]
        shape = layers[0]["config"]["batch_input_shape"]
        layers = layers[1:]
        layers[0]["config"]["batch_input_shape"] = shape
        for layer in layers:
            for key in ("time_major", "zero_output_for_mask"):
                layer["config"].pop(key, None)
        config["config"]["layers"] = layers
        g.attrs["keras_version"] = np.bytes_("2.2.4")
        g.attrs["backend"] = np.bytes_("tensorflow")
        g.attrs["model_config"] = np.bytes_(json.dumps(config))
        mw = g.create_group("model_weights")
        names = [n.decode() if isinstance(n, bytes) else n for n in f["model_weights"].attrs["layer_names"]]
        names = [n for n in names if n in f["model_weights"]]
        mw.attrs["layer_names"] = np.array([n.encode() for n in names])
        for layer in names:
            src_group = f["model_weights"][layer]
            grp = mw.create_group(layer)
            weight_names = [w.decode() if isinstance(w, bytes) else w for w in src_group.attrs["weight_names"]]
            new_names = [w.replace("/lstm_cell/", "/").replace("/gru_cell/", "/") for w in weight_names]
            grp.attrs["weight_names"] = np.array([w.encode() for w in new_names])
            for old, new in zip(weight_names, new_names):
                grp[new] = src_group[old][()]
    with h5py.File(os.path.join(OUT, "rnn_keras2_tf_keras_data.h5"), "r") as f:  # no optimizer state to continue
        write_data(os.path.join(OUT, "rnn_keras2_2_data.h5"), [f["x"][()]], f["y"][()], f["predict"][()], None)
    print("wrote", dst)


def make_cudnn():
    """Keras 2's CuDNNLSTM and CuDNNGRU (built on the CPU, never run), saved with model.save; their
    predictions come from the same weights loaded into LSTM and GRU(reset_after=True) by tf_keras's own
    conversion."""
    import tf_keras as keras
    from tf_keras.src.layers.rnn.cudnn_gru import CuDNNGRU
    from tf_keras.src.layers.rnn.cudnn_lstm import CuDNNLSTM
    keras.utils.set_random_seed(3)
    xs, _ = batch("rnn")
    cudnn = keras.Sequential([keras.Input((6, 3)), CuDNNLSTM(4, return_sequences=True), CuDNNGRU(3),
                              keras.layers.Dense(2)])
    cudnn.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in cudnn.get_weights()])
    path = os.path.join(OUT, "rnn_cudnn.h5")
    cudnn.save(path)
    plain = keras.Sequential([keras.Input((6, 3)), keras.layers.LSTM(4, return_sequences=True),
                              keras.layers.GRU(3, reset_after=True), keras.layers.Dense(2)])
    plain.load_weights(path)
    write_data(os.path.join(OUT, "rnn_cudnn_data.h5"), xs, np.zeros((4, 2), "float32"),
               plain.predict(xs[0], verbose=0), None)
    print("wrote", path)


def make_keras1_rnn():
    """Keras 1.2.2's LSTM (12 weights, gates i, c, f, o) and GRU (9 weights), written by hand from a
    tf_keras model with Keras 2's hard_sigmoid gates and GRU(reset_after=False), whose predictions they
    must give."""
    import tf_keras as keras
    keras.utils.set_random_seed(4)
    xs, _ = batch("rnn")
    model = keras.Sequential([keras.Input((6, 3)),
                              keras.layers.LSTM(4, recurrent_activation="hard_sigmoid", return_sequences=True),
                              keras.layers.GRU(3, recurrent_activation="hard_sigmoid", reset_after=False)])
    model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    (lk, lr, lb), (gk, gr, gb) = model.layers[0].get_weights(), model.layers[1].get_weights()
    split = lambda w, n: np.split(w, n, axis=-1)  # noqa: E731
    lstm_w = []
    for gate in (0, 2, 1, 3):  # Keras 1's order i, c, f, o from Keras 2's i, f, c, o
        lstm_w += [("W", split(lk, 4)[gate]), ("U", split(lr, 4)[gate]), ("b", split(lb, 4)[gate])]
    gru_w = []
    for gate in range(3):
        gru_w += [("W", split(gk, 3)[gate]), ("U", split(gr, 3)[gate]), ("b", split(gb, 3)[gate])]
    common = {"trainable": True, "return_sequences": False, "go_backwards": False, "stateful": False,
              "unroll": False, "consume_less": "gpu", "init": "glorot_uniform", "inner_init": "orthogonal",
              "activation": "tanh", "inner_activation": "hard_sigmoid", "W_regularizer": None,
              "U_regularizer": None, "b_regularizer": None, "dropout_W": 0.0, "dropout_U": 0.0}
    config = {"class_name": "Sequential", "config": [
        {"class_name": "LSTM", "config": dict(common, name="lstm_1", output_dim=4, return_sequences=True,
                                              forget_bias_init="one", batch_input_shape=[None, 6, 3],
                                              input_dtype="float32", input_dim=3, input_length=6)},
        {"class_name": "GRU", "config": dict(common, name="gru_1", output_dim=3)}]}
    path = os.path.join(OUT, "keras1_rnn.h5")
    gate_names = {"lstm_1": "icfo", "gru_1": "zrh"}
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = np.bytes_("1.2.2")
        f.attrs["model_config"] = np.bytes_(json.dumps(config))
        mw = f.create_group("model_weights")
        mw.attrs["layer_names"] = np.array([b"lstm_1", b"gru_1"])
        for name, weights in (("lstm_1", lstm_w), ("gru_1", gru_w)):
            g = mw.create_group(name)
            names = [f"{name}_{kind}_{gate_names[name][k // 3]}" for k, (kind, _) in enumerate(weights)]
            g.attrs["weight_names"] = np.array([n.encode() for n in names])
            for n, (_, w) in zip(names, weights):
                g[n] = w
    write_data(os.path.join(OUT, "keras1_rnn_data.h5"), xs, np.zeros((4, 3), "float32"),
               model.predict(xs[0], verbose=0), None)
    print("wrote", path)


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
        for case in ("mlp", "cnn", "merge", "multi_gpu", "rnn", "rnn_keras2", "vision", "volume", "channels_first",
                     "local", "local_impl23", "augment", "adafactor"):
            make("tf_keras", case)
        make_theano()
        make_keras2_2()
        make_cudnn()
        make_keras1_rnn()
    elif sys.argv[1] == "keras3":
        for case in ("mlp", "cnn", "merge", "rnn", "vision", "volume", "channels_first", "augment"):
            make("keras3", case)
    elif sys.argv[1] == "keras1":
        make_keras1()
    elif sys.argv[1] == "rnn":  # only the recurrent files
        for case in ("rnn", "rnn_keras2"):
            make("tf_keras", case)
        make_keras2_2()
        make_cudnn()
        make_keras1_rnn()
    elif sys.argv[1] == "rnn_keras3":
        make("keras3", "rnn")
    elif sys.argv[1] in ("vision_tf_keras", "vision_keras3"):  # only the convolution family's files
        make(sys.argv[1].split("_", 1)[1], "vision")
    elif sys.argv[1] == "adafactor_tf_keras":
        make("tf_keras", "adafactor")
    elif sys.argv[1] in ("augment_tf_keras", "augment_keras3"):
        make("tf_keras" if sys.argv[1].endswith("tf_keras") else "keras3", "augment")
    elif sys.argv[1] in ("channels_first_tf_keras", "channels_first_keras3"):
        make("tf_keras" if sys.argv[1].endswith("tf_keras") else "keras3", "channels_first")
    elif sys.argv[1] == "local_tf_keras":  # only the LocallyConnected file
        make("tf_keras", "local")
    elif sys.argv[1] == "local_impl23_tf_keras":  # only the LocallyConnected implementations 2 and 3 file
        make("tf_keras", "local_impl23")
    elif sys.argv[1] in ("volume_tf_keras", "volume_keras3"):  # only the 3-D layers' files
        make(sys.argv[1].split("_", 1)[1], "volume")
