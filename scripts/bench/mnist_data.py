"""Fashion-MNIST (or any MNIST-style IDX directory) as float32 numpy arrays, for the reference benchmarks."""
import argparse
import gzip
import os

import numpy as np


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def load(directory, samples=0):
    def find(name):
        for candidate in (name, name + ".gz"):
            if os.path.exists(os.path.join(directory, candidate)):
                return os.path.join(directory, candidate)
        raise FileNotFoundError(name)

    x = read_idx(find("train-images-idx3-ubyte")).astype("float32") / 255
    y = read_idx(find("train-labels-idx1-ubyte")).astype("int64")
    if samples:
        x, y = x[:samples], y[:samples]
    return x, y


def parse_args():
    """The options every reference benchmark takes (the same as apps/bench_mnist's)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--samples", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda (PyTorch only)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch only)")
    return parser.parse_args()
