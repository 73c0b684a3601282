"""Write the ``mindspore-rich`` run with real MindSpore 2.10 (CPU). Never run by the tests.

Run from the repository root with the MindSpore side venv::

    /tmp/venv-ms/bin/python tests/golden/mindspore-rich/make_fixture.py

Two trainings write into one directory, as happens when a script is run twice:

1. ``Model.train`` of a tiny conv net, 2 epochs of 3 steps, with ``SummaryCollector``
   (``loss/auto``, ``input_data/auto`` images, ``histogram_regular`` histograms, each
   written again at an epoch's last step, as MindSpore does) and one summary op of each kind
   inside the network (``logit_mean``, ``input_image``, ``conv_out``, ``logits``).
2. A second ``SummaryRecord`` (a new ``_MS`` file, a second later) that starts again at step
   0: ``loss/auto``, ``input_data/auto``, ``fc.weight/auto`` and ``logits`` at steps 0, 1, 2,
   2 (written twice, other values), 3; ``conv_out`` only from step 2 (2, 2, 3, 3), so its
   earlier steps of the first training stay and the later ones are superseded.

The other tags (``conv.weight/auto``, ``fc.bias/auto``, ``input_image``, ``logit_mean``) are
written by the first training only. Only the ``_MS`` files are kept (no lineage, no
checkpoints). MindInsight's reading of the run is recorded by
``../mindspore-full/record_mindinsight.py`` (with the MindInsight venv, on NumPy 1.26).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn, ops
from mindspore.dataset import GeneratorDataset
from mindspore.train import Model, SummaryCollector, SummaryRecord

HERE = Path(__file__).resolve().parent
RUN = HERE / "run"


class TinyNet(nn.Cell):
    """Conv -> ReLU -> Dense, with one summary op of each kind."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="same", weight_init="normal")
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(2 * 6 * 6, 3)
        self.scalar_summary = ops.ScalarSummary()
        self.image_summary = ops.ImageSummary()
        self.histogram_summary = ops.HistogramSummary()
        self.tensor_summary = ops.TensorSummary()

    def construct(self, x):
        self.image_summary("input_image", x)
        y = self.relu(self.conv(x))
        self.histogram_summary("conv_out", y)
        out = self.fc(self.flatten(y))
        self.tensor_summary("logits", out)
        self.scalar_summary("logit_mean", out.mean())
        return out


def dataset(n: int = 12, batch: int = 4) -> GeneratorDataset:
    rng = np.random.default_rng(0)
    images = rng.random((n, 1, 6, 6), dtype=np.float32)
    labels = (images.mean(axis=(1, 2, 3)) * 3).astype(np.int32).clip(0, 2)
    data = GeneratorDataset(
        list(zip(images, labels, strict=True)), ["image", "label"], shuffle=False
    )
    return data.batch(batch)


def first_training() -> None:
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    ms.set_seed(1)
    net = TinyNet()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(net, loss_fn=loss, optimizer=opt)
    summary = SummaryCollector(
        str(RUN),
        collect_specified_data={
            "collect_graph": False,
            "collect_input_data": True,
            "histogram_regular": "^(conv|fc).*",
            "collect_landscape": None,
        },
        collect_freq=1,
        keep_default_action=True,
    )
    model.train(2, dataset(), callbacks=[summary], dataset_sink_mode=False)


def second_training() -> None:
    """Starts again at step 0 in the same directory; step 2 is written twice."""
    rng = np.random.default_rng(7)
    with SummaryRecord(str(RUN)) as record:
        for step, again in ((0, False), (1, False), (2, False), (2, True), (3, False)):
            scale = 10.0 if again else 1.0  # the repeated step's second values differ
            record.add_value("scalar", "loss/auto", ms.Tensor(np.float32(scale + step)))
            image = rng.random((1, 1, 6, 6), dtype=np.float32)
            record.add_value("image", "input_data/auto", ms.Tensor(image))
            weight = rng.standard_normal((3, 72)).astype(np.float32) * scale
            record.add_value("histogram", "fc.weight/auto", ms.Tensor(weight))
            logits = (rng.standard_normal((4, 3)) * scale).astype(np.float32)
            record.add_value("tensor", "logits", ms.Tensor(logits))
            if step >= 2:
                conv = rng.random((4, 2, 6, 6), dtype=np.float32) * scale
                record.add_value("histogram", "conv_out", ms.Tensor(conv))
            record.record(step)
        record.add_value("histogram", "conv_out", ms.Tensor(rng.random((8,), dtype=np.float32)))
        record.record(3)  # conv_out's step 3 twice


def main() -> None:
    shutil.rmtree(RUN, ignore_errors=True)
    first_training()
    time.sleep(1.5)  # the second file's name (its timestamp) must sort after the first's
    second_training()
    for path in RUN.iterdir():
        if not path.name.endswith("_MS"):
            path.unlink()
    for path in sorted(RUN.iterdir()):
        print(path.name, path.stat().st_size)


if __name__ == "__main__":
    main()
