#!/usr/bin/env python3
"""Keras 3 goldens for mixed precision (files/mixed_precision.h5), read by test_golden_mixed_precision.cpp.

Run from tests/golden with the pip environment of README.md:
    TF_CPP_MIN_LOG_LEVEL=3 python make_mixed_precision.py

One small model, Input (8, 8, 2) -> Conv2D(4, 3, relu) "c" -> BatchNormalization "bn" -> Flatten "f" ->
Dense(3) "d" -> Activation("softmax") "s", weights from a seeded numpy generator, batch 4, under each
policy in POLICIES. Layout, per policy group /<policy>:
    /weights/<layer>/<weight>   float32 values before anything runs
    /x, /y                      the batch (float32 images, int32 labels)
    /predict                    model.predict(x) (inference), in the compute dtype, stored as float32
    /train_predict              model(x, training=True)
    /train_loss                 sparse categorical crossentropy of the training-mode output cast to float32
    /grads/<layer>/<weight>     d(train_loss)/d(weight); under mixed_float16 as the LossScaleOptimizer
                                applies them: gradients of loss * 2^15, divided by 2^15
    /step1/<layer>/<weight>     every weight after one train_on_batch with SGD(0.1) (compile wraps it in a
                                LossScaleOptimizer under mixed_float16)
  mixed_float16 only (loss-scale updates, attrs of /mixed_float16/scale):
    attrs step1_scale, step1_counter        after that step: 32768, 1
    /overflow/<layer>/<weight>  after one more train_on_batch on x * 60000 (float16 overflows): unchanged
    attrs overflow_scale, overflow_counter  16384, 0 (skipped, halved)
    /growth/<layer>/<weight>    from /weights, two train_on_batch with LossScaleOptimizer(SGD(0.1),
                                initial_scale=2**15, dynamic_growth_steps=2)
    attrs growth_scale, growth_counter      65536, 0
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers as L  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
POLICIES = ["mixed_float16", "mixed_bfloat16"]


def make_model():
    return keras.Sequential([
        keras.Input((8, 8, 2)),
        L.Conv2D(4, 3, activation="relu", name="c"),
        L.BatchNormalization(name="bn"),
        L.Flatten(name="f"),
        L.Dense(3, name="d"),
        L.Activation("softmax", name="s"),
    ])


def weight_key(v):
    return v.path.split("/", 1)[1]  # "sequential/c/kernel" -> "c/kernel"


def set_seeded_weights(model, rng):
    for v in model.weights:
        if v.path.endswith("moving_variance") or v.path.endswith("gamma"):
            v.assign(rng.uniform(0.5, 1.5, v.shape).astype("float32"))
        else:
            v.assign(rng.uniform(-0.5, 0.5, v.shape).astype("float32"))
    return {weight_key(v): v.numpy() for v in model.weights}


def write_weights(group, model):
    for v in model.weights:
        group.create_dataset(weight_key(v), data=v.numpy().astype("float32"))


def main():
    rng = np.random.default_rng(2026)
    x = rng.uniform(0.0, 1.0, (4, 8, 8, 2)).astype("float32")
    y = np.array([0, 2, 1, 2], dtype="int32")
    seed_state = rng.bit_generator.state
    with h5py.File(os.path.join(HERE, "files", "mixed_precision.h5"), "w") as f:
        f.attrs["keras_version"] = keras.__version__
        f.attrs["tensorflow_version"] = tf.__version__
        for policy in POLICIES:
            keras.utils.clear_session()  # (it resets the global policy too: set it after)
            keras.mixed_precision.set_global_policy(policy)
            g = f.create_group(policy)
            g.create_dataset("x", data=x)
            g.create_dataset("y", data=y)
            model = make_model()
            assert model.layers[0].compute_dtype == policy[6:], model.layers[0].compute_dtype
            rng.bit_generator.state = seed_state
            initial = set_seeded_weights(model, rng)
            write_weights(g.create_group("weights"), model)
            g.create_dataset("predict", data=np.asarray(model.predict(x, verbose=0), dtype="float32"))
            loss_fn = keras.losses.SparseCategoricalCrossentropy()
            scale = 2.0 ** 15 if policy == "mixed_float16" else 1.0
            with tf.GradientTape() as tape:
                out = model(x, training=True)
                loss = loss_fn(y, out)  # the loss casts the output to float32
                scaled = loss * scale
            g.create_dataset("train_predict", data=np.asarray(out, dtype="float32"))
            g.create_dataset("train_loss", data=np.float32(loss))
            grads = tape.gradient(scaled, model.trainable_weights)
            gg = g.create_group("grads")
            for v, d in zip(model.trainable_weights, grads):
                gg.create_dataset(weight_key(v), data=(np.asarray(d, dtype="float32") / scale))

            # One step from the initial weights (BatchNormalization's statistics move too).
            for v in model.weights:
                v.assign(initial[weight_key(v)])
            model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", jit_compile=False)
            model.train_on_batch(x, y)
            write_weights(g.create_group("step1"), model)
            if policy != "mixed_float16":
                continue
            lso = model.optimizer
            assert isinstance(lso, keras.optimizers.LossScaleOptimizer), type(lso)
            s = g.create_group("scale")
            s.attrs["step1_scale"] = int(lso.dynamic_scale.numpy())
            s.attrs["step1_counter"] = int(lso.step_counter.numpy())
            model.train_on_batch(x * 60000.0, y)
            write_weights(g.create_group("overflow"), model)
            s.attrs["overflow_scale"] = int(lso.dynamic_scale.numpy())
            s.attrs["overflow_counter"] = int(lso.step_counter.numpy())

            for v in model.weights:
                v.assign(initial[weight_key(v)])
            model.compile(keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1), dynamic_growth_steps=2),
                          "sparse_categorical_crossentropy", jit_compile=False)
            model.train_on_batch(x, y)
            model.train_on_batch(x, y)
            write_weights(g.create_group("growth"), model)
            s.attrs["growth_scale"] = int(model.optimizer.dynamic_scale.numpy())
            s.attrs["growth_counter"] = int(model.optimizer.step_counter.numpy())
    keras.mixed_precision.set_global_policy("float32")


if __name__ == "__main__":
    main()
