"""The DOT text Keras 3's keras.utils.model_to_dot writes for the models of tests/layers/utils/test_plot_model.cpp.

Run with Keras 3 and pydot (python3 -m pip install --target /tmp/pydot-lib pydot):
  PYTHONPATH=/tmp/pydot-lib python make_plot_model.py
Writes files/plot_model/<case>.dot. Keras names nodes by Python object ids; these files name them by
the layers' names, quoted, as tower does. Made with Keras 3.15.1, pydot 4.0.1.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras
from keras import layers

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files", "plot_model")


def two_inputs():
    """Two inputs; a nested Sequential on the first; merged with the second; one output."""
    image = keras.Input((8,), name="image")
    meta = keras.Input((4,), name="meta")
    inner = keras.Sequential([keras.Input((8,)), layers.Dense(16, activation="relu", name="hidden"),
                              layers.Dense(8, name="features")], name="encoder")
    z = inner(image)
    c = layers.Concatenate(name="merge")([z, meta])
    out = layers.Dense(1, activation="sigmoid", name="label")(c)
    return keras.Model([image, meta], out, name="two_inputs")


def chain():
    """A Sequential with a frozen layer."""
    m = keras.Sequential([keras.Input((3, 4)), layers.Flatten(name="flat"), layers.Dense(5, name="d1"),
                          layers.Dense(2, activation="softmax", name="d2")], name="chain")
    m.get_layer("d1").trainable = False
    return m


def nested_functional():
    """A functional model nested in a functional model (its InputLayer drawn inside the cluster)."""
    inner_in = keras.Input((5,), name="inner_in")
    inner_out = layers.Dense(3, activation="tanh", name="inner_dense")(inner_in)
    inner = keras.Model(inner_in, inner_out, name="block")
    x = keras.Input((5,), name="x")
    y = layers.Dense(2, name="head")(inner(x))
    return keras.Model(x, y, name="outer")


def with_names(text, model):
    ids = {}

    def walk(m):
        for layer in (m.layers if isinstance(m, keras.Sequential) else m._operations):
            ids[str(id(layer))] = layer.name
            if isinstance(layer, keras.Model):
                walk(layer)

    walk(model)
    for k, v in ids.items():
        text = text.replace(k, '"' + v + '"')
    return text


CASES = {
    "two_inputs_default": (two_inputs, {}),
    "two_inputs_shapes_lr": (two_inputs, dict(show_shapes=True, rankdir="LR")),
    "two_inputs_expanded": (two_inputs, dict(show_shapes=True, show_dtype=True, show_layer_activations=True,
                                             show_trainable=True, expand_nested=True, show_layer_names=False)),
    "chain_trainable": (chain, dict(show_shapes=True, show_trainable=True, dpi=96)),
    "nested_functional_expanded": (nested_functional, dict(show_shapes=True, expand_nested=True)),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, (make, kwargs) in CASES.items():
        model = make()
        with open(os.path.join(OUT, name + ".dot"), "w") as f:
            f.write(with_names(keras.utils.model_to_dot(model, **kwargs).to_string(), model))
        print("wrote", name)
