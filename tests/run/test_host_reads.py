"""No host read of a device value between records, checked without a GPU (issue "GPU-first",
item 6): the network, batches and losses live on ``tests/run/fake_device.py``'s device, which
is not the CPU, so the code takes its device branch; every ``item()``, ``tolist()`` and blocking
copy to the host is counted with the hook (phase) it happened in."""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.run.fake_device import READS, FakeDeviceTensor, move_module, on_device
from trainledger import (
    CheckpointConfig,
    EarlyStopping,
    LossMonitor,
    ModelCheckpoint,
    SummaryCollector,
    TimeMonitor,
    TrainLineage,
)
from trainledger.errors import CallbackError
from trainledger.run import Callback, LossReadout, Model, RunContext
from trainledger.run.loss_readout import LAG
from trainledger.summary.reader import read_histograms, read_scalars

STEPS = 20  # a epoch's steps
RECORD_EVERY = 10


class Phases(Callback):
    """First in the list: names the hook that every later read happens in."""

    def on_train_begin(self, run_context: RunContext) -> None:
        READS.phase = ("begin",)

    def on_train_step_begin(self, run_context: RunContext) -> None:
        READS.phase = ("step", run_context.original_args().cur_step_num)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        READS.phase = ("epoch_end",)

    def on_train_end(self, run_context: RunContext) -> None:
        READS.phase = ("end",)

    def on_eval_begin(self, run_context: RunContext) -> None:
        READS.phase = ("eval",)


@pytest.fixture(autouse=True)
def _fresh_reads() -> Any:
    READS.reads.clear()
    READS.phase = None
    yield
    READS.reads.clear()


def _run(device: bool, tmp: Path, *, fit: bool = False, seed: int = 0) -> Model:
    """Two epochs of a small classifier with every default callback; on the fake device or
    the CPU, from the same seed."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    gen = torch.Generator().manual_seed(seed)
    data = [(torch.randn(5, 4, generator=gen), torch.randint(0, 3, (5,), generator=gen))]
    data += [(torch.randn(5, 4, generator=gen), torch.randint(0, 3, (5,), generator=gen))]
    data = [data[i % 2] for i in range(STEPS)]
    if device:
        net = move_module(net)
        data = [on_device(batch) for batch in data]
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    model = Model(net, torch.nn.CrossEntropyLoss(), opt, metrics={"accuracy", "loss"})
    callbacks = [
        Phases(),
        LossMonitor(RECORD_EVERY),
        TimeMonitor(),
        SummaryCollector(
            tmp / "summary",
            collect_freq=RECORD_EVERY,
            collect_specified_data={
                "collect_landscape": None  # weight snapshots are saves, at their own steps
            },
        ),
        TrainLineage(tmp / "summary"),
        ModelCheckpoint(
            directory=tmp / "ckpt",
            config=CheckpointConfig(save_checkpoint_steps=10_000, async_save=True),
        ),
    ]
    if fit:
        callbacks.append(EarlyStopping(monitor="accuracy", patience=5))
        model.fit(2, data, data[:4], callbacks=callbacks)
    else:
        model.train(2, data, callbacks=callbacks)
    return model


def _between_records() -> list[tuple[Any, str]]:
    """Reads at steps that are not a record (the collector's first step and every
    ``RECORD_EVERY``-th step, where LossMonitor prints too)."""
    return [
        (phase, what)
        for phase, what in READS.reads
        if phase is None or (phase[0] == "step" and phase[1] != 1 and phase[1] % RECORD_EVERY != 0)
    ]


def test_default_callbacks_read_no_device_value_between_records(tmp_path, capsys):
    _run(True, tmp_path / "device")
    assert _between_records() == []
    # train begin: one host copy of each of the network's 4 tensors (their digests, for the
    # run's family), shared by the two lineage writers
    assert sum(phase == ("begin",) for phase, _ in READS.reads) <= 4
    per_phase = collections.Counter(phase for phase, _ in READS.reads)
    # a record reads the loss and the histograms in one batched copy (one dtype)
    assert max(n for phase, n in per_phase.items() if phase[0] == "step") == 1
    device_out = capsys.readouterr().out
    _run(False, tmp_path / "cpu")
    cpu_out = capsys.readouterr().out

    # the same losses, printed and recorded, as the same run on the CPU
    def printed(out: str) -> list[float]:
        return [float(v) for v in re.findall(r"loss is (\S+)", out)]

    assert len(printed(device_out)) == 4
    np.testing.assert_allclose(printed(device_out), printed(cpu_out), rtol=1e-6)
    ours, theirs = (
        read_scalars(tmp_path / "device" / "summary"),
        read_scalars(tmp_path / "cpu" / "summary"),
    )
    assert sorted(ours) == sorted(theirs)
    for tag in theirs:
        np.testing.assert_array_equal(ours[tag][0], theirs[tag][0])
        np.testing.assert_allclose(ours[tag][2], theirs[tag][2], rtol=1e-6, err_msg=tag)  # values
    # the parameters' histograms, counted on the device, are the CPU run's
    ours_h = read_histograms(tmp_path / "device" / "summary")
    theirs_h = read_histograms(tmp_path / "cpu" / "summary")
    assert sorted(ours_h) == sorted(theirs_h) and len(theirs_h) == 4
    for tag, events in theirs_h.items():
        assert [e.step for e in ours_h[tag]] == [e.step for e in events] == [1, 10, 20, 30, 40]
        for mine, cpu in zip(ours_h[tag], events, strict=True):
            np.testing.assert_array_equal(mine.counts, cpu.counts)
            np.testing.assert_allclose([mine.min, mine.max, mine.sum], [cpu.min, cpu.max, cpu.sum])


def test_the_guard_sees_a_callback_that_reads_every_step(tmp_path, monkeypatch):
    """Without the readout, LossMonitor reads each step's loss itself: the count finds it."""
    monkeypatch.setattr(LossReadout, "for_device", staticmethod(lambda device: None))
    _run(True, tmp_path)
    steps = {phase[1] for phase, _ in _between_records()}
    assert steps == {n for n in range(2, 2 * STEPS + 1) if n % RECORD_EVERY}


