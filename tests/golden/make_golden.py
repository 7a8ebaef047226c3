#!/usr/bin/env python3
"""Generates tower's Keras golden files (tests/golden/files/*.h5) with real Keras.

Run from the repository root (see tests/golden/README.md for the pip command):

    python tests/golden/make_golden.py              # Keras -> files/<case>.h5, losses.h5, metrics.h5, schedules.h5
    python tests/golden/make_golden.py --from-cpp   # files/cpp_<case>.h5 (written by test_golden) -> Keras's
                                                    # predictions in files/keras_predictions_of_cpp.h5

Every model is tiny (batch 4, a handful of units, 8x8x2 images), every layer is named explicitly so
weights are found by name on both sides, every weight is drawn from a seeded numpy generator (not from
Keras's initializers), and everything is float32 (labels of sparse losses and Embedding inputs: int32).

Layout of files/<case>.h5. A weight is named "<layer name>/<weight name>" ("d1/kernel", "bn/moving_mean");
"<i>" is an input or output index (0-based). Flat arrays keep the file small (HDF5 spends ~500 bytes per
object): they are the concatenation of the row-major flattened weights in the order of a name list.
    attrs: case, description, loss (Keras's loss config, JSON), train (1 when the training-mode
           arrays below exist: the model is deterministic in training), keras_version, and three lists
           of fixed-length ASCII strings (as Keras's own weight_names attributes):
        weight_names            every weight, in Keras 3's model.weights order (layer by layer, each
                                layer's trainable weights then its non-trainable ones)
        trainable_weight_names  the trainable ones, in model.trainable_weights order
        log_names               "loss" then the metrics, under the names Keras reports them, in the order
                                of Keras's evaluate()/train_on_batch() lists
    /weights/<w>              each weight's value (shape as in Keras) before anything runs
    /x/<i>, /y/<i>            inputs and targets (one batch)
    /sample_weight            only in cases with sample weights: (batch,) or (batch, time), given to
                              evaluate, the training loss and train_on_batch (weighted_metrics too)
    /predict/<i>              model.predict(x): inference mode
    /evaluate                 model.evaluate(x, y) as Keras's list, in log_names order (inference mode;
                              the loss includes the regularization penalties)
  only when train = 1:
    /train_predict/<i>        model(x, training=True) (BatchNormalization on batch statistics)
    /train_loss               scalar: training-mode loss + regularization (what train_on_batch minimises)
    /grads                    flat, trainable_weight_names order: d(train_loss)/d(w) (tf.GradientTape)
    /optimizers/<opt>/step1   flat, weight_names order: every weight after one model.train_on_batch(x, y)
                              from /weights with a freshly compiled optimizer <opt> (BatchNormalization
                              moving statistics included)
    /optimizers/<opt>/step3   the same after three train_on_batch(x, y) calls (the same batch)
    /optimizers/<opt>/logs1   what the first train_on_batch returned, in log_names order
    /optimizers/<opt> attrs: config (the optimizer's Keras config, JSON)

files/losses.h5:    /<loss case>/{y_true, y_pred, per_sample, mean}, attrs config (JSON): per-sample values
                    of the loss class with reduction=None, and the "sum_over_batch_size" mean.
files/metrics.h5:   /<metric case>/{y_true, y_pred, per_sample}, attrs config: per-sample metric values (Keras 3's
                    binary_accuracy returns one value per element: per_sample is their mean over the last
                    axis, as tf.keras 2 returned it; Keras's mean metric averages to the same number).
files/schedules.h5: /<schedule case>/values (float64, the rate at steps 0..N-1), attrs config.

The reverse direction: test_golden, run with TOWER_WRITE_GOLDEN_DIR=tests/golden/files, writes
files/cpp_<case>.h5 with Model::save_weights (the golden weights + 0.01 * (weight index + 1), see
test_golden.cpp); `--from-cpp` loads each into the same Keras model with model.load_weights (Keras's
legacy HDF5 reader) and writes files/keras_predictions_of_cpp.h5:
    /<case>/predict/<i>   Keras's predictions on /x of files/<case>.h5 with the C++-written weights
    /<case>/weights/<w>   the weights as Keras read them
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from h5py import h5f, h5g, h5p  # noqa: E402
from keras import layers as L  # noqa: E402
from keras.src.trainers.compile_utils import CompileMetrics  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "files")
BATCH = 4
SEED = 1234
CPP_CASES = ["mlp", "cnn", "merge", "lstm", "gru", "rnn_states"]  # models the C++ test writes for the reverse direction

keras.config.set_floatx("float32")
# Reproducible to the bit: one thread per op and TensorFlow's deterministic kernels.
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.experimental.enable_op_determinism()


# ---- data ---------------------------------------------------------------------------------------------

def rng_for(name):
    return np.random.default_rng(abs(hash_str(name)) % (2**32))


def hash_str(s):  # Python's hash() is salted per process; this one is stable.
    h = 0
    for c in s.encode():
        h = (h * 131 + c) % (2**31)
    return h + SEED


def normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def one_hot(rng, n, classes):
    return np.eye(classes, dtype=np.float32)[rng.integers(0, classes, n)]


def set_golden_weights(model, rng):
    """Draws every weight: kernels ~ N(0, 0.5^2), biases ~ N(0, 0.1^2), BatchNormalization statistics
    away from their initial values so inference mode is distinguishable from training mode."""
    for layer in model.layers:
        for w in layer.weights:
            shape = tuple(w.shape)
            if "int" in str(w.dtype):  # Normalization's count
                continue
            if w.name == "gamma":
                v = 1.0 + normal(rng, shape, 0.2)
            elif w.name in ("moving_variance", "variance"):
                v = rng.uniform(0.5, 1.5, shape).astype(np.float32)
            elif w.name in ("beta", "moving_mean", "bias", "mean"):
                v = normal(rng, shape, 0.1)
            else:  # kernel, embeddings
                v = normal(rng, shape, 0.5)
            w.assign(v)
        if isinstance(layer, L.Normalization):  # its call reads copies that finalize_state() refreshes
            layer.finalize_state()


def weight_items(model):
    """(name "<layer>/<weight>", variable) for every weight, layer by layer in Keras's order; a
    Bidirectional's as "<layer>/forward_lstm/<weight>" and "<layer>/backward_lstm/<weight>"; a
    MultiHeadAttention's by its path, "<layer>/query/kernel" ... "<layer>/attention_output/bias" (its
    EinsumDense sublayers' weights are all named kernel and bias)."""
    items = []
    for layer in model.layers:
        if isinstance(layer, L.Bidirectional):
            for sub in (layer.forward_layer, layer.backward_layer):
                items += [(f"{layer.name}/{sub.name}/{w.name}", w) for w in sub.weights]
            continue
        if isinstance(layer, L.MultiHeadAttention):
            items += [(w.path, w) for w in layer.weights]
            continue
        for w in layer.weights:
            # Keras 3 names DepthwiseConv2D's kernel "kernel"; tf.keras 2 (and tower) "depthwise_kernel".
            name = "depthwise_kernel" if isinstance(layer, L.DepthwiseConv2D) and w.name == "kernel" else w.name
            items.append((f"{layer.name}/{name}", w))
    return items


def trainable_names(model):
    ids = {id(w) for w in model.trainable_weights}
    return [n for n, w in weight_items(model) if id(w) in ids]


# ---- the cases ----------------------------------------------------------------------------------------
# Each returns dict(model, x: list, y: list, loss, metrics (a function making fresh metric objects: a
# metric object keeps its state across compiles), train: bool, optimizers: list of names, description,
# optionally fix_y(pred, y): labels made to agree with some predictions so accuracies are not 0). Layer names are explicit and must match test_golden.cpp.

def case_mlp():
    rng = rng_for("mlp")
    model = keras.Sequential([
        keras.Input((6,), name="in"),
        L.Dense(8, activation="relu", kernel_regularizer=keras.regularizers.L2(0.01),
                bias_regularizer=keras.regularizers.L1(0.01), name="d1"),
        L.Dense(4, kernel_regularizer=keras.regularizers.L1L2(l1=0.005, l2=0.02), name="d2"),
        L.Softmax(name="softmax"),
    ], name="mlp")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 6))], y=[one_hot(rng, BATCH, 4)],
                loss=keras.losses.CategoricalCrossentropy(),
                metrics=lambda: ["accuracy", keras.metrics.TopKCategoricalAccuracy(k=2), "mse", "mae"],
                train=True, optimizers=list(OPTIMIZERS),
                description="Dense (relu), l2/l1/l1_l2 regularizers, Softmax; categorical_crossentropy; "
                            "accuracy (categorical), top_k_categorical_accuracy k=2, mse, mae; every optimizer")


def fix_sparse_labels(pred, y):
    y[0][:2] = np.argmax(pred[:2], axis=-1)


def case_cnn():
    rng = rng_for("cnn")
    model = keras.Sequential([
        keras.Input((8, 8, 2), name="in"),
        L.ZeroPadding2D(1, name="pad"),
        L.Conv2D(3, (3, 3), activation="relu", name="conv1"),
        L.MaxPooling2D((2, 2), name="pool1"),
        L.BatchNormalization(name="bn"),
        L.Conv2D(4, (2, 2), padding="same", name="conv2"),
        L.AveragePooling2D((2, 2), name="pool2"),
        L.Flatten(name="flat"),
        L.Dense(3, activation="softmax", name="out"),
    ], name="cnn")
    y = rng.integers(0, 3, (BATCH,)).astype(np.int32)
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 8, 8, 2))], y=[y],
                loss=keras.losses.SparseCategoricalCrossentropy(), metrics=lambda: ["accuracy"],
                train=True, optimizers=["sgd", "adam", "rmsprop"], fix_y=fix_sparse_labels,
                description="ZeroPadding2D, Conv2D valid/same, MaxPooling2D, BatchNormalization (training "
                            "step and inference), AveragePooling2D, Flatten, Dense softmax; "
                            "sparse_categorical_crossentropy; accuracy (sparse)")


def case_pooling():
    rng = rng_for("pooling")
    inp = keras.Input((8, 8, 2), name="in")
    c = L.Conv2D(4, (3, 3), strides=(2, 2), activation="tanh", name="conv")(inp)        # (3, 3, 4)
    a = L.AveragePooling2D((2, 2), strides=(1, 1), padding="same", name="avg")(c)        # (3, 3, 4)
    m = L.MaxPooling2D((2, 2), padding="same", name="max")(c)                            # (2, 2, 4)
    g1 = L.GlobalMaxPooling2D(name="gmax")(a)
    g2 = L.GlobalAveragePooling2D(name="gavg")(m)
    cat = L.Concatenate(name="cat")([g1, g2])
    out = L.Dense(1, activation="sigmoid", name="out")(cat)
    model = keras.Model(inp, out, name="pooling")
    y = np.array([[0], [1], [1], [0]], dtype=np.float32)
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 8, 8, 2))], y=[y],
                loss=keras.losses.BinaryCrossentropy(), metrics=lambda: ["accuracy", "mse"],
                train=True, optimizers=["sgd", "adam"],
                description="functional; Conv2D strides 2 tanh, AveragePooling2D/MaxPooling2D padding same, "
                            "GlobalMaxPooling2D, GlobalAveragePooling2D, Concatenate, Dense sigmoid; "
                            "binary_crossentropy; accuracy (binary), mse")


