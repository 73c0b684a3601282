"""Write the ``mindspore-full`` fixtures with real MindSpore 2.10 (CPU). Never run by the tests.

Run from the repository root with the MindSpore side venv::

    /work/venvs/mindspore/bin/python tests/golden/mindspore-full/make_fixtures.py

It trains a tiny conv net for a few seconds with ``SummaryCollector`` (graph, input images,
``histogram_regular``) and summary ops inside the network (``ScalarSummary``,
``ImageSummary``, ``HistogramSummary``, ``TensorSummary``), and ``ModelCheckpoint``. Then it
saves checkpoints of every parameter dtype through ``mindspore.save_checkpoint``, one with
MindSpore's CRC trailer, and two encrypted (AES-GCM, AES-CBC) under ``ENC_KEY`` below (a test key,
public on purpose). Finally it records what ``mindspore.load_checkpoint`` returns for every
.ckpt under tests/golden as ``checkpoints-expected.json``, and MindSpore's own schema descriptors as
``mindspore-schema.json`` (the MindInsight answers for the
summaries come from ``record_mindinsight.py``, run with the MindInsight venv).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn, ops
from mindspore.dataset import GeneratorDataset
from mindspore.train import CheckpointConfig, Model, ModelCheckpoint, SummaryCollector

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent
RUN = HERE / "run"
EXTRA = HERE / "ckpt-dtypes"
#: Test key of the encrypted checkpoints (16 bytes -> AES-128). Public test data, not a secret.
ENC_KEY = b"trainledger-test"
ENCRYPTED = {"AES-GCM": "encrypted.ckpt", "AES-CBC": "encrypted-cbc.ckpt"}
#: Elements listed verbatim per tensor in the expected JSON; larger tensors add a hash.
FULL_LIMIT = 64


class TinyNet(nn.Cell):
    """Conv -> BatchNorm -> ReLU -> Dense, with one summary op of each kind."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="same", weight_init="normal")
        self.bn = nn.BatchNorm2d(2)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(2 * 8 * 8, 3)
        self.scalar_summary = ops.ScalarSummary()
        self.image_summary = ops.ImageSummary()
        self.histogram_summary = ops.HistogramSummary()
        self.tensor_summary = ops.TensorSummary()

    def construct(self, x):
        self.image_summary("input_image", x)
        y = self.relu(self.bn(self.conv(x)))
        self.histogram_summary("conv_out", y)
        out = self.fc(self.flatten(y))
        self.tensor_summary("logits", out)
        self.scalar_summary("logit_mean", out.mean())
        return out


def dataset(n: int = 48, batch: int = 8) -> GeneratorDataset:
    rng = np.random.default_rng(0)
    images = rng.random((n, 1, 8, 8), dtype=np.float32)
    labels = (images.mean(axis=(1, 2, 3)) * 3).astype(np.int32).clip(0, 2)
    data = GeneratorDataset(
        list(zip(images, labels, strict=True)), ["image", "label"], shuffle=False
    )
    return data.batch(batch)


def train() -> None:
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    ms.set_seed(1)
    net = TinyNet()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(net, loss_fn=loss, optimizer=opt, metrics={"acc"})
    summary = SummaryCollector(
        str(RUN),
        collect_specified_data={
            "collect_graph": True,
            "collect_input_data": True,
            "histogram_regular": "^(conv|fc).*",
            "collect_landscape": None,
        },
        collect_freq=1,
        keep_default_action=True,
    )
    ckpt = ModelCheckpoint(
        prefix="tiny",
        directory=str(RUN / "ckpt"),
        config=CheckpointConfig(save_checkpoint_steps=6, keep_checkpoint_max=2),
    )
    model.train(2, dataset(), callbacks=[summary, ckpt], dataset_sink_mode=False)


