"""MindSpore side of bench/landscape.py (run with MindSpore 2.10's python, as a subprocess).

Trains the benchmark MLP once with SummaryCollector(collect_landscape=...), then answers each
"run <size>" line on stdin with the seconds one ``gen_landscapes_with_multi_process`` took.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time

import mindspore as ms
import numpy as np
from mindspore import dataset as ds
from mindspore import nn
from mindspore.train import Loss, Model, SummaryCollector, SummaryLandscape

SAMPLES, FEATURES, BATCH, EPOCHS = 512, 32, 32, 3


class MLP(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.SequentialCell(
            nn.Dense(FEATURES, 64), nn.ReLU(), nn.Dense(64, 64), nn.ReLU(), nn.Dense(64, 2)
        )

    def construct(self, x):
        return self.net(x)


def dataset() -> ds.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(SAMPLES, FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(BATCH)


def make_model() -> tuple[Model, nn.Cell]:
    ms.set_seed(0)
    net = MLP()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), 0.1)
    return Model(net, loss, opt, metrics={"Loss": Loss()}), net


def callback_fn():
    model, net = make_model()
    return model, net, dataset(), {"Loss": Loss()}


def main() -> None:
    run_dir = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "graph":
        ms.set_context(mode=ms.GRAPH_MODE)
    landscape = {
        "landscape_size": 10,
        "unit": "epoch",
        "create_landscape": {"train": True, "result": True},
        "num_samples": 256,
        "intervals": [[1, 2, 3]],
    }
    model, _ = make_model()
    collector = SummaryCollector(run_dir, collect_specified_data={"collect_landscape": landscape})
    with contextlib.redirect_stdout(io.StringIO()):
        model.train(EPOCHS, dataset(), callbacks=[collector], dataset_sink_mode=False)
    print("ready", flush=True)
    for line in sys.stdin:
        size = int(line.split()[1])
        out = os.path.join(run_dir, "out")
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # MindSpore prints every point
            SummaryLandscape(run_dir).gen_landscapes_with_multi_process(
                callback_fn, collect_landscape={"landscape_size": size}, device_ids=[0], output=out
            )
        print(f"{time.perf_counter() - start:.6f}", flush=True)


if __name__ == "__main__":
    main()