def case_merge():
    rng = rng_for("merge")
    a = keras.Input((5,), name="in_a")
    b = keras.Input((5,), name="in_b")
    da = L.Dense(4, name="da")(a)
    db = L.Dense(4, activation="sigmoid", name="db")(b)
    merged = [L.Add(name="add")([da, db]), L.Subtract(name="sub")([da, db]), L.Multiply(name="mul")([da, db]),
              L.Average(name="avg")([da, db]), L.Maximum(name="max")([da, db])]
    cat = L.Concatenate(name="cat")(merged)
    out = L.Dense(3, name="out")(cat)
    model = keras.Model([a, b], out, name="merge")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 5)), normal(rng, (BATCH, 5))],
                y=[normal(rng, (BATCH, 3))], loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="two inputs; Add, Subtract, Multiply, Average, Maximum, Concatenate; "
                            "mean_squared_error; mae")


def case_activations():
    rng = rng_for("activations")
    model = keras.Sequential([
        keras.Input((6,), name="in"),
        L.Dense(6, name="d1"),
        L.ReLU(name="relu"),
        L.Dense(6, name="d2"),
        L.LeakyReLU(negative_slope=0.1, name="leaky"),
        L.Dense(6, name="d3"),
        L.ELU(alpha=0.7, name="elu"),
        L.Dense(3, name="d4"),
        L.Activation("tanh", name="act"),
        L.Lambda(lambda t: t * 2.0, name="lambda"),
    ], name="activations")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 6))], y=[normal(rng, (BATCH, 3), 1.5)],
                loss=keras.losses.Huber(delta=0.5), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="ReLU, LeakyReLU(0.1), ELU(0.7), Activation(tanh), Lambda (x * 2); huber delta 0.5; mae")


def case_embedding():
    rng = rng_for("embedding")
    model = keras.Sequential([
        keras.Input((5,), dtype="int32", name="in"),
        L.Embedding(10, 3, name="emb"),
        L.Reshape((15,), name="reshape"),
        L.Dense(4, name="logits"),
    ], name="embedding")
    x = rng.integers(0, 10, (BATCH, 5)).astype(np.int32)
    x[0, :2] = 7  # a repeated index: its gradient rows add up
    y = rng.integers(0, 4, (BATCH,)).astype(np.int32)
    return dict(model=model, rng=rng, x=[x], y=[y],
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=lambda: ["accuracy"],
                # Only optimizers linear in the gradient: Keras 3's TensorFlow backend applies Adam, RMSprop
                # and Adagrad to an Embedding's sparse gradient slice by slice, so an id gathered twice
                # gets g1² + g2² in its second moment instead of (g1 + g2)². tf.keras 2 (which sums
                # duplicate ids first), Keras 3 on JAX or PyTorch, and tower use the dense gradient.
                train=True, optimizers=["sgd", "sgd_momentum"],
                description="Embedding (int32 ids, some repeated), Reshape, Dense logits; "
                            "sparse_categorical_crossentropy from_logits; accuracy (sparse)")


def case_regression():
    rng = rng_for("regression")
    model = keras.Sequential([
        keras.Input((12,), name="in"),
        L.Reshape((3, 4), name="reshape"),
        L.Dense(2, activation="sigmoid", name="d1"),  # on the last axis of (3, 4)
        L.Flatten(name="flat"),
        L.Dense(2, name="d2"),
    ], name="regression")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 12))], y=[normal(rng, (BATCH, 2))],
                loss=keras.losses.MeanAbsoluteError(), metrics=lambda: ["mse"],
                train=True, optimizers=["sgd", "adam"],
                description="Reshape, Dense on a rank-3 input, Flatten; mean_absolute_error; mse")


def case_dropout():
    rng = rng_for("dropout")
    model = keras.Sequential([
        keras.Input((6,), name="in"),
        L.Dense(8, activation="relu", name="d1"),
        L.Dropout(0.5, name="drop"),
        L.Dense(3, activation="softmax", name="d2"),
    ], name="dropout")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 6))], y=[one_hot(rng, BATCH, 3)],
                loss=keras.losses.CategoricalCrossentropy(), metrics=lambda: ["accuracy"],
                train=False, optimizers=[],
                description="Dropout(0.5): inference only (training draws differ from TensorFlow's RNG)")


def case_lstm():
    rng = rng_for("lstm")
    model = keras.Sequential([
        keras.Input((5, 3), name="in"),
        L.LSTM(4, return_sequences=True, name="lstm1"),
        L.LSTM(3, go_backwards=True, recurrent_activation="hard_sigmoid", name="lstm2"),
        L.Dense(2, name="out"),
    ], name="lstm")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 5, 3))], y=[normal(rng, (BATCH, 2))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="LSTM return_sequences, LSTM go_backwards with Keras 3's hard_sigmoid gates, Dense; mse")


def case_gru():
    rng = rng_for("gru")
    model = keras.Sequential([
        keras.Input((5, 3), name="in"),
        L.GRU(4, return_sequences=True, name="gru1"),
        L.GRU(4, return_sequences=True, reset_after=False, go_backwards=True, name="gru2"),
        L.GRU(3, use_bias=False, activation="relu", name="gru3"),
        L.Dense(2, name="out"),
    ], name="gru")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 5, 3))], y=[normal(rng, (BATCH, 2))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "rmsprop"],
                description="GRU reset_after (bias (2, 3u)), GRU reset_after=False go_backwards (bias (3u,)), "
                            "GRU without bias with relu; mse")


def case_rnn_states():
    rng = rng_for("rnn_states")
    seq_in = keras.Input((5, 3), name="seq")
    ctx_in = keras.Input((2,), name="ctx")
    h0 = L.Dense(4, activation="tanh", name="h0")(ctx_in)
    c0 = L.Dense(4, name="c0")(ctx_in)
    seq, h = L.SimpleRNN(4, return_sequences=True, return_state=True, name="rnn")(seq_in, initial_state=[h0])
    out, fh, fc = L.LSTM(4, return_state=True, name="lstm")(seq, initial_state=[h, c0])
    cat = L.Concatenate(name="cat")([out, fh, fc])
    y = L.Dense(2, name="out")(cat)
    model = keras.Model([seq_in, ctx_in], y, name="rnn_states")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 5, 3)), normal(rng, (BATCH, 2))],
                y=[normal(rng, (BATCH, 2))], loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="SimpleRNN with initial_state from a Dense, return_state; LSTM with initial_state "
                            "[h, c], return_state; Concatenate of the final states; mse")


def case_masking():
    rng = rng_for("masking")
    model = keras.Sequential([
        keras.Input((5, 3), name="in"),
        L.Masking(0.0, name="mask"),
        L.LSTM(4, return_sequences=True, name="lstm"),
        L.GRU(3, go_backwards=True, return_sequences=True, name="gru"),
        L.TimeDistributed(L.Dense(2), name="td"),
    ], name="masking")
    x = normal(rng, (BATCH, 5, 3))
    x[0, 3:] = 0.0  # padding at the end, at the start, in the middle
    x[1, :2] = 0.0
    x[2, 2] = 0.0
    return dict(model=model, rng=rng, x=[x], y=[normal(rng, (BATCH, 5, 2))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: [],
                train=True, optimizers=["sgd", "adam"],
                description="Masking: LSTM and GRU (go_backwards) skip the masked steps, TimeDistributed keeps the "
                            "mask, mse over the unmasked steps only")


def case_mask_zero():
    rng = rng_for("mask_zero")
    model = keras.Sequential([
        keras.Input((6,), dtype="int32", name="in"),
        L.Embedding(10, 4, mask_zero=True, name="emb"),
        L.Bidirectional(L.LSTM(3, return_sequences=True), name="bi"),
        L.GlobalAveragePooling1D(name="gap"),
        L.Dense(2, name="out"),
    ], name="mask_zero")
    x = rng.integers(1, 10, (BATCH, 6)).astype(np.int32)
    x[0, 4:] = 0
    x[1, :3] = 0
    x[3, 1] = 0
    return dict(model=model, rng=rng, x=[x], y=[normal(rng, (BATCH, 2))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                # Optimizers linear in the gradient only: see case_embedding (Keras 3's sparse Adam).
                train=True, optimizers=["sgd", "sgd_momentum"],
                description="Embedding(mask_zero), Bidirectional(LSTM) return_sequences (masked steps output zeros), "
                            "GlobalAveragePooling1D's mean over the unmasked steps")


def case_conv_lstm():
    rng = rng_for("conv_lstm")
    model = keras.Sequential([
        keras.Input((3, 5, 5, 2), name="in"),
        L.ConvLSTM2D(3, (3, 3), padding="same", return_sequences=True, recurrent_activation="hard_sigmoid",
                     name="clstm1"),
        L.ConvLSTM2D(2, (2, 2), strides=(2, 2), go_backwards=True, name="clstm2"),
        L.Flatten(name="flat"),
        L.Dense(2, name="out"),
    ], name="conv_lstm")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 3, 5, 5, 2))], y=[normal(rng, (BATCH, 2))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="ConvLSTM2D padding same return_sequences with Keras 3's hard_sigmoid, ConvLSTM2D "
                            "strides 2 go_backwards (sigmoid), Flatten, Dense; mse")