def test_evaluation_metrics_read_their_sums_once(tmp_path):
    """fit's evaluations: Accuracy and Loss sum on the device and read once each in eval(),
    not per batch (four batches); MAE and MSE too; the values equal the CPU's."""
    device_model = _run(True, tmp_path / "device", fit=True)
    eval_reads = [what for phase, what in READS.reads if phase == ("eval",)]
    assert len(eval_reads) == 2 * 2  # two evaluations, two metrics
    assert _between_records() == []
    cpu_model = _run(False, tmp_path / "cpu", fit=True)
    gen = torch.Generator().manual_seed(5)
    batches = [
        (torch.randn(5, 4, generator=gen), torch.randint(0, 3, (5,), generator=gen))
        for _ in range(4)
    ]
    cpu = cpu_model.eval(batches)
    READS.reads.clear()
    device = device_model.eval([on_device(b) for b in batches])
    assert len(READS.reads) == 2
    assert set(device) == {"accuracy", "loss"}
    for name, value in cpu.items():
        assert device[name] == pytest.approx(value, rel=1e-6)

    net = torch.nn.Linear(4, 2)
    regression = [(torch.randn(6, 4, generator=gen), torch.randn(6, 2, generator=gen))] * 3
    cpu = Model(net, torch.nn.MSELoss(), metrics={"mae", "mse", "loss"}).eval(regression)
    READS.reads.clear()
    device = Model(move_module(net), torch.nn.MSELoss(), metrics={"mae", "mse", "loss"}).eval(
        [on_device(b) for b in regression]
    )
    assert len(READS.reads) == 3
    for name, value in cpu.items():
        assert device[name] == pytest.approx(value, rel=1e-6)


class _NanFrom:
    """A loss_fn whose loss is NaN from its ``bad``-th call on."""

    def __init__(self, bad: int) -> None:
        self.calls = 0
        self.bad = bad

    def __call__(self, y_pred: Any, y: Any) -> Any:
        self.calls += 1
        loss = torch.nn.functional.mse_loss(y_pred, y)
        return loss * float("nan") if self.calls >= self.bad else loss


class _Steps(Callback):
    def __init__(self) -> None:
        self.last = 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        self.last = run_context.original_args().cur_step_num


@pytest.mark.parametrize("device", [True, False], ids=["device", "cpu"])
def test_a_non_finite_loss_stops_training_and_keeps_no_checkpoint_after_it(tmp_path, device):
    bad = 7
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2)
    data = [(torch.randn(3, 4), torch.randn(3, 2)) for _ in range(STEPS)]
    if device:
        net = move_module(net)
        data = [on_device(b) for b in data]
    steps = _Steps()
    checkpoints = ModelCheckpoint(
        directory=tmp_path,
        config=CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=100, async_save=True),
    )
    model = Model(net, _NanFrom(bad), torch.optim.SGD(net.parameters(), lr=0.1))
    with pytest.raises(CallbackError) as info:
        model.train(1, data, callbacks=[steps, checkpoints, LossMonitor(100)])
    message = str(info.value.__cause__ or info.value)
    assert f"step: {bad}." in message and "Invalid loss nan" in message
    if device:  # read LAG steps late, never later
        assert bad <= steps.last <= bad + LAG
    else:  # the CPU keeps MindSpore's same-step stop
        assert steps.last == bad
    kept = sorted(int(p.stem.rsplit("_", 1)[1]) for p in tmp_path.glob("*.ckpt"))
    assert kept == list(range(1, bad))
    assert checkpoints.latest_ckpt_file_name is not None
    assert checkpoints.latest_ckpt_file_name.endswith(f"_{bad - 1}.ckpt")


