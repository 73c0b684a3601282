"""Make the MindSpore loss-landscape fixture (run with MindSpore 2.10's python, never by tests).

    /work/venvs/mindspore/bin/python tests/golden/mindspore-landscape/make_fixture.py

A tiny MLP trains 2 epochs of 4 steps with MindSpore's SummaryCollector collecting the
landscape weights (intervals [[1, 2, 3], [4, 5, 6]] in steps), then
``SummaryLandscape.gen_landscapes_with_multi_process`` makes the two train landscapes and the
result landscape at 3 x 3 on 16 samples into ``run/`` here. Only the ``_MS`` summary files
(and the metadata, for reference) are kept: the weight snapshots are deleted.
``expected.json`` holds the landscapes as MindSpore's own protobuf classes parse them (the
reference answer for trainledger's wire-format reader).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import stat
import struct

import mindspore as ms
import numpy as np
from mindspore import dataset as ds
from mindspore import nn
from mindspore.train import Loss, Model, SummaryCollector, SummaryLandscape
from mindspore.train.summary_pb2 import Event

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run")
INTERVALS = [[1, 2, 3], [4, 5, 6]]


class Net(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Dense(4, 8)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(8, 2)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def dataset() -> ds.GeneratorDataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)


def make_model() -> tuple[Model, nn.Cell]:
    ms.set_seed(0)
    net = Net()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    return Model(net, loss, opt, metrics={"Loss": Loss()}), net


def callback_fn():
    model, net = make_model()
    return model, net, dataset(), {"Loss": Loss()}


def records(path: str):
    """The payloads of a TFRecord-framed file (length, crc, payload, crc)."""
    with open(path, "rb") as fh:
        data = fh.read()
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos : pos + 8])
        yield data[pos + 12 : pos + 12 + length]
        pos += 12 + length + 4


def expected_landscapes() -> list[dict]:
    """Every loss landscape in the run's _MS files, parsed with MindSpore's summary_pb2."""
    out = []
    for path in sorted(glob.glob(os.path.join(RUN, "*_MS"))):
        for payload in records(path):
            event = Event()
            event.ParseFromString(payload)
            for value in event.summary.value:
                if not value.HasField("loss_landscape"):
                    continue
                msg = value.loss_landscape
                out.append(
                    {
                        "tag": value.tag,
                        "decomposition": msg.metadata.decomposition,
                        "unit": msg.metadata.unit,
                        "step_per_epoch": msg.metadata.step_per_epoch,
                        "intervals": list(msg.loss_path.intervals),
                        "x": list(msg.landscape.x.float_data),
                        "y": list(msg.landscape.y.float_data),
                        "z": list(msg.landscape.z.float_data),
                        "z_dims": list(msg.landscape.z.dims),
                        "path": {
                            k: list(getattr(msg.loss_path.points, k).float_data) for k in "xyz"
                        },
                        "convergence_point": [
                            getattr(msg.convergence_point, k).float_data[0] for k in "xyz"
                        ],
                    }
                )
    return out


def main() -> None:
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    shutil.rmtree(RUN, ignore_errors=True)
    model, _ = make_model()
    landscape = {
        "landscape_size": 3,
        "unit": "step",
        "create_landscape": {"train": True, "result": True},
        "num_samples": 16,
        "intervals": INTERVALS,
    }
    collector = SummaryCollector(RUN, collect_specified_data={"collect_landscape": landscape})
    model.train(2, dataset(), callbacks=[collector], dataset_sink_mode=False)
    SummaryLandscape(RUN).gen_landscapes_with_multi_process(callback_fn, device_ids=[0])
    shutil.copy(os.path.join(RUN, "ckpt_dir", "train_metadata.json"), RUN)
    shutil.rmtree(os.path.join(RUN, "ckpt_dir"))
    for path in glob.glob(os.path.join(RUN, "*")):
        if not (path.endswith("_MS") or path.endswith("train_metadata.json")):
            os.remove(path) if os.path.isfile(path) else shutil.rmtree(path)
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as fh:
        json.dump({"mindspore": ms.__version__, "landscapes": expected_landscapes()}, fh, indent=1)
    for path in glob.glob(os.path.join(RUN, "*")):
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    print(sorted(os.listdir(RUN)))


if __name__ == "__main__":
    main()