def case_conv1d():
    rng = rng_for("conv1d")
    inp = keras.Input((12, 3), name="in")
    c = L.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu", name="conv_causal")(inp)  # (12, 4)
    c = L.ZeroPadding1D((1, 2), name="pad")(c)                                                         # (15, 4)
    c = L.Conv1D(4, 4, strides=2, padding="same", name="conv_same")(c)                                # (8, 4)
    c = L.MaxPooling1D(2, strides=1, padding="same", name="max")(c)                                   # (8, 4)
    c = L.UpSampling1D(2, name="up")(c)                                                                # (16, 4)
    c = L.Cropping1D((2, 3), name="crop")(c)                                                           # (11, 4)
    c = L.Conv1D(4, 3, padding="same", dilation_rate=2, use_bias=False, name="conv_same_d2")(c)        # (11, 4)
    # sigmoid, not tanh: with tanh some of Keras's own float32 gradients here are ~1e-5 off float64's.
    c = L.Conv1D(3, 2, strides=2, activation="sigmoid", name="conv_valid")(c)                         # (5, 3)
    a = L.AveragePooling1D(4, strides=2, padding="same", name="avg")(c)                               # (3, 3)
    m = L.MaxPooling1D(2, name="max_valid")(c)                                                        # (2, 3)
    s = L.Conv1D(2, 2, strides=2, padding="causal", name="conv_causal_s2")(c)                         # (3, 2)
    g1 = L.GlobalMaxPooling1D(name="gmax")(a)
    g2 = L.GlobalAveragePooling1D(name="gavg")(m)
    g3 = L.GlobalMaxPooling1D(keepdims=True, name="gmax_keep")(s)                                     # (1, 2)
    g4 = L.GlobalAveragePooling1D(keepdims=True, name="gavg_keep")(s)                                 # (1, 2)
    k = L.Flatten(name="flat")(L.Concatenate(name="cat_keep")([g3, g4]))                              # (4,)
    cat = L.Concatenate(name="cat")([g1, g2, k])
    out = L.Dense(2, name="out")(cat)
    model = keras.Model(inp, out, name="conv1d")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 12, 3))], y=[normal(rng, (BATCH, 2))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="Conv1D causal dilation 2 relu, ZeroPadding1D (1, 2), Conv1D same kernel 4 strides 2 "
                            "(padding 1 left, 2 right), MaxPooling1D strides 1 same, UpSampling1D, Cropping1D (2, 3), "
                            "Conv1D same dilation 2 without bias, Conv1D valid strides 2 sigmoid, AveragePooling1D 4 "
                            "strides 2 same (edge windows average their valid steps), MaxPooling1D valid, Conv1D "
                            "causal strides 2, GlobalMaxPooling1D and GlobalAveragePooling1D (and keepdims); mse")


def case_spatial_dropout1d():
    rng = rng_for("spatial_dropout1d")
    model = keras.Sequential([
        keras.Input((6, 3), name="in"),
        L.Conv1D(4, 2, name="conv"),
        L.SpatialDropout1D(0.5, name="drop"),
        L.GlobalAveragePooling1D(name="gavg"),
        L.Dense(3, activation="softmax", name="out"),
    ], name="spatial_dropout1d")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 6, 3))], y=[one_hot(rng, BATCH, 3)],
                loss=keras.losses.CategoricalCrossentropy(), metrics=lambda: ["accuracy"],
                train=False, optimizers=[],
                description="SpatialDropout1D(0.5) after a Conv1D: inference only (training draws differ "
                            "from TensorFlow's RNG)")


def case_bidirectional():
    rng = rng_for("bidirectional")
    inp = keras.Input((5, 3), name="in")
    ctx = keras.Input((2,), name="ctx")
    s = L.Bidirectional(L.LSTM(3, return_sequences=True, name="lstm_a"), name="bi_concat")(inp)         # (5, 6)
    s = L.Bidirectional(L.GRU(3, return_sequences=True, name="gru_b"), merge_mode="sum", name="bi_sum")(s)  # (5, 3)
    s = L.Bidirectional(L.SimpleRNN(3, return_sequences=True, name="rnn_c"), merge_mode="mul",
                        name="bi_mul")(s)                                                                 # (5, 3)
    fw, bw = L.Bidirectional(L.GRU(2, return_sequences=True, reset_after=False, name="gru_d"), merge_mode=None,
                             name="bi_none")(s)                                                           # 2x (5, 2)
    both = L.Concatenate(name="both")([fw, bw])                                                          # (5, 4)
    ave = L.Bidirectional(L.SimpleRNN(2, name="rnn_e"), merge_mode="ave", name="bi_ave")(both)          # (2,)
    last, fh, fc, bh, bc = L.Bidirectional(L.LSTM(2, return_state=True, name="lstm_f"),
                                           name="bi_state")(both)                                # (4,), 4x (2,)
    none_last_fw, none_last_bw = L.Bidirectional(L.LSTM(2, name="lstm_g"), merge_mode=None,
                                                 name="bi_none_last")(s)                                  # 2x (2,)
    added = L.Add(name="add")([none_last_fw, none_last_bw])
    # GRU with return_sequences and return_state: [sequence, forward h, backward h].
    gseq, gfh, gbh = L.Bidirectional(L.GRU(2, return_sequences=True, return_state=True, name="gru_i"),
                                     merge_mode="sum", name="bi_gru_state")(inp)                # (5, 2), 2x (2,)
    # A given backward_layer (relu where the forward one has tanh), both started from initial states. Keras 3
    # keeps a given backward layer's own name (tf.keras 2 prefixed "backward_"): this one has the prefix.
    h_fw = L.Dense(2, activation="tanh", name="h_fw")(ctx)
    h_bw = L.Dense(2, name="h_bw")(ctx)
    init = L.Bidirectional(L.SimpleRNN(2, name="rnn_h"),
                           backward_layer=L.SimpleRNN(2, activation="relu", go_backwards=True, name="backward_rnn_h"),
                           name="bi_init")(gseq, initial_state=[h_fw, h_bw])                             # (4,)
    cat = L.Concatenate(name="cat")([ave, last, fh, fc, bh, bc, added, gfh, gbh, init])
    out = L.Dense(2, name="out")(cat)
    model = keras.Model([inp, ctx], out, name="bidirectional")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 5, 3)), normal(rng, (BATCH, 2))],
                y=[normal(rng, (BATCH, 2))], loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="Bidirectional merge_mode concat (LSTM), sum (GRU), mul (SimpleRNN), None (GRU "
                            "reset_after=False, both sequences concatenated), ave (SimpleRNN, last output), "
                            "concat with return_state (LSTM: output and both directions' h and c), None on the "
                            "last outputs (LSTM, Add), sum with return_sequences and return_state (GRU), a given "
                            "backward_layer (SimpleRNN relu) with initial states from Dense layers; mse")


def case_attention():
    rng = rng_for("attention")
    q_in = keras.Input((4, 6), name="query")
    v_in = keras.Input((5, 4), name="value")
    m_in = keras.Input((4, 5), dtype="int32", name="mask")                                             # 1: attend
    s_in = keras.Input((4, 4), dtype="int32", name="self_mask")
    q = L.LayerNormalization(name="ln")(q_in)                                                            # (4, 6)
    vs = L.Dense(4, activation="swish", name="d_swish")(v_in)                                           # (5, 4)
    ks = L.Dense(4, activation="silu", name="d_silu")(v_in)                                             # (5, 4)
    cross = L.MultiHeadAttention(2, 3, value_dim=2, output_shape=5, use_bias=False, name="mha_cross")(
        q, v_in, key=ks, attention_mask=m_in)                                                           # (4, 5)
    causal = L.MultiHeadAttention(2, 3, name="mha_causal")(q, q, use_causal_mask=True)                  # (4, 6)
    # Through Keras 3's Softmax layer (return_attention_scores): a fully masked row gets zeros there.
    # Self-attention: Keras 3.15's symbolic shape of the scores is (num_heads, T_q, T_q).
    single, probs = L.MultiHeadAttention(1, 2, use_bias=False, name="mha_scores")(
        q, q, attention_mask=s_in, use_causal_mask=True, return_attention_scores=True)  # (4, 6), (1, 4, 4)
    qg = L.Dense(4, activation="gelu", name="d_gelu")(causal)                                           # (4, 4)
    # (4, 4), (4, 5)
    dot_att, dist = L.Attention(use_scale=True, name="att_dot")([qg, vs], return_attention_scores=True)
    concat_att = L.Attention(score_mode="concat", name="att_concat")([qg, vs, ks], use_causal_mask=True)  # (4, 4)
    add_att = L.AdditiveAttention(name="att_add")([qg, vs, ks])                                          # (4, 4)
    ln2 = L.LayerNormalization(axis=[1, 2], center=False, epsilon=0.01, name="ln2")(cross)             # (4, 5)
    cos = L.Dot(axes=(2, 2), normalize=True, name="dot_cos")([dot_att, concat_att])                    # (4, 4)
    prod = L.Dot(axes=1, name="dot_steps")([add_att, ln2])                                              # (4, 5)
    pooled = L.Dot(axes=1, normalize=True, name="dot_vec")(
        [L.GlobalAveragePooling1D(name="gap_single")(single), L.GlobalMaxPooling1D(name="gmp_q")(q)])  # (1,)
    # Averages over the query steps keep the output (and the gradients' float32 rounding) small.
    cat = L.Concatenate(name="cat")([L.GlobalAveragePooling1D(name="gap_cos")(cos),
                                     L.GlobalAveragePooling1D(name="gap_prod")(prod),
                                     L.Flatten(name="flat_probs")(probs),
                                     L.GlobalAveragePooling1D(name="gap_dist")(dist), pooled])
    out = L.Dense(2, name="out")(cat)
    model = keras.Model([q_in, v_in, m_in, s_in], out, name="attention")
    mask = (rng.uniform(size=(BATCH, 4, 5)) < 0.7).astype(np.int32)
    mask[0, 1] = 0  # a query row that attends to nothing
    self_mask = (rng.uniform(size=(BATCH, 4, 4)) < 0.7).astype(np.int32)
    self_mask[1, 2] = 0
    self_mask[0, 0, 0] = 0  # with the causal mask, row 0 of sample 0 attends to nothing
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 4, 6)), normal(rng, (BATCH, 5, 4)), mask, self_mask],
                y=[normal(rng, (BATCH, 2))], loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                # Optimizers linear in the gradient only: a MultiHeadAttention's key/bias has a zero gradient
                # up to rounding (it adds q·b to a whole row of logits, which the softmax ignores), and Adam or
                # RMSprop would turn that rounding noise, different in every implementation, into full steps.
                train=True, optimizers=["sgd", "sgd_momentum"],
                description="LayerNormalization (and over axes [1, 2] with center=False, epsilon 0.01), "
                            "MultiHeadAttention with a key and value different from the query (value_dim 2, "
                            "output_shape 5) and an attention_mask with a fully masked row, self-attention with "
                            "use_causal_mask, and causal self-attention with an attention_mask (fully masked rows) and "
                            "return_attention_scores without biases, Dense gelu/swish/silu, "
                            "Attention use_scale (dot) with return_attention_scores and score_mode concat with a "
                            "key and use_causal_mask, AdditiveAttention with a key, Dot axes (2, 2) normalize, "
                            "axes 1, and on vectors normalize; mse")

