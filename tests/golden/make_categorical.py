"""Keras 3 references for the categorical preprocessing layers: CategoryEncoding, Hashing, IntegerLookup
and StringLookup (issue 18). Writes files/categorical.json, which tests/layers/preprocessing/
test_categorical.cpp reads.

    /tmp/venv-tf/bin/python tests/golden/make_categorical.py

Every number is what Keras 3.15.1 (TF 2.21 backend) computes; int64 values are written as JSON integers
(bins and hashes as decimal strings where they pass 2^53 would be lossy for some readers, so hashes are
written as strings).
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files", "categorical.json")


def tolist(a):
    return np.asarray(a).tolist()


def category_encoding():
    cases = []
    inputs = {
        "rank1": np.array([0, 1, 3, 1, 5]),
        "rank2": np.array([[0, 1, 1], [3, 3, 7], [2, 0, 4]]),
        "column": np.array([[2], [1], [6]]),
    }
    for mode in ["one_hot", "multi_hot", "count"]:
        for key, x in inputs.items():
            layer = keras.layers.CategoryEncoding(num_tokens=5, output_mode=mode)
            cases.append({"mode": mode, "num_tokens": 5, "input": tolist(x), "output": tolist(layer(x))})
    layer = keras.layers.CategoryEncoding(num_tokens=4, output_mode="count")
    x, w = np.array([[0, 1, 1, 3], [2, 2, 2, 0]]), np.array([[0.5, 1.0, 2.0, 0.25], [1.0, 2.0, 3.0, 4.0]])
    weighted = {"input": tolist(x), "count_weights": tolist(w), "output": tolist(layer(x, count_weights=w))}
    config = keras.layers.CategoryEncoding(num_tokens=7, output_mode="count", name="ce").get_config()
    return {"cases": cases, "weighted": weighted, "config": config}


INTS = [0, 1, -1, 7, 42, -42, 12345, -99999, 2**31 - 1, -(2**31), 2**40 + 3, 10**15, -(10**18), 2**63 - 1, -(2**63)]
STRINGS = ["", "a", "ab", "abc", "hello", "Hello, World", "0", "-1", "tower", "The quick brown fox jumps",
           "x" * 17, "y" * 32, "z" * 33, "w" * 64, "v" * 65, "a longer sentence that is over sixty-four bytes "
           "long so it takes the loop path of Fingerprint64", "\u00e9t\u00e9 \u2603", "u" * 200]


def hashing():
    out = {"ints": [str(v) for v in INTS], "strings": STRINGS, "cases": []}
    x = np.array(INTS, dtype=np.int64)
    for kwargs in [dict(num_bins=1000003), dict(num_bins=3), dict(num_bins=1), dict(num_bins=10, mask_value=0),
                   dict(num_bins=1000003, salt=[133, 137]), dict(num_bins=97, salt=42),
                   dict(num_bins=5, mask_value=-1, salt=[2**40, 7])]:
        layer = keras.layers.Hashing(**kwargs)
        case = {"kwargs": kwargs, "int_bins": tolist(layer(x)), "config": layer.get_config()}
        if "mask_value" not in kwargs:
            case["string_bins"] = tolist(layer(tf.constant(STRINGS)))
        out["cases"].append(case)
    layer = keras.layers.Hashing(num_bins=6, mask_value="")
    out["string_mask"] = {"num_bins": 6, "mask_value": "", "bins": tolist(layer(tf.constant(STRINGS)))}
    x2 = np.array([[3, 5, 9], [1, 1, 2]])
    out["encoded"] = []
    for mode in ["one_hot", "multi_hot", "count"]:
        layer = keras.layers.Hashing(num_bins=4, output_mode=mode)
        out["encoded"].append({"mode": mode, "input": tolist(x2), "output": tolist(layer(x2))})
    # Raw hashes of strings of every length 0..130 (every FarmHash path), as to_hash_bucket with the
    # largest bucket count (h mod 2^63 - 1), and SipHash with a key.
    raw = ["".join(chr(ord("a") + (i * 7 + j) % 26) for j in range(i)) for i in range(131)]
    big = 2**63 - 1
    out["raw"] = {"strings": raw,
                  "fast": [str(v) for v in tf.strings.to_hash_bucket_fast(raw, big).numpy().tolist()],
                  "strong_key": [1234567, 89],
                  "strong": [str(v) for v in tf.strings.to_hash_bucket_strong(raw, big, key=[1234567, 89]).numpy().tolist()]}
    return out


def integer_lookup():
    data = np.array([[12, 1138, 42], [42, 1000, 36], [12, 42, 7]])
    query = np.array([[12, 1000, 36], [99, 42, 7], [0, -5, 1138]])
    out = {"adapt_data": tolist(data), "query": tolist(query), "cases": []}
    for kwargs in [{}, dict(num_oov_indices=0, mask_token=0), dict(mask_token=0, oov_token=-7),
                   dict(max_tokens=4), dict(output_mode="multi_hot"), dict(output_mode="count"),
                   dict(output_mode="one_hot"), dict(num_oov_indices=3),
                   dict(num_oov_indices=2, mask_token=0, oov_method="farmhash"),
                   dict(num_oov_indices=3, oov_method="farmhash", salt=[7, 11]),
                   dict(output_mode="tf_idf"), dict(output_mode="tf_idf", num_oov_indices=2, max_tokens=5),
                   dict(output_mode="tf_idf", mask_token=0)]:
        layer = keras.layers.IntegerLookup(**kwargs)
        layer.adapt(data)
        q = query if kwargs.get("output_mode") != "one_hot" else query[:, :1]
        if kwargs.get("num_oov_indices") == 0:
            q = np.array([[12, 1000, 36], [0, 42, 7]])
        case = {"kwargs": kwargs, "vocabulary": tolist(layer.get_vocabulary()), "query": tolist(q),
                "output": tolist(layer(q)), "config": layer.get_config()}
        if kwargs.get("output_mode", "int") == "int":
            inv = keras.layers.IntegerLookup(vocabulary=layer.get_vocabulary(include_special_tokens=False),
                                             invert=True, **{k: v for k, v in kwargs.items() if k != "max_tokens"})
            case["inverted"] = tolist(inv(layer(q)))
        out["cases"].append(case)
    given = keras.layers.IntegerLookup(vocabulary=[7, 3, 12])
    out["given"] = {"vocabulary": [7, 3, 12], "query": [[3, 4, 12, 7]], "output": tolist(given(np.array([[3, 4, 12, 7]]))),
                    "config": given.get_config()}
    # tf_idf with given weights: the OOV index gets their mean, as Keras pads it.
    idf = keras.layers.IntegerLookup(vocabulary=[7, 3, 12], idf_weights=[0.5, 1.0, 2.5], output_mode="tf_idf")
    out["given_idf"] = {"vocabulary": [7, 3, 12], "idf_weights": [0.5, 1.0, 2.5], "query": [[3, 4, 12, 7, 3]],
                        "output": tolist(idf(np.array([[3, 4, 12, 7, 3]]))), "config": idf.get_config()}
    return out


def string_lookup():
    data = [["cat", "dog", "bird"], ["dog", "fish", "cat"], ["dog", "ant", "cat"]]
    query = [["cat", "emu", "dog"], ["", "ant", "fish"]]
    out = {"adapt_data": data, "query": query, "cases": []}
    for kwargs in [{}, dict(mask_token=""), dict(oov_token="<unk>", max_tokens=4), dict(num_oov_indices=0, mask_token=""),
                   dict(num_oov_indices=3), dict(num_oov_indices=2, mask_token="", salt=[5, 9])]:
        layer = keras.layers.StringLookup(**kwargs)
        layer.adapt(tf.constant(data))
        q = query if kwargs.get("num_oov_indices") != 0 else [["cat", "", "dog"], ["", "ant", "fish"]]
        case = {"kwargs": kwargs, "vocabulary": [v.decode() if isinstance(v, bytes) else v for v in layer.get_vocabulary()],
                "query": q, "output": tolist(layer(tf.constant(q))), "config": layer.get_config()}
        inv = keras.layers.StringLookup(vocabulary=layer.get_vocabulary(include_special_tokens=False), invert=True,
                                        **{k: v for k, v in kwargs.items() if k != "max_tokens"})
        case["inverted"] = [[v.decode() for v in row] for row in inv(layer(tf.constant(q))).numpy().tolist()]
        out["cases"].append(case)
    return out


def main():
    result = {"keras_version": keras.__version__, "tensorflow_version": tf.__version__,
              "category_encoding": category_encoding(), "hashing": hashing(),
              "integer_lookup": integer_lookup(), "string_lookup": string_lookup()}
    with open(OUT, "w") as f:
        json.dump(result, f, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
