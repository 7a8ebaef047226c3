"""Reads a TensorBoard log dir with TensorBoard's own reader and prints what it sees.

Usage: read_tensorboard.py LOG_DIR [--keras]

For each run (train/, validation/) it loads the events with
tensorboard.backend.event_processing.event_accumulator.EventAccumulator (the reader behind the
TensorBoard UI, with the data-compat conversion TensorBoard applies) and prints every tag with its
steps and values: scalars (tensor summaries with the "scalars" plugin) as float32 values, histograms
as bucket count and total count, the "keras" graph summary as its class name. It asserts what tower's
TensorBoard callback test writes (tests/layers/callbacks/test_tensorboard.cpp run with
TOWER_TENSORBOARD_DIR=LOG_DIR); --keras skips the asserts, to print a real Keras log dir the same way.
Its output for tower's log dir is tests/golden/files/tensorboard_read.txt.
"""
import json
import os
import sys

from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.util import tensor_util


def read_run(path):
    acc = ea.EventAccumulator(path, size_guidance={ea.TENSORS: 0, ea.SCALARS: 0, ea.HISTOGRAMS: 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
        rows = []
        for e in acc.Tensors(tag):
            value = tensor_util.make_ndarray(e.tensor_proto)
            if plugin == "scalars":
                rows.append((e.step, float(value)))
            elif plugin == "histograms":
                rows.append((e.step, (value.shape[0], float(value[:, 2].sum()), float(value[0, 0]), float(value[-1, 1]))))
            elif plugin == "graph_keras_model":
                rows.append((e.step, json.loads(value[0].decode())["class_name"]))
        out[tag] = (plugin, rows)
    return out


def main():
    log_dir = sys.argv[1]
    runs = {}
    for run in sorted(os.listdir(log_dir)):
        runs[run] = read_run(os.path.join(log_dir, run))
        print(f"run {run}")
        for tag in sorted(runs[run]):
            plugin, rows = runs[run][tag]
            if plugin == "histograms":
                text = " ".join(f"{s}:buckets={v[0]},count={v[1]:g}" for s, v in rows)
            elif plugin == "scalars":
                text = " ".join(f"{s}:{v:.6g}" for s, v in rows)
            else:
                text = " ".join(f"{s}:{v}" for s, v in rows)
            print(f"  {tag} [{plugin}] {text}")
    if "--keras" in sys.argv:
        return
    train, val = runs["train"], runs["validation"]
    assert sorted(runs) == ["train", "validation"]
    assert set(train) == {"batch_loss", "batch_mae", "epoch_learning_rate", "epoch_loss", "epoch_mae", "keras",
                          "sequential/d1/kernel/histogram", "sequential/d1/bias/histogram",
                          "sequential/d2/kernel/histogram", "sequential/d2/bias/histogram"}, sorted(train)
    assert set(val) == {"epoch_loss", "epoch_mae", "evaluation_loss_vs_iterations",
                        "evaluation_mae_vs_iterations"}, sorted(val)
    steps = lambda run, tag: [s for s, _ in run[tag][1]]
    assert steps(train, "epoch_loss") == [0, 1, 2]
    assert steps(train, "batch_loss") == [2, 4, 6, 8]
    assert steps(val, "evaluation_loss_vs_iterations") == [3, 6, 9]
    assert all(abs(v - 0.01) < 1e-9 for _, v in train["epoch_learning_rate"][1])
    assert train["keras"][1] == [(0, "Sequential")]
    counts = {"sequential/d1/kernel/histogram": 6, "sequential/d1/bias/histogram": 2,
              "sequential/d2/kernel/histogram": 2, "sequential/d2/bias/histogram": 1}
    for tag, n in counts.items():
        assert [(s, v[0], v[1]) for s, v in train[tag][1]] == [(e, 30, n) for e in range(3)], train[tag]
    # fit's batch scalars are running averages: the last batch of epoch 1 (step 6) is its epoch value.
    assert dict(train["batch_loss"][1])[6] == dict(train["epoch_loss"][1])[1]
    assert [v for _, v in val["evaluation_loss_vs_iterations"][1]] == [v for _, v in val["epoch_loss"][1]]
    print("OK: TensorBoard's EventAccumulator reads every tag, step and value tower wrote")


if __name__ == "__main__":
    main()