def case_attention_masks():
    rng = rng_for("attention_masks")
    inp = keras.Input((6,), dtype="int32", name="in")
    e = L.Embedding(10, 4, mask_zero=True, name="emb")(inp)                           # (6, 4), mask (6,)
    # Keras 3's MultiHeadAttention deletes the Keras masks of the tensors it is called on (set_keras_mask(
    # value, None)), so a later layer reading `e` would see no mask; tower (and tf.keras 2) keep it. The MHA
    # gets a tensor of its own.
    p = L.LayerNormalization(scale=False, name="ln_in")(e)                            # keeps the mask
    m = L.MultiHeadAttention(2, 2, name="mha")(p, p)                                  # query and value masks
    n = L.LayerNormalization(name="ln")(m)                                            # keeps the mask
    a = L.Attention(name="att")([n, e])                                  # value mask; query mask zeroes rows
    c = L.AdditiveAttention(use_scale=False, name="att_add")([a, e], use_causal_mask=True)
    g = L.GlobalAveragePooling1D(name="gap")(c)                                       # mean over the unmasked steps
    out = L.Dense(2, activation="gelu", name="out")(g)
    model = keras.Model(inp, out, name="attention_masks")
    x = rng.integers(1, 10, (BATCH, 6)).astype(np.int32)
    x[0, 4:] = 0
    x[1, :2] = 0  # padding first: with the causal mask, query steps 0 and 1 see no value step
    x[3, 2] = 0
    return dict(model=model, rng=rng, x=[x], y=[normal(rng, (BATCH, 2))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                # Optimizers linear in the gradient only: see case_embedding (Keras 3's sparse Adam).
                train=True, optimizers=["sgd", "sgd_momentum"],
                description="Embedding(mask_zero), LayerNormalization scale=False (passes the mask on) into "
                            "MultiHeadAttention (the query's and value's Keras masks; padded query rows attend to "
                            "nothing), LayerNormalization, Attention (value mask, masked query rows zeroed), "
                            "AdditiveAttention without scale with use_causal_mask, GlobalAveragePooling1D's masked "
                            "mean, Dense gelu; mse")


def case_others():
    rng = rng_for("others")
    C = keras.constraints
    inp = keras.Input((6,), name="in")
    a = L.Dense(8, kernel_constraint=C.MaxNorm(1.5), name="d1")(inp)
    r = L.Reshape((4, 2), name="reshape")(a)
    p = L.PReLU(shared_axes=[1], alpha_constraint=C.MinMaxNorm(0.2, 0.8, rate=0.7), name="prelu_shared")(r)
    f = L.Flatten(name="flat")(p)
    b = L.PReLU(name="prelu")(L.Dense(8, name="d2")(inp))
    m = L.Minimum(name="min")([f, b])
    out = L.Dense(3, kernel_constraint=C.UnitNorm(), bias_constraint=C.NonNeg(), name="out")(m)
    model = keras.Model(inp, out, name="others")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 6))], y=[normal(rng, (BATCH, 3))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="functional; Dense kernel_constraint max_norm(1.5), PReLU (shared_axes [1], "
                            "alpha_constraint min_max_norm(0.2, 0.8, rate 0.7)), PReLU, Minimum, Dense "
                            "kernel_constraint unit_norm and bias_constraint non_neg; mean_squared_error; mae "
                            "(ThresholdedReLU is not in Keras 3: unit tests)")


def case_noise_layers():
    rng = rng_for("noise_layers")
    R = keras.regularizers
    inp = keras.Input((4, 4, 3), name="in")
    c = L.Conv2D(4, 3, padding="same", activation="tanh", name="conv")(inp)
    c = L.SpatialDropout2D(0.3, name="sdrop")(c)
    c = L.GaussianNoise(0.2, name="noise")(c)
    c = L.GaussianDropout(0.3, name="gdrop")(c)
    f = L.AlphaDropout(0.2, name="adrop")(L.Flatten(name="flat")(c))
    d = L.Dense(6, activation="selu", activity_regularizer=R.L1L2(0.01, 0.02), name="d1")(f)
    d = L.ActivityRegularization(l1=0.01, l2=0.005, name="act_reg")(d)
    out = L.Dense(3, name="out")(d)
    model = keras.Model(inp, out, name="noise_layers")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 4, 4, 3))], y=[normal(rng, (BATCH, 3))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=False, optimizers=[],
                description="SpatialDropout2D(0.3), GaussianNoise(0.2), GaussianDropout(0.3), AlphaDropout(0.2), "
                            "Dense activity_regularizer L1L2(0.01, 0.02), ActivityRegularization(0.01, 0.005): "
                            "inference only (training draws differ from TensorFlow's RNG); evaluate's loss holds "
                            "the activity penalties")


def case_activity_regularization():
    rng = rng_for("activity_regularization")
    R = keras.regularizers
    inp = keras.Input((5, 3), name="in")
    c = L.Conv1D(4, 2, activation="tanh", activity_regularizer=R.L1(0.01), name="conv")(inp)
    d = L.Dense(8, activation="tanh", activity_regularizer=R.L1L2(0.01, 0.02), name="d1")(L.Flatten(name="flat")(c))
    # The noise layers with rates 0: the identity in training too, so Keras's training numbers are exact.
    d = L.GaussianNoise(0.0, name="noise")(d)
    d = L.GaussianDropout(0.0, name="gdrop")(d)
    d = L.AlphaDropout(0.0, name="adrop")(d)
    d = L.ActivityRegularization(l1=0.02, l2=0.01, name="act_reg")(d)
    out = L.Dense(3, activity_regularizer=R.L2(0.05), name="out")(d)
    model = keras.Model(inp, out, name="activity_regularization")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 5, 3))], y=[normal(rng, (BATCH, 3))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="Conv1D activity_regularizer L1(0.01), Dense activity_regularizer L1L2(0.01, 0.02), "
                            "GaussianNoise/GaussianDropout/AlphaDropout with rate 0, ActivityRegularization(0.02, "
                            "0.01), Dense activity_regularizer L2(0.05): the penalties / batch in the loss, its "
                            "gradients and the optimizer steps")


def case_conv_family():
    rng = rng_for("conv_family")
    inp = keras.Input((6, 6, 4), name="in")
    g = L.Conv2D(6, 3, padding="same", groups=2, activation="tanh", name="grouped")(inp)         # (6, 6, 6)
    d = L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2, name="dw")(g)      # (3, 3, 12)
    sep = L.SeparableConv2D(5, (2, 3), padding="same", depth_multiplier=2, activation="tanh",
                            name="sep")(d)                                                     # (3, 3, 5)
    t = L.Conv2DTranspose(4, 3, strides=2, padding="same", output_padding=0, activation="tanh",
                          name="tconv")(sep)                                                      # (5, 5, 4)
    tv = L.Conv2DTranspose(3, (2, 3), strides=(2, 1), padding="valid", activation="tanh",
                           name="tconv_valid")(sep)                                               # (6, 5, 3)
    un = L.UpSampling2D((2, 1), name="up_nearest")(t)                                            # (10, 5, 4)
    ub = L.UpSampling2D(2, interpolation="bilinear", name="up_bilinear")(tv)                     # (12, 10, 3)
    cn = L.Cropping2D(((1, 2), (0, 1)), name="crop")(un)                                          # (7, 4, 4)
    cb = L.Cropping2D((2, 3), name="crop_sym")(ub)                                                # (8, 4, 3)
    f = L.Concatenate(name="cat")([L.GlobalAveragePooling2D(name="gap1")(cn), L.GlobalAveragePooling2D(name="gap2")(cb)])
    out = L.Dense(3, name="out")(f)
    model = keras.Model(inp, out, name="conv_family")
    # Bounded (tanh) activations, averaged features, small inputs and a linear output with mse: with
    # relu, flattened features or a softmax, this chain of N(0, 0.5²) kernels flips relu masks, blows
    # up or saturates, and float32 gradients keep only a few significant digits (in Keras as in tower).
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 6, 6, 4), 0.3)], y=[normal(rng, (BATCH, 3))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="functional; Conv2D groups 2 tanh, DepthwiseConv2D strides 2 depth_multiplier 2, "
                            "SeparableConv2D (2, 3) depth_multiplier 2 tanh, Conv2DTranspose tanh strides 2 same "
                            "output_padding 0 and (2, 1) valid, UpSampling2D nearest (2, 1) and bilinear 2, "
                            "Cropping2D both forms, GlobalAveragePooling2D, Concatenate, Dense; mean_squared_error "
                            "(computed in float64)")


def case_conv3d_family():
    rng = rng_for("conv3d_family")
    inp = keras.Input((4, 5, 4, 2), name="in")
    c = L.Conv3D(4, (2, 3, 2), padding="same", groups=2, activation="tanh", name="conv")(inp)      # (4, 5, 4, 4)
    p = L.MaxPooling3D(2, padding="same", name="max")(c)                                          # (2, 3, 2, 4)
    z = L.ZeroPadding3D(((1, 0), (0, 1), (1, 1)), name="pad")(p)                                  # (3, 4, 4, 4)
    d = L.Conv3D(3, 2, strides=(1, 2, 2), activation="tanh", name="conv_strided")(z)              # (2, 2, 2, 3)
    t = L.Conv3DTranspose(3, 3, strides=2, padding="same", output_padding=(1, 0, 1), activation="tanh",
                          name="tconv")(d)                                                         # (4, 3, 4, 3)
    tv = L.Conv3DTranspose(2, (2, 2, 3), strides=(1, 2, 1), padding="valid", activation="tanh",
                           name="tconv_valid")(d)                                                  # (3, 4, 4, 2)
    a = L.AveragePooling3D(2, strides=(1, 1, 2), padding="same", name="avg")(t)                   # (4, 3, 2, 3)
    u = L.UpSampling3D((1, 2, 2), name="up")(tv)                                                  # (3, 8, 8, 2)
    k = L.Cropping3D(((1, 0), (2, 3), (1, 2)), name="crop")(u)                                    # (2, 3, 5, 2)
    dl = L.Conv3D(2, 2, padding="same", dilation_rate=(1, 2, 1), activation="tanh", name="conv_dilated")(k)
    f = L.Concatenate(name="cat")([L.GlobalAveragePooling3D(name="gap")(a), L.GlobalMaxPooling3D(name="gmp")(dl)])
    out = L.Dense(3, name="out")(f)
    model = keras.Model(inp, out, name="conv3d_family")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 4, 5, 4, 2), 0.3)], y=[normal(rng, (BATCH, 3))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="functional; Conv3D groups 2 same tanh, MaxPooling3D same, ZeroPadding3D pairs, Conv3D "
                            "strides (1, 2, 2) valid, Conv3DTranspose strides 2 same output_padding (1, 0, 1) and "
                            "(1, 2, 1) valid, AveragePooling3D same strides (1, 1, 2), UpSampling3D (1, 2, 2), "
                            "Cropping3D pairs, Conv3D dilation (1, 2, 1), GlobalAveragePooling3D, "
                            "GlobalMaxPooling3D, Concatenate, Dense; mean_squared_error (float32: TF has no float64 3-D pooling)")