def save_dtype_checkpoints() -> None:
    EXTRA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2)
    params = [
        {"name": "f32.weight", "data": ms.Tensor(rng.standard_normal((3, 4)).astype(np.float32))},
        {"name": "f16.weight", "data": ms.Tensor(rng.standard_normal((2, 5)).astype(np.float16))},
        {"name": "f64.scalar", "data": ms.Tensor(np.float64(3.25))},
        {"name": "i32.steps", "data": ms.Tensor(np.arange(6, dtype=np.int32).reshape(2, 3) - 2)},
        {"name": "i64.global_step", "data": ms.Tensor(np.array([2**40 + 7], dtype=np.int64))},
        {"name": "u8.mask", "data": ms.Tensor(np.array([0, 1, 255, 7], dtype=np.uint8))},
        {"name": "bool.flags", "data": ms.Tensor(np.array([True, False, True]))},
        {"name": "i8.q", "data": ms.Tensor(np.array([-128, 0, 127], dtype=np.int8))},
        {"name": "i16.q", "data": ms.Tensor(np.array([-300, 5], dtype=np.int16))},
        {
            "name": "bf16.weight",
            "data": ms.Tensor(rng.standard_normal((2, 3)).astype(np.float32), ms.bfloat16),
        },
    ]
    # append_dict values are saved too: a string (MindSpore's "str" type) and an int
    extra = {"note": "trainledger \u2713 test", "epoch_num": 7}
    ms.save_checkpoint(params, str(EXTRA / "dtypes.ckpt"), append_dict=extra)
    ms.save_checkpoint(params[:4], str(EXTRA / "crc.ckpt"), crc_check=True)
    for mode, name in ENCRYPTED.items():
        ms.save_checkpoint(params[:4], str(EXTRA / name), enc_key=ENC_KEY, enc_mode=mode)


def _tensor_record(tensor: ms.Tensor) -> dict:
    dtype = str(tensor.dtype)
    arr = tensor.float().asnumpy() if dtype == "BFloat16" else tensor.asnumpy()
    flat = arr.reshape(-1)
    out = {"dtype": dtype, "shape": list(arr.shape), "size": int(flat.size)}
    as_list = [
        bool(v) if arr.dtype == np.bool_ else (int(v) if arr.dtype.kind in "iu" else float(v))
        for v in flat
    ]
    if flat.size <= FULL_LIMIT:
        out["values"] = as_list
    else:
        out["first"] = as_list[:8]
        out["sha256_float64"] = hashlib.sha256(flat.astype(np.float64).tobytes()).hexdigest()
    return out


def record_checkpoints() -> None:
    expected = {}
    for path in sorted(GOLDEN.rglob("*.ckpt")):
        rel = path.relative_to(GOLDEN).as_posix()
        modes = {name: mode for mode, name in ENCRYPTED.items()}
        kwargs = {"dec_key": ENC_KEY, "dec_mode": modes[path.name]} if path.name in modes else {}
        loaded = ms.load_checkpoint(str(path), **kwargs)
        expected[rel] = {
            name: {"dtype": "str", "value": p} if isinstance(p, str) else _tensor_record(p)
            for name, p in loaded.items()
        }
    (HERE / "checkpoints-expected.json").write_text(
        json.dumps(expected, indent=1, sort_keys=True) + "\n"
    )


def _messages(descriptor, prefix: str = ""):
    for msg in (
        descriptor.message_types_by_name.values() if prefix == "" else descriptor.nested_types
    ):
        name = prefix + msg.name
        yield name, msg
        yield from _messages(msg, name + ".")


def record_schema() -> None:
    """MindSpore's own descriptors (number, type, repeated, in a oneof) for the schema test."""
    from mindspore.train import anf_ir_pb2, checkpoint_pb2, summary_pb2

    schema: dict = {}
    for module in (summary_pb2, anf_ir_pb2, checkpoint_pb2):
        file_schema = schema[module.DESCRIPTOR.name] = {"messages": {}, "enums": {}}
        for name, msg in _messages(module.DESCRIPTOR):
            file_schema["messages"][name] = {
                f.name: [f.number, f.type, f.is_repeated, f.containing_oneof is not None]
                for f in msg.fields
            }
        for enum in module.DESCRIPTOR.enum_types_by_name.values():
            file_schema["enums"][enum.name] = {v.name: v.number for v in enum.values}
    (HERE / "mindspore-schema.json").write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")


def main() -> int:
    if "--record-only" not in sys.argv:
        for d in (RUN, EXTRA):
            if d.exists():
                shutil.rmtree(d)
        train()
        save_dtype_checkpoints()
    record_checkpoints()
    record_schema()
    return 0


if __name__ == "__main__":
    sys.exit(main())