def test_the_readout_reads_each_loss_lag_steps_late():
    readout = LossReadout(torch.device("meta"))
    for step, value in enumerate([0.5, 0.25, 0.125, float("inf"), 1.0], start=1):
        readout.push(step, FakeDeviceTensor(torch.tensor(value)))
        read = readout.latest[0] if readout.latest else 0
        assert read == max(step - LAG, 0)
    assert readout.first_nonfinite is None  # step 4 not read yet
    assert readout.value_at(5) == 1.0
    assert readout.first_nonfinite == (4, float("inf"))
    readout.push(6, (FakeDeviceTensor(torch.tensor([1.0, 3.0])), "logits"))  # mean of the first
    assert readout.value_at(6) == 2.0
    readout.push(7, {"no": "loss"})  # nothing to read: ignored
    assert readout.value_at(7) is None
    assert READS.reads == []
    assert LossReadout.for_device(torch.device("cpu")) is None


def _read_once_as_on_the_cpu(cpu: Any, device: Any, batches: list[Any]) -> None:
    """``device`` given the batches on a device reads nothing until eval(), then once, and
    gives what ``cpu`` gives them on the CPU."""
    for x, y in batches:
        cpu.update(x, y)
    READS.reads.clear()
    for batch in batches:
        device.update(*on_device(batch))
    assert READS.reads == []
    ours, theirs = device.eval(), cpu.eval()
    assert len(READS.reads) == 1
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("average", ["macro", "micro", None])
def test_precision_recall_f1_count_on_the_device_and_read_once(average: str | None) -> None:
    """(N, C) device batches are counted per class on the device: no read per batch, one in
    eval(), the same values as the CPU's; a label that is not a class is named, not
    miscounted."""
    from trainledger.run.metrics import F1, Precision, Recall

    gen = torch.Generator().manual_seed(0)
    batches = [
        (torch.randn(7, 4, generator=gen), torch.randint(0, 4, (7,), generator=gen))
        for _ in range(5)
    ]
    for cls in (Precision, Recall, F1):
        _read_once_as_on_the_cpu(cls(average), cls(average), batches)
    outside = Precision()
    outside.update(*on_device((torch.randn(3, 4), torch.tensor([0, 5, 2]))))
    with pytest.raises(ValueError, match=r"labels in \[0, 4\).*1 outside it, the largest 5"):
        outside.eval()


def test_a_batch_with_other_classes_or_predicted_labels_is_counted_on_the_host() -> None:
    from trainledger.run.metrics import Recall

    gen = torch.Generator().manual_seed(1)
    wide = (torch.randn(6, 3, generator=gen), torch.randint(0, 3, (6,), generator=gen))
    wider = (torch.randn(6, 5, generator=gen), torch.randint(0, 5, (6,), generator=gen))
    binary = (torch.rand(6, generator=gen), torch.randint(0, 2, (6,), generator=gen))
    labels = (torch.randint(0, 4, (6,), generator=gen), torch.randint(0, 4, (6,), generator=gen))
    cpu, device = Recall(None), Recall(None)
    for batch in (wide, wider, binary, labels):
        cpu.update(*batch)
        device.update(*on_device(batch))
    np.testing.assert_array_equal(device.eval(), cpu.eval())


@pytest.mark.parametrize("shape", [(9,), (9, 1)])
def test_binary_scores_count_on_the_device_and_read_once(shape: tuple[int, ...]) -> None:
    """A binary classifier's float scores ((N,) or (N, 1), thresholded at 0.5) are two
    classes counted on the device: no read per batch, one in eval(), the CPU's values; a
    label that is not 0 or 1 is named, not counted as a third class."""
    from trainledger.run.metrics import F1, Precision, Recall

    gen = torch.Generator().manual_seed(3)
    batches = [
        (torch.rand(shape, generator=gen), torch.randint(0, 2, (9,), generator=gen))
        for _ in range(4)
    ]
    for cls, average in ((Precision, "binary"), (Recall, None), (F1, "macro")):
        _read_once_as_on_the_cpu(cls(average), cls(average), batches)
    third = Recall()
    third.update(*on_device((torch.rand(shape), torch.tensor([0, 1, 2, 0, 1, 1, 0, 0, 1]))))
    with pytest.raises(ValueError, match=r"labels in \[0, 2\).*1 outside it, the largest 2"):
        third.eval()


def test_rocauc_keeps_device_batches_there_and_reads_them_at_eval() -> None:
    from trainledger.run.metrics import ROCAUC

    gen = torch.Generator().manual_seed(2)
    multi = [
        (torch.randn(8, 3, generator=gen), torch.randint(0, 3, (8,), generator=gen))
        for _ in range(4)
    ]
    binary = [(torch.rand(8, generator=gen), torch.randint(0, 2, (8,), generator=gen))] * 3
    for batches in (multi, binary):
        cpu, device = ROCAUC(), ROCAUC()
        READS.reads.clear()
        for batch in batches:
            cpu.update(*batch)
            device.update(*on_device(batch))
        assert READS.reads == []
        assert device.eval() == pytest.approx(cpu.eval(), rel=1e-12)
        assert len(READS.reads) == 2  # the scores and the labels, once each