def case_preprocessing():
    rng = rng_for("preprocessing")
    inp = keras.Input((9, 12, 2), name="in")
    r = L.Rescaling(1 / 4.0, offset=-0.5, name="rescale")(inp)
    n = L.Normalization(name="norm")(r)                                           # adapted: weights mean/variance
    g = L.Normalization(mean=[0.5, -1.0], variance=[4.0, 0.25], name="given")(n)  # constants
    z = L.Resizing(6, 6, crop_to_aspect_ratio=True, name="resize_crop")(g)        # (6, 6, 2)
    b = L.Resizing(5, 7, name="resize")(z)                                        # (5, 7, 2) bilinear
    c = L.CenterCrop(3, 4, name="center")(b)                                      # (3, 4, 2) a crop
    u = L.CenterCrop(8, 8, name="center_up")(c)                                   # (8, 8, 2) smart_resize
    q = L.Resizing(4, 4, interpolation="nearest", name="resize_nearest")(u)       # (4, 4, 2)
    f = L.Flatten(name="flat")(q)
    out = L.Dense(3, name="out")(f)
    model = keras.Model(inp, out, name="preprocessing")
    return dict(model=model, rng=rng, x=[rng.uniform(0, 4, (BATCH, 9, 12, 2)).astype(np.float32)],
                y=[normal(rng, (BATCH, 3))], loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="functional; Rescaling with offset, Normalization (weights) and with given mean and "
                            "variance, Resizing bilinear with crop_to_aspect_ratio and without, CenterCrop "
                            "cropping and up-sizing (smart_resize), Resizing nearest, Dense; mean_squared_error")


def case_resizing_pad():
    rng = rng_for("resizing_pad")
    inp = keras.Input((5, 8, 2), name="in")
    m = L.Conv2D(2, 1, activation="tanh", name="mix")(inp)                                         # (5, 8, 2)
    a = L.Resizing(6, 6, pad_to_aspect_ratio=True, fill_value=0.5, name="pad_rows")(m)            # 1 row each side: (7, 8) -> (6, 6)
    b = L.Resizing(4, 7, pad_to_aspect_ratio=True, interpolation="nearest", name="pad_cols")(a)   # 2 columns each side: (6, 10) -> (4, 7)
    c = L.Resizing(4, 7, pad_to_aspect_ratio=True, name="pad_none")(b)                            # already (4, 7)
    d = L.Resizing(5, 5, pad_to_aspect_ratio=True, fill_value=-1.0, name="pad_odd")(c)            # 1 row each side: (6, 7) -> (5, 5)
    out = L.Dense(3, name="out")(L.Flatten(name="flat")(d))
    model = keras.Model(inp, out, name="resizing_pad")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 5, 8, 2))], y=[normal(rng, (BATCH, 3))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="functional; Conv2D 1x1, Resizing(pad_to_aspect_ratio=True) padding rows with "
                            "fill_value 0.5 (bilinear), columns (nearest), nothing, and an odd difference with "
                            "fill_value -1; Dense; mean_squared_error")


def case_channels_first():
    rng = rng_for("channels_first")
    cf = "channels_first"
    inp = keras.Input((3, 9, 8), name="in")
    p = L.ZeroPadding2D(1, data_format=cf, name="pad")(inp)                                       # (3, 11, 10)
    c = L.Conv2D(4, 3, activation="tanh", data_format=cf, name="conv")(p)                         # (4, 9, 8)
    m = L.MaxPooling2D(2, data_format=cf, name="max")(c)                                          # (4, 4, 4)
    b = L.BatchNormalization(axis=1, name="bn")(m)                                                # (4, 4, 4)
    s = L.SeparableConv2D(5, 2, padding="same", activation="tanh", data_format=cf, name="sep")(b)  # (5, 4, 4)
    d = L.DepthwiseConv2D(2, strides=2, data_format=cf, name="dw")(s)                             # (5, 2, 2)
    t = L.Conv2DTranspose(3, 2, strides=2, activation="tanh", data_format=cf, name="tconv")(d)    # (3, 4, 4)
    u = L.UpSampling2D(2, data_format=cf, name="up")(t)                                           # (3, 8, 8)
    k = L.Cropping2D((1, 2), data_format=cf, name="crop")(u)                                      # (3, 6, 4)
    a = L.AveragePooling2D(2, data_format=cf, name="avg")(k)                                      # (3, 3, 2)
    f1 = L.Flatten(data_format=cf, name="flat")(a)                                                # 18
    g = L.GlobalAveragePooling2D(data_format=cf, keepdims=True, name="gap")(d)                    # (5, 1, 1)
    f2 = L.Flatten(data_format=cf, name="flat_gap")(g)                                            # 5
    r = L.Reshape((5, 4), name="seq")(d)                                                          # (5, 4)
    # No Conv1D here: Keras 3.15 on TF 2.21 computes Conv1D(data_format="channels_first") wrongly in
    # eager mode (model(x, training=True) differs from predict and from NumPy by 0.1), which is how
    # the training pass below is taken. tests/layers/test_data_format.cpp checks tower's Conv1D.
    q = L.MaxPooling1D(2, padding="same", data_format=cf, name="max1d")(r)                        # (5, 2)
    f3 = L.GlobalAveragePooling1D(data_format=cf, name="gap1d")(q)                                # 5
    out = L.Dense(3, name="out")(L.Concatenate(name="cat")([f1, f2, f3]))
    model = keras.Model(inp, out, name="channels_first")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 3, 9, 8), 0.5)], y=[normal(rng, (BATCH, 3))],
                loss=keras.losses.MeanSquaredError(), metrics=lambda: ["mae"],
                train=True, optimizers=["sgd", "adam"],
                description="functional, data_format=channels_first throughout: ZeroPadding2D, Conv2D tanh, "
                            "MaxPooling2D, BatchNormalization axis 1, SeparableConv2D, DepthwiseConv2D, "
                            "Conv2DTranspose, UpSampling2D, Cropping2D, AveragePooling2D, Flatten, "
                            "GlobalAveragePooling2D keepdims, MaxPooling1D same, GlobalAveragePooling1D, "
                            "Dense; mean_squared_error")


def case_temporal_weights():
    rng = rng_for("temporal_weights")
    model = keras.Sequential([
        keras.Input((5, 3), name="in"),
        L.LSTM(4, return_sequences=True, name="lstm"),
        L.Dense(3, activation="softmax", name="out"),  # per time step
    ], name="temporal_weights")
    steps = rng.uniform(0.0, 2.0, (BATCH, 5)).astype(np.float32)
    steps[0, 3:] = 0.0  # the padding of a shorter sequence
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 5, 3))],
                y=[rng.integers(0, 3, (BATCH, 5)).astype(np.float32)], sample_weight=steps,
                loss=keras.losses.SparseCategoricalCrossentropy(), metrics=lambda: ["accuracy"],
                weighted_metrics=lambda: ["accuracy", "sparse_categorical_crossentropy"],
                train=True, optimizers=["sgd", "adam"],
                description="per-time-step sample weights (batch, time) on a sequence output; metrics unweighted, "
                            "weighted_metrics weighted (accuracy -> weighted_accuracy)")


def case_sample_weights():
    rng = rng_for("sample_weights")
    model = keras.Sequential([
        keras.Input((6,), name="in"),
        L.Dense(5, activation="tanh", name="d1"),
        L.Dense(1, activation="sigmoid", name="out"),
    ], name="sample_weights")
    return dict(model=model, rng=rng, x=[normal(rng, (BATCH, 6))],
                y=[np.array([[1], [0], [1], [0]], np.float32)],
                sample_weight=np.array([0.5, 2.0, 0.25, 1.5], np.float32),
                loss=keras.losses.BinaryCrossentropy(), metrics=lambda: ["accuracy", keras.metrics.AUC(name="auc")],
                weighted_metrics=lambda: ["mse", keras.metrics.AUC(name="weighted_auc")],
                train=True, optimizers=["sgd", "adam"],
                description="per-sample weights: in the loss and weighted_metrics (mse, AUC), not in metrics "
                            "(accuracy, AUC), as Keras")


CASES = {
    "mlp": case_mlp, "cnn": case_cnn, "pooling": case_pooling, "merge": case_merge,
    "activations": case_activations, "embedding": case_embedding, "regression": case_regression,
    "dropout": case_dropout, "lstm": case_lstm, "gru": case_gru, "rnn_states": case_rnn_states,
    "masking": case_masking, "mask_zero": case_mask_zero, "conv_lstm": case_conv_lstm,
    "conv1d": case_conv1d, "spatial_dropout1d": case_spatial_dropout1d, "bidirectional": case_bidirectional,
    "attention": case_attention, "attention_masks": case_attention_masks, "others": case_others,
    "conv_family": case_conv_family, "conv3d_family": case_conv3d_family, "preprocessing": case_preprocessing, "resizing_pad": case_resizing_pad,
    "channels_first": case_channels_first,
    "temporal_weights": case_temporal_weights, "sample_weights": case_sample_weights,
    "noise_layers": case_noise_layers, "activity_regularization": case_activity_regularization,
}

