"""Keras 3's squeeze_or_expand_to_same_rank for a user's loss function (issue 37, part 7).

Writes files/loss_ranks.h5: for each case, /<case>/{y_true, y_pred, per_sample, builtin_mse, evaluate_loss}, where
per_sample is what Keras 3's LossFunctionWrapper (how compile() wraps a plain function) gives for the
user's loss ``mean(square(y_true - y_pred), axis=-1)`` after bringing y_true and y_pred to the same
rank, and builtin_mse is keras.losses.mean_squared_error of the same pair (the built-in "mse", which
a custom metric of the same formula must equal, as in tf.keras 2) and evaluate_loss the loss that
model.compile(loss=user_mse).evaluate reports for a model whose output is y_pred. test_golden (golden: a user's loss
gets y_true at y_pred's rank) checks tower against both.

    python3 -m venv /tmp/venv-k3 && /tmp/venv-k3/bin/pip install keras==3.15.1 h5py numpy scipy jax
    /tmp/venv-k3/bin/python tests/golden/make_loss_ranks.py
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import h5py  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402
from keras.src.losses.losses import LossFunctionWrapper  # noqa: E402  (what compile wraps a function in)

FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files")


def user_mse(y_true, y_pred):  # ported line by line from a user's code
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


def main():
    rng = np.random.default_rng(37)
    cases = {
        "true_b_pred_b1": ((8,), (8, 1)),  # labels (batch,), a Dense(1) output: y_true expanded
        "true_b1_pred_b": ((8, 1), (8,)),  # y_pred expanded
        "true_bt_pred_bt1": ((8, 3), (8, 3, 1)),  # y_pred squeezed
        "true_bt1_pred_bt": ((8, 3, 1), (8, 3)),  # y_true squeezed
        "same_rank": ((8, 2), (8, 2)),
    }
    wrapper = LossFunctionWrapper(user_mse, reduction=None, name="user_mse")
    with h5py.File(os.path.join(FILES, "loss_ranks.h5"), "w", libver=("earliest", "v108"), track_order=False) as f:
        f.attrs["keras_version"] = keras.__version__
        for name, (true_shape, pred_shape) in cases.items():
            y_true = rng.standard_normal(true_shape).astype("float32")
            y_pred = rng.standard_normal(pred_shape).astype("float32")
            g = f.create_group(name)
            g["y_true"] = y_true
            g["y_pred"] = y_pred
            g["per_sample"] = np.asarray(wrapper(y_true, y_pred), dtype="float32")
            g["builtin_mse"] = np.asarray(keras.losses.mean_squared_error(y_true, y_pred), dtype="float32")
            # The same through compile and evaluate: a model whose output is its input (y_pred).
            model = keras.Sequential([keras.Input(pred_shape[1:]), keras.layers.Identity()])
            model.compile(loss=user_mse)
            g["evaluate_loss"] = np.float32(model.evaluate(y_pred, y_true, batch_size=8, verbose=0))
    print("wrote loss_ranks.h5")


if __name__ == "__main__":
    main()