# ---- optimizers ----------------------------------------------------------------------------------------
S = keras.optimizers.schedules
OPTIMIZERS = {
    "sgd": lambda: keras.optimizers.SGD(0.1),
    "sgd_momentum": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
    "sgd_nesterov": lambda: keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "rmsprop": lambda: keras.optimizers.RMSprop(0.01),
    "rmsprop_centered_momentum": lambda: keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adam": lambda: keras.optimizers.Adam(0.01),
    "adam_amsgrad": lambda: keras.optimizers.Adam(0.01, amsgrad=True),
    "adamw": lambda: keras.optimizers.AdamW(0.01, weight_decay=0.1),
    "adagrad": lambda: keras.optimizers.Adagrad(0.1),
    "adadelta": lambda: keras.optimizers.Adadelta(1.0),
    "sgd_clipnorm": lambda: keras.optimizers.SGD(0.1, clipnorm=0.3),
    "sgd_clipvalue": lambda: keras.optimizers.SGD(0.1, clipvalue=0.05),
    "sgd_global_clipnorm": lambda: keras.optimizers.SGD(0.1, global_clipnorm=0.5),
    "adam_clipnorm": lambda: keras.optimizers.Adam(0.01, clipnorm=0.3),
    "sgd_exponential_decay": lambda: keras.optimizers.SGD(S.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)),
    "sgd_piecewise_constant_decay": lambda: keras.optimizers.SGD(
        S.PiecewiseConstantDecay([1, 2], [0.1, 0.05, 0.02])),
    "sgd_cosine_decay": lambda: keras.optimizers.SGD(S.CosineDecay(0.1, decay_steps=4, alpha=0.1)),
    "adamax": lambda: keras.optimizers.Adamax(0.01),
    "nadam": lambda: keras.optimizers.Nadam(0.01),
    "lion": lambda: keras.optimizers.Lion(0.01),
    "ftrl": lambda: keras.optimizers.Ftrl(0.1),
    "ftrl_l1_l2": lambda: keras.optimizers.Ftrl(
        0.1, learning_rate_power=-0.7, initial_accumulator_value=0.2, l1_regularization_strength=0.01,
        l2_regularization_strength=0.1, l2_shrinkage_regularization_strength=0.05, beta=0.5),
    "adafactor": lambda: keras.optimizers.Adafactor(0.01),
    "sgd_weight_decay": lambda: keras.optimizers.SGD(0.1, weight_decay=0.1),
    "adam_weight_decay": lambda: keras.optimizers.Adam(0.01, weight_decay=0.1),
    "lion_weight_decay": lambda: keras.optimizers.Lion(0.01, weight_decay=0.5),
    # EMA: Keras's train_on_batch never finalizes; the overwrite every 2 (3) steps shows in step3.
    "rmsprop_ema": lambda: keras.optimizers.RMSprop(0.01, use_ema=True, ema_momentum=0.9, ema_overwrite_frequency=2),
    "adam_ema": lambda: keras.optimizers.Adam(0.01, use_ema=True, ema_overwrite_frequency=3),
    "sgd_accumulation": lambda: keras.optimizers.SGD(0.1, gradient_accumulation_steps=2),
    "adam_accumulation": lambda: keras.optimizers.Adam(0.01, gradient_accumulation_steps=2),
    # The schedule reads the raw step count; EMA and its overwrite the accumulated one.
    "sgd_accumulation_schedule": lambda: keras.optimizers.SGD(
        S.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5), gradient_accumulation_steps=2),
    "sgd_momentum_accumulation_ema": lambda: keras.optimizers.SGD(
        0.1, momentum=0.9, gradient_accumulation_steps=2, use_ema=True, ema_momentum=0.5, ema_overwrite_frequency=2),
}

SCHEDULES = {
    "exponential_decay": S.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5),
    "exponential_decay_staircase": S.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5, staircase=True),
    "piecewise_constant_decay": S.PiecewiseConstantDecay([2, 5], [0.1, 0.05, 0.01]),
    "cosine_decay": S.CosineDecay(0.1, decay_steps=6),
    "cosine_decay_alpha": S.CosineDecay(0.1, decay_steps=6, alpha=0.2),
    "cosine_decay_warmup": S.CosineDecay(0.0, decay_steps=5, warmup_target=0.1, warmup_steps=3),
}
SCHEDULE_STEPS = 10


# ---- writing ---------------------------------------------------------------------------------------------

def new_file(path):
    """An HDF5 file in the 1.8 format (compact groups, still readable by the HDF5 1.10 tower builds
    with) without object timestamps, so regenerating unchanged data gives byte-identical files."""
    fapl = h5p.create(h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5f.LIBVER_V18, h5f.LIBVER_V18)
    fcpl = h5p.create(h5p.FILE_CREATE)
    fcpl.set_obj_track_times(False)
    return h5py.File(h5f.create(path.encode(), h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl))


def group(parent, path):
    """The group at `path` under `parent`, each missing component created without timestamps."""
    g = parent
    for part in [p for p in path.split("/") if p]:
        if part not in g:
            gcpl = h5p.create(h5p.GROUP_CREATE)
            gcpl.set_obj_track_times(False)
            h5g.create(g.id, part.encode(), gcpl=gcpl)
        g = g[part]
    return g


def put(parent, name, value):
    value = np.asarray(value)
    if value.dtype == np.float64:
        value = value.astype(np.float32)
    head, _, base = name.rpartition("/")
    group(parent, head).create_dataset(base, data=value, track_times=False)


def put_names(obj, attr, names):
    obj.attrs[attr] = np.array([n.encode("ascii") for n in names])


def flat(arrays):
    return np.concatenate([np.asarray(a, dtype=np.float32).reshape(-1) for a in arrays])


def log_names(model, logs):
    """The names of Keras's evaluate()/train_on_batch() list, in its order (Trainer._flatten_metrics_in_order)."""
    names = []
    for metric in model.metrics:
        names += [m.name for m in metric.metrics] if isinstance(metric, CompileMetrics) else [metric.name]
    names = [n for n in dict.fromkeys(names) if n in logs]  # a weighted metric may share a metric's name
    return names + [k for k in sorted(logs) if k not in names]


def training_loss_and_grads(model, loss_fn, x, y, sample_weight=None):
    with tf.GradientTape() as tape:
        y_pred = model(x if len(x) > 1 else x[0], training=True)
        loss = loss_fn(y[0], y_pred, sample_weight=sample_weight)
        if model.losses:
            loss = loss + tf.add_n(model.losses)
    grads = tape.gradient(loss, model.trainable_weights)
    grads = [tf.convert_to_tensor(g).numpy() for g in grads]  # Embedding: IndexedSlices -> dense
    return y_pred, float(loss), grads


# Cases whose float32 Keras numbers are themselves off by more than the tolerance (deep chains of
# convolutions whose gradients cancel): Keras computes them in float64, the files store float32, and
# tower's float32 must come within tolerance of those exact values.
FLOAT64_CASES = {"conv_family"}


def write_case(name, build):
    keras.backend.set_floatx("float64" if name in FLOAT64_CASES else "float32")
    try:
        return write_case_in_floatx(name, build)
    finally:
        keras.backend.set_floatx("float32")


def write_case_in_floatx(name, build):
    keras.utils.set_random_seed(SEED)
    c = build()
    model, x, y = c["model"], c["x"], c["y"]
    set_golden_weights(model, c["rng"])
    # Keras 3's model.weights is layer by layer; weight_items() follows model.layers the same way.
    assert [id(w) for _, w in weight_items(model)] == [id(w) for w in model.weights]
    initial = [w.numpy().copy() for w in model.weights]
    xin = x if len(x) > 1 else x[0]
    path = os.path.join(FILES, f"{name}.h5")
    with new_file(path) as f:
        f.attrs["case"] = name
        f.attrs["description"] = c["description"]
        f.attrs["loss"] = json.dumps(keras.losses.serialize(c["loss"]))
        f.attrs["train"] = int(c["train"])
        f.attrs["keras_version"] = keras.__version__
        put_names(f, "weight_names", [n for n, _ in weight_items(model)])
        put_names(f, "trainable_weight_names", trainable_names(model))
        for n, w in weight_items(model):
            put(f, f"weights/{n}", w.numpy())
        for i, v in enumerate(x):
            put(f, f"x/{i}", v)
        pred = model.predict(xin, batch_size=BATCH, verbose=0)
        if "fix_y" in c:
            c["fix_y"](pred, y)
        for i, v in enumerate(y):
            put(f, f"y/{i}", v)
        for i, v in enumerate(pred if isinstance(pred, list) else [pred]):
            put(f, f"predict/{i}", v)
        sw = c.get("sample_weight")
        if sw is not None:
            put(f, "sample_weight", sw)
        weighted = c.get("weighted_metrics", lambda: None)
        model.compile(optimizer="sgd", loss=c["loss"], metrics=c["metrics"](), weighted_metrics=weighted())
        logs = model.evaluate(xin, y[0], batch_size=BATCH, verbose=0, return_dict=True, sample_weight=sw)
        names = log_names(model, logs)
        put_names(f, "log_names", names)
        put(f, "evaluate", flat([logs[n] for n in names]))
        if not c["train"]:
            return path
        y_pred, loss, grads = training_loss_and_grads(model, c["loss"], x, y, sw)
        put(f, "train_predict/0", y_pred.numpy())
        put(f, "train_loss", np.float32(loss))
        put(f, "grads", flat(grads))
        for opt_name in c["optimizers"]:
            g = group(f, f"optimizers/{opt_name}")
            for steps in (1, 3):
                model.set_weights(initial)
                opt = OPTIMIZERS[opt_name]()
                config = keras.optimizers.serialize(opt)["config"]
                config.pop("name")  # "adam_3": counts the optimizers made before
                g.attrs["config"] = json.dumps(config, default=str)
                model.compile(optimizer=opt, loss=c["loss"], metrics=c["metrics"](),  # fresh metric objects
                              weighted_metrics=weighted())
                for step in range(steps):
                    logs = model.train_on_batch(xin, y[0], return_dict=True, sample_weight=sw)
                    if step == 0 and steps == 1:
                        assert log_names(model, logs) == names
                        put(g, "logs1", flat([logs[n] for n in names]))
                put(g, f"step{steps}", flat([w.numpy() for w in model.weights]))
    return path


# ---- stateful recurrent layers: states carried from batch to batch ---------------------------------------

def stateful_models():
    """Every recurrent layer stateful, the batch size fixed: SimpleRNN, LSTM and GRU; ConvLSTM2D."""
    rnn = keras.Sequential([
        keras.Input((3, 3), batch_size=BATCH, name="in"),
        L.SimpleRNN(4, stateful=True, return_sequences=True, name="rnn"),
        L.LSTM(4, stateful=True, return_sequences=True, name="lstm"),
        L.GRU(3, stateful=True, name="gru"),
        L.Dense(2, name="out"),
    ], name="stateful")
    conv = keras.Sequential([
        keras.Input((2, 5, 5, 1), batch_size=BATCH, name="in"),
        L.ConvLSTM2D(2, (3, 3), padding="same", recurrent_activation="sigmoid", stateful=True, name="conv_lstm"),
        L.Flatten(name="flat"),
        L.Dense(2, name="out"),
    ], name="stateful_conv_lstm")
    return {"rnn": (rnn, (3, 3)), "conv_lstm": (conv, (2, 5, 5, 1))}


def write_stateful():
    """Predictions of two batches in a row (the second starts from the states the first left), after
    reset_states, and two SGD and two Adam train_on_batch steps (which carry the states too) followed
    by a prediction that starts from the states training left; one group per model of stateful_models."""
    keras.utils.set_random_seed(SEED)
    with new_file(os.path.join(FILES, "stateful.h5")) as f:
        f.attrs["description"] = write_stateful.__doc__
        for name, (model, shape) in stateful_models().items():
            rng = rng_for("stateful_" + name)
            set_golden_weights(model, rng)
            initial = [w.numpy().copy() for w in model.weights]
            x1, x2 = normal(rng, (BATCH,) + shape), normal(rng, (BATCH,) + shape)
            y1, y2 = normal(rng, (BATCH, 2)), normal(rng, (BATCH, 2))

            def reset():
                for layer in model.layers:
                    if hasattr(layer, "reset_states"):
                        layer.reset_states()

            def predict(x):
                return model.predict(x, batch_size=BATCH, verbose=0)

            m = group(f, name)
            put_names(m, "weight_names", [n for n, _ in weight_items(model)])
            for n, w in weight_items(model):
                put(m, f"weights/{n}", w.numpy())
            for key, v in (("x1", x1), ("x2", x2), ("y1", y1), ("y2", y2)):
                put(m, key, v)
            reset()
            put(m, "predict1", predict(x1))
            put(m, "predict2_carried", predict(x2))
            reset()
            put(m, "predict2_reset", predict(x2))
            for opt_name in ("sgd", "adam"):
                model.set_weights(initial)
                model.compile(optimizer=OPTIMIZERS[opt_name](), loss="mse")
                reset()
                g = group(m, f"optimizers/{opt_name}")
                put(g, "losses", np.array([model.train_on_batch(x1, y1), model.train_on_batch(x2, y2)], np.float32))
                put(g, "weights", flat([w.numpy() for w in model.weights]))
                put(g, "predict_after", predict(x1))


# ---- losses, metrics and schedules on their own -------------------------------------------------------

def write_losses():
    rng = np.random.default_rng(SEED + 1)
    probs = keras.ops.convert_to_numpy(keras.ops.softmax(normal(rng, (BATCH, 3), 2.0)))
    logits = normal(rng, (BATCH, 3), 2.0)
    labels = rng.integers(0, 3, (BATCH,)).astype(np.int32)
    onehot = np.eye(3, dtype=np.float32)[labels]
    bin_true = rng.integers(0, 2, (BATCH, 2)).astype(np.float32)
    bin_prob = rng.uniform(0.02, 0.98, (BATCH, 2)).astype(np.float32)
    reg_true = normal(rng, (BATCH, 3))
    reg_pred = normal(rng, (BATCH, 3), 1.5)
    # issue 18's losses: data drawn after the above, so the earlier cases keep theirs
    probs2 = keras.ops.convert_to_numpy(keras.ops.softmax(normal(rng, (BATCH, 3), 2.0)))
    pos_true = rng.uniform(0.0, 3.0, (BATCH, 3)).astype(np.float32)
    pos_pred = rng.uniform(0.1, 3.0, (BATCH, 3)).astype(np.float32)
    pm_true = 2.0 * bin_true - 1.0  # hinge labels in {-1, 1}
    cos_true = reg_true.copy()
    cos_true[1] = 0.0  # a zero vector: similarity 0, as Keras's normalize
    L = keras.losses
    cases = {
        "categorical_crossentropy": (keras.losses.CategoricalCrossentropy(reduction=None), onehot, probs),
        "categorical_crossentropy_from_logits": (
            keras.losses.CategoricalCrossentropy(from_logits=True, reduction=None), onehot, logits),
        "categorical_crossentropy_label_smoothing": (
            keras.losses.CategoricalCrossentropy(label_smoothing=0.1, reduction=None), onehot, probs),
        "sparse_categorical_crossentropy": (
            keras.losses.SparseCategoricalCrossentropy(reduction=None), labels, probs),
        "sparse_categorical_crossentropy_from_logits": (
            keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None), labels, logits),
        "binary_crossentropy": (keras.losses.BinaryCrossentropy(reduction=None), bin_true, bin_prob),
        "binary_crossentropy_from_logits": (
            keras.losses.BinaryCrossentropy(from_logits=True, reduction=None), bin_true, logits[:, :2]),
        "binary_crossentropy_label_smoothing": (
            keras.losses.BinaryCrossentropy(label_smoothing=0.2, reduction=None), bin_true, bin_prob),
        "mean_squared_error": (keras.losses.MeanSquaredError(reduction=None), reg_true, reg_pred),
        "mean_absolute_error": (keras.losses.MeanAbsoluteError(reduction=None), reg_true, reg_pred),
        "huber": (keras.losses.Huber(reduction=None), reg_true, reg_pred),
        "huber_delta_0.5": (keras.losses.Huber(delta=0.5, reduction=None), reg_true, reg_pred),
        "log_cosh": (L.LogCosh(reduction=None), reg_true, reg_pred),
        "kl_divergence": (L.KLDivergence(reduction=None), probs2, probs),
        "kl_divergence_onehot": (L.KLDivergence(reduction=None), onehot, probs),
        "poisson": (L.Poisson(reduction=None), pos_true, pos_pred),
        "hinge": (L.Hinge(reduction=None), bin_true, logits[:, :2]),
        "hinge_plus_minus_one": (L.Hinge(reduction=None), pm_true, logits[:, :2]),
        "squared_hinge": (L.SquaredHinge(reduction=None), bin_true, logits[:, :2]),
        "categorical_hinge": (L.CategoricalHinge(reduction=None), onehot, logits),
        "cosine_similarity": (L.CosineSimilarity(reduction=None), cos_true, reg_pred),
        "mean_absolute_percentage_error": (L.MeanAbsolutePercentageError(reduction=None), reg_true, reg_pred),
        "mean_squared_logarithmic_error": (L.MeanSquaredLogarithmicError(reduction=None), pos_true, pos_pred),
        "mean_squared_logarithmic_error_negative": (
            L.MeanSquaredLogarithmicError(reduction=None), reg_true, reg_pred),
        "binary_focal_crossentropy": (L.BinaryFocalCrossentropy(reduction=None), bin_true, bin_prob),
        "binary_focal_crossentropy_balanced_gamma3": (
            L.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.4, gamma=3.0, reduction=None),
            bin_true, bin_prob),
        "binary_focal_crossentropy_from_logits": (
            L.BinaryFocalCrossentropy(from_logits=True, reduction=None), bin_true, logits[:, :2]),
        "binary_focal_crossentropy_from_logits_gamma0.5_smoothing": (
            L.BinaryFocalCrossentropy(from_logits=True, gamma=0.5, label_smoothing=0.1, apply_class_balancing=True,
                                      reduction=None), bin_true, logits[:, :2]),
        "binary_focal_crossentropy_label_smoothing": (
            L.BinaryFocalCrossentropy(label_smoothing=0.2, reduction=None), bin_true, bin_prob),
        "categorical_focal_crossentropy": (L.CategoricalFocalCrossentropy(reduction=None), onehot, probs),
        "categorical_focal_crossentropy_from_logits": (
            L.CategoricalFocalCrossentropy(from_logits=True, reduction=None), onehot, logits),
        "categorical_focal_crossentropy_smoothing_alpha_gamma": (
            L.CategoricalFocalCrossentropy(alpha=0.5, gamma=1.5, label_smoothing=0.1, reduction=None), onehot, probs),
    }
    with new_file(os.path.join(FILES, "losses.h5")) as f:
        for name, (fn, yt, yp) in cases.items():
            g = group(f, name)
            g.attrs["config"] = json.dumps(fn.get_config(), default=str)
            put(g, "y_true", yt)
            put(g, "y_pred", yp)
            per_sample = keras.ops.convert_to_numpy(fn(yt, yp))
            put(g, "per_sample", per_sample)
            put(g, "mean", np.float32(np.mean(per_sample, dtype=np.float64)))


def write_metrics():
    rng = np.random.default_rng(SEED + 2)
    probs = keras.ops.convert_to_numpy(keras.ops.softmax(normal(rng, (6, 5), 2.0)))
    labels = rng.integers(0, 5, (6,)).astype(np.int32)
    labels[:2] = np.argmax(probs[:2], axis=-1)  # some hits
    onehot = np.eye(5, dtype=np.float32)[labels]
    bin_true = rng.integers(0, 2, (6, 1)).astype(np.float32)
    bin_prob = rng.uniform(0.0, 1.0, (6, 1)).astype(np.float32)
    multi_true = rng.integers(0, 2, (6, 3)).astype(np.float32)
    multi_prob = rng.uniform(0.0, 1.0, (6, 3)).astype(np.float32)
    reg_true, reg_pred = normal(rng, (6, 3)), normal(rng, (6, 3))
    M = keras.metrics
    cases = {
        "categorical_accuracy": (M.categorical_accuracy, {}, onehot, probs),
        "sparse_categorical_accuracy": (M.sparse_categorical_accuracy, {}, labels, probs),
        "binary_accuracy": (M.binary_accuracy, {}, bin_true, bin_prob),
        "binary_accuracy_threshold_0.7": (M.binary_accuracy, {"threshold": 0.7}, bin_true, bin_prob),
        "binary_accuracy_multilabel": (M.binary_accuracy, {}, multi_true, multi_prob),
        "top_k_categorical_accuracy_k2": (M.top_k_categorical_accuracy, {"k": 2}, onehot, probs),
        "top_k_categorical_accuracy_k5": (M.top_k_categorical_accuracy, {"k": 5}, onehot, probs),
        "sparse_top_k_categorical_accuracy_k3": (M.sparse_top_k_categorical_accuracy, {"k": 3}, labels, probs),
        "mean_squared_error": (M.mean_squared_error, {}, reg_true, reg_pred),
        "mean_absolute_error": (M.mean_absolute_error, {}, reg_true, reg_pred),
    }
    with new_file(os.path.join(FILES, "metrics.h5")) as f:
        for name, (fn, kw, yt, yp) in cases.items():
            g = group(f, name)
            g.attrs["config"] = json.dumps(kw)
            put(g, "y_true", yt)
            put(g, "y_pred", yp)
            values = keras.ops.convert_to_numpy(fn(yt, yp, **kw)).astype(np.float64)
            if values.ndim > 1:  # binary_accuracy: per element
                values = values.mean(axis=-1)
            put(g, "per_sample", values)


# ---- stateful metrics (Keras's update_state / result) ------------------------------------------------------

def stateful_metric_cases():
    """(metric, batches): each batch (y_true, y_pred, sample_weight or None); Mean/Sum take values as y_pred."""
    rng = np.random.default_rng(SEED + 7)
    M = keras.metrics

    def binary(n, ties=False, weights=False):
        y = rng.integers(0, 2, (n, 1)).astype(np.float32)
        p = rng.uniform(0.0, 1.0, (n, 1)).astype(np.float32)
        if ties:  # few distinct values, the ends included
            p = rng.choice(np.array([0.0, 0.2, 0.5, 0.5, 0.7, 1.0], np.float32), (n, 1))
        return y, p, (rng.uniform(0.2, 2.0, (n,)).astype(np.float32) if weights else None)

    def multi(n, classes=4, weights=False, hot=True):
        p = keras.ops.convert_to_numpy(keras.ops.softmax(normal(rng, (n, classes), 1.5)))
        ids = rng.integers(0, classes, (n,))
        y = np.eye(classes, dtype=np.float32)[ids] if hot else rng.integers(0, 2, (n, classes)).astype(np.float32)
        return y, p, (rng.uniform(0.2, 2.0, (n,)).astype(np.float32) if weights else None)

    bins = [binary(5), binary(6, weights=True), binary(4)]
    ties = [binary(6, ties=True), binary(6, ties=True, weights=True)]
    logits = [(y, normal(rng, (5, 1), 2.0), w) for y, _, w in [binary(5), binary(5, weights=True)]]
    hots = [multi(5), multi(6, weights=True), multi(4)]
    labels = [multi(5, hot=False), multi(6, hot=False, weights=True)]  # multi-label 0/1 targets
    sparse = [(np.argmax(y, -1).astype(np.int32), p, w) for y, p, w in hots]
    iou = [(rng.integers(0, 4, (7,)).astype(np.int32), rng.integers(0, 4, (7,)).astype(np.int32), w)
           for w in [None, rng.uniform(0.2, 2.0, (7,)).astype(np.float32)]]
    grid = [(rng.integers(0, 3, (2, 3, 3)).astype(np.int32), rng.integers(0, 3, (2, 3, 3)).astype(np.int32), None)]
    values = [(None, normal(rng, (5,)), None), (None, normal(rng, (4,)), rng.uniform(0.2, 2.0, (4,)).astype(np.float32))]
    return {
        "auc_roc": (M.AUC(), bins),
        "auc_pr": (M.AUC(curve="PR"), bins),
        "auc_roc_ties": (M.AUC(), ties),
        "auc_pr_ties": (M.AUC(curve="PR"), ties),
        "auc_roc_minoring": (M.AUC(summation_method="minoring"), bins),
        "auc_roc_majoring": (M.AUC(summation_method="majoring"), ties),
        "auc_pr_majoring": (M.AUC(curve="PR", summation_method="majoring"), bins),
        "auc_from_logits": (M.AUC(from_logits=True), logits),
        "auc_thresholds_7": (M.AUC(num_thresholds=7), bins),
        "auc_given_thresholds": (M.AUC(thresholds=[0.1, 0.35, 0.5, 0.8]), ties),
        "auc_flattened": (M.AUC(), labels),
        "auc_multi_label": (M.AUC(multi_label=True), labels),
        "auc_multi_label_pr": (M.AUC(multi_label=True, num_labels=4, curve="PR"), labels),
        "auc_multi_label_majoring": (M.AUC(multi_label=True, summation_method="majoring", num_thresholds=9), labels),
        "precision": (M.Precision(), bins),
        "recall": (M.Recall(), bins),
        "precision_ties": (M.Precision(thresholds=0.5), ties),
        "precision_thresholds": (M.Precision(thresholds=[0.3, 0.5, 0.7]), bins),
        "recall_thresholds": (M.Recall(thresholds=[0.0, 0.2, 0.9]), ties),
        "precision_top_k2": (M.Precision(top_k=2), labels),
        "recall_top_k1": (M.Recall(top_k=1), hots),
        "precision_class_id1": (M.Precision(class_id=1), labels),
        "recall_class_id2": (M.Recall(class_id=2, thresholds=0.3), hots),
        "precision_top_k2_class_id3": (M.Precision(top_k=2, class_id=3), labels),
        "recall_top_k2_class_id0": (M.Recall(top_k=2, class_id=0), hots),
        "true_positives": (M.TruePositives(), bins),
        "false_positives": (M.FalsePositives(), bins),
        "true_negatives": (M.TrueNegatives(thresholds=0.3), ties),
        "false_negatives": (M.FalseNegatives(), labels),
        "true_positives_thresholds": (M.TruePositives(thresholds=[0.2, 0.5, 0.8]), bins),
        "f1_none": (M.F1Score(), hots),
        "f1_micro": (M.F1Score(average="micro"), labels),
        "f1_macro": (M.F1Score(average="macro"), hots),
        "f1_weighted": (M.F1Score(average="weighted", threshold=0.3), labels),
        "fbeta_2_weighted": (M.FBetaScore(average="weighted", beta=2.0), hots),
        "fbeta_half_none_threshold": (M.FBetaScore(beta=0.5, threshold=0.4), labels),
        "mean_iou": (M.MeanIoU(num_classes=4), iou),
        "mean_iou_grid": (M.MeanIoU(num_classes=3), grid),
        "categorical_accuracy": (M.CategoricalAccuracy(), hots),
        "sparse_categorical_accuracy": (M.SparseCategoricalAccuracy(), sparse),
        "top_k_categorical_accuracy": (M.TopKCategoricalAccuracy(k=2), hots),
        "sparse_top_k_categorical_accuracy": (M.SparseTopKCategoricalAccuracy(k=2), sparse),
        "binary_accuracy": (M.BinaryAccuracy(threshold=0.6), bins),
        "accuracy": (M.Accuracy(), [(np.array([1, 2, 3, 4], np.float32), np.array([1, 2, 0, 4], np.float32), None)]),
        "mean": (M.Mean(), values),
        "sum": (M.Sum(), values),
    }


def stateful_metrics_model():
    """Two outputs with per-output metrics (a dict by output name), weights drawn from the seeded generator."""
    keras.backend.clear_session()  # metric names from a fresh counter ("auc", not "auc_3")
    rng = np.random.default_rng(SEED + 8)
    x_in = keras.Input((4,), name="x")
    h = L.Dense(5, activation="tanh", name="hidden")(x_in)
    cls = L.Dense(3, activation="softmax", name="cls")(h)
    bin_ = L.Dense(1, activation="sigmoid", name="bin")(h)
    model = keras.Model(x_in, [cls, bin_], name="two_outputs")
    set_golden_weights(model, rng)
    M = keras.metrics
    model.compile(optimizer="sgd", loss={"cls": "categorical_crossentropy", "bin": "binary_crossentropy"},
                  metrics={"cls": ["accuracy", M.AUC(), M.TopKCategoricalAccuracy(k=2)],
                           "bin": [M.Precision(), M.Recall(), "accuracy", M.AUC(curve="PR", name="pr_auc")]})
    x = normal(rng, (10, 4))
    y_cls = np.eye(3, dtype=np.float32)[rng.integers(0, 3, (10,))]
    y_bin = rng.integers(0, 2, (10, 1)).astype(np.float32)
    return model, x, [y_cls, y_bin]


def write_stateful_metrics():
    """files/stateful_metrics.h5: /<case> attrs class_name, config (Keras's get_config, JSON), batches;
    /<case>/batch_<i>/{y_true, y_pred, sample_weight} (each optional but y_pred), /<case>/running (float64,
    (batches, result size): result() after each update_state), /<case>/result (float64, the last). /model:
    a two-output model's weights, x, y/<i>, attrs log_names, and evaluate (batch_size 4) in that order."""
    with new_file(os.path.join(FILES, "stateful_metrics.h5")) as f:
        for name, (metric, batches) in stateful_metric_cases().items():
            g = group(f, name)
            g.attrs["class_name"] = type(metric).__name__
            g.attrs["config"] = json.dumps(metric.get_config())
            g.attrs["batches"] = len(batches)
            running = []
            for i, (yt, yp, w) in enumerate(batches):
                for key, value in (("y_true", yt), ("y_pred", yp), ("sample_weight", w)):
                    if value is not None:
                        put(g, f"batch_{i}/{key}", value)
                if yt is None:
                    metric.update_state(yp, sample_weight=w)
                else:
                    metric.update_state(yt, yp, sample_weight=w)
                running.append(np.asarray(keras.ops.convert_to_numpy(metric.result()), np.float64).reshape(-1))
            g.create_dataset("running", data=np.stack(running), track_times=False)
            g.create_dataset("result", data=running[-1], track_times=False)
        model, x, y = stateful_metrics_model()
        g = group(f, "model")
        for w in model.weights:
            put(g, "weights/" + w.path.replace("/", "_"), keras.ops.convert_to_numpy(w))
        put(g, "x", x)
        for i, a in enumerate(y):
            put(g, f"y/{i}", a)
        logs = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
        names = log_names(model, logs)
        put_names(g, "log_names", names)
        g.create_dataset("evaluate", data=np.array([logs[n] for n in names], np.float64), track_times=False)


def write_schedules():
    with new_file(os.path.join(FILES, "schedules.h5")) as f:
        for name, sched in SCHEDULES.items():
            g = group(f, name)
            g.attrs["config"] = json.dumps(sched.get_config(), default=str)
            values = [float(keras.ops.convert_to_numpy(sched(step))) for step in range(SCHEDULE_STEPS)]
            g.create_dataset("values", data=np.array(values, dtype=np.float64), track_times=False)


# ---- the reverse direction -------------------------------------------------------------------------------

def read_cpp_files():
    out_path = os.path.join(FILES, "keras_predictions_of_cpp.h5")
    with new_file(out_path) as out:
        for name in CPP_CASES:
            path = os.path.join(FILES, f"cpp_{name}.h5")
            if not os.path.exists(path):
                sys.exit(f"{path} is missing: run TOWER_WRITE_GOLDEN_DIR={FILES} build/tests/test_golden first")
            keras.utils.set_random_seed(SEED)
            c = CASES[name]()
            model = c["model"]
            model.load_weights(path)  # Keras's legacy HDF5 reader (layers matched in order)
            with h5py.File(os.path.join(FILES, f"{name}.h5"), "r") as golden:
                x = [golden[f"x/{i}"][()] for i in range(len(golden["x"]))]
            pred = model.predict(x if len(x) > 1 else x[0], batch_size=BATCH, verbose=0)
            for i, v in enumerate(pred if isinstance(pred, list) else [pred]):
                put(out, f"{name}/predict/{i}", v)
            for n, w in weight_items(model):
                put(out, f"{name}/weights/{n}", w.numpy())
    print("wrote", out_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from-cpp", action="store_true",
                        help="read files/cpp_<case>.h5 and record Keras's predictions with those weights")
    parser.add_argument("--cases", nargs="*", help="only these cases (and not losses, metrics, schedules)")
    parser.add_argument("--stateful-metrics", action="store_true", help="only files/stateful_metrics.h5")
    args = parser.parse_args()
    os.makedirs(FILES, exist_ok=True)
    if args.stateful_metrics:
        write_stateful_metrics()
        print("wrote stateful_metrics.h5")
        return
    if args.from_cpp:
        read_cpp_files()
        return
    for name, build in CASES.items():
        if not args.cases or name in args.cases:
            print("wrote", write_case(name, build))
    if args.cases:
        return
    write_stateful()
    write_losses()
    write_metrics()
    write_schedules()
    write_stateful_metrics()
    print("wrote stateful.h5, losses.h5, metrics.h5, schedules.h5, stateful_metrics.h5")


if __name__ == "__main__":
    main()
