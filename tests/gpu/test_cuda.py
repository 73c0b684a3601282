"""The training host, the built-in callbacks, landscapes and checkpoints on a CUDA device:
the same files and values as on the CPU. Run by ``tools/gpu-check.sh`` (skipped without CUDA)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from trainledger import (
    Callback,
    CheckpointConfig,
    DynamicLossScaleManager,
    EarlyStopping,
    EvalLineage,
    FixedLossScaleManager,
    LossMonitor,
    Model,
    ModelCheckpoint,
    RunContext,
    SummaryCollector,
    SummaryLandscape,
    TimeMonitor,
    TrainLineage,
    load_checkpoint,
    save_checkpoint,
)
from trainledger.callbacks.tensor_buckets import DeviceBuckets, cpu_buckets
from trainledger.checkpoint import wait_async_save
from trainledger.query import get_summary_lineage
from trainledger.summary import read_landscapes, read_scalars


def _data(n: int = 96, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 8, 8, generator=g)
    y = (x.mean(dim=(1, 2, 3)) > 0).long()
    return [(x[i : i + 16], y[i : i + 16]) for i in range(0, n, 16)]


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(8 * 8 * 8, 2),
    )


def _fit(device: str, run: Path, amp_level: str = "O0") -> tuple[nn.Module, dict[str, Any]]:
    net = _net().to(device)
    model = Model(
        net,
        nn.CrossEntropyLoss(),
        torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9),
        metrics={"accuracy", "loss"},
        amp_level=amp_level,
    )
    data = [(x.to(device), y.to(device)) for x, y in _data()]
    callbacks = [
        LossMonitor(2),
        TimeMonitor(),
        SummaryCollector(run, collect_freq=1, collect_specified_data={"collect_landscape": None}),
        TrainLineage(run),
        ModelCheckpoint("m", run, CheckpointConfig(save_checkpoint_steps=6, async_save=True)),
        EarlyStopping(monitor="loss", patience=100),
    ]
    model.fit(3, data, data, callbacks=callbacks)
    result = model.eval(data, callbacks=[EvalLineage(run)])
    return net, result


@pytest.fixture
def exact_float32() -> Any:
    """TF32 off for the comparison with the CPU (cuDNN convolutions use it by default)."""
    before = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before


def test_fit_and_eval_with_every_builtin_callback_equal_the_cpu_run(
    tmp_path: Path, exact_float32: Any
) -> None:
    gpu_net, gpu = _fit("cuda", tmp_path / "gpu")
    cpu_net, cpu = _fit("cpu", tmp_path / "cpu")
    for (name, a), (_, b) in zip(
        gpu_net.state_dict().items(), cpu_net.state_dict().items(), strict=True
    ):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-3, atol=1e-3, msg=name)
    assert gpu["accuracy"] == pytest.approx(cpu["accuracy"], abs=1.5 / 96)  # one sample
    assert gpu["loss"] == pytest.approx(cpu["loss"], rel=1e-3)
    ours, theirs = read_scalars(tmp_path / "gpu"), read_scalars(tmp_path / "cpu")
    assert set(ours) == set(theirs)
    np.testing.assert_allclose(ours["loss/auto"][2], theirs["loss/auto"][2], rtol=1e-3)
    lineage = get_summary_lineage(str(tmp_path / "gpu"))
    assert lineage["run"]["status"] == "finished"
    assert lineage["metric"]["accuracy"] == pytest.approx(gpu["accuracy"])
    latest = sorted((tmp_path / "gpu").glob("m-*.ckpt"))[-1]
    fresh = _net().cuda()
    load_checkpoint(latest, fresh)
    torch.testing.assert_close(fresh.state_dict(), gpu_net.state_dict())


@pytest.mark.parametrize("level", ["O1", "O3"])
def test_mixed_precision_trains_on_cuda(tmp_path: Path, level: str) -> None:
    net, result = _fit("cuda", tmp_path / level, amp_level=level)
    assert all(torch.isfinite(p).all() for p in net.parameters())
    assert 0.0 <= result["accuracy"] <= 1.0 and np.isfinite(result["loss"])


@pytest.mark.parametrize("device_ids", [None, [0]], ids=["model-device", "device_ids"])
def test_landscapes_are_made_on_cuda(tmp_path: Path, device_ids: list[int] | None) -> None:
    run = tmp_path / "run"
    net = _net().cuda()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.05))
    data = [(x.cuda(), y.cuda()) for x, y in _data()]
    spec = {
        "landscape_size": 5,
        "unit": "step",
        "create_landscape": {"train": True, "result": True},
        "num_samples": 32,
        "intervals": [[2, 4, 6, 8]],
    }
    model.train(2, data, callbacks=[SummaryCollector(run, collect_specified_data={
        "collect_landscape": spec})])  # fmt: skip
    made = SummaryLandscape(run).gen_landscapes_with_multi_process(
        lambda: (model, net, data, {"loss"}), device_ids=device_ids
    )
    assert [m["kind"] for m in made] == ["train", "result"]
    for item in read_landscapes(run):
        assert np.isfinite(np.asarray(item["z"], dtype=float)).all()


def test_async_save_holds_the_values_at_call_time_and_loads_onto_the_device(
    tmp_path: Path,
) -> None:
    torch.manual_seed(0)
    state = {f"w{i}": torch.randn(512, 1024, device="cuda") for i in range(8)}
    expected = {k: v.clone() for k, v in state.items()}
    path = tmp_path / "w.ckpt"
    save_checkpoint(state, str(path), async_save=True)
    for tensor in state.values():  # right after the call returns, training changes them
        tensor.add_(1.0)
    wait_async_save()
    loaded = load_checkpoint(path, device="cuda")
    for name, value in expected.items():
        assert loaded[name].device.type == "cuda"
        torch.testing.assert_close(loaded[name], value)
    save_checkpoint(state, str(tmp_path / "sync.ckpt"))
    again = load_checkpoint(tmp_path / "sync.ckpt", device=torch.device("cuda", 0))
    torch.testing.assert_close(again["w0"], state["w0"])


class _SyncGuard(Callback):
    """First and last in the list: between records, any device sync raises (torch's sync
    debug mode "error"), in the step itself and in every callback's step hooks."""

    def __init__(self, first: bool, every: int) -> None:
        self.first, self.every = first, every

    def on_train_step_begin(self, run_context: RunContext) -> None:
        step = run_context.original_args().cur_step_num
        if self.first and step > 1 and step % self.every:
            torch.cuda.set_sync_debug_mode("error")

    def on_train_step_end(self, run_context: RunContext) -> None:
        if not self.first:
            torch.cuda.set_sync_debug_mode("default")


@pytest.mark.parametrize("level", ["O0", "O3"])
def test_no_callback_syncs_the_device_between_records(tmp_path: Path, level: str) -> None:
    net = _net().cuda()
    model = Model(
        net,
        nn.CrossEntropyLoss(),
        torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9),
        amp_level=level,
    )
    data = [(x.cuda(), y.cuda()) for x, y in _data()] * 5  # 30 steps an epoch
    every = 10
    callbacks = [
        _SyncGuard(True, every),
        LossMonitor(every),
        TimeMonitor(),
        SummaryCollector(
            tmp_path, collect_freq=every, collect_specified_data={"collect_landscape": None}
        ),
        TrainLineage(tmp_path),
        ModelCheckpoint(
            "m", tmp_path, CheckpointConfig(save_checkpoint_steps=1000, async_save=True)
        ),
        _SyncGuard(False, every),
    ]
    try:
        model.train(2, data, callbacks=callbacks)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert read_scalars(tmp_path)["loss/auto"][0].tolist() == [1, 10, 20, 30, 40, 50, 60]


def test_loss_scale_managers_skip_and_rescale_on_cuda_as_on_the_cpu() -> None:
    from tests.run.test_loss_scale import OVERFLOW_AT, _Explodes

    def run(device: str, manager: Any) -> list[tuple[bool, float]]:
        torch.manual_seed(0)
        net = nn.Linear(3, 1).to(device)
        data = [(torch.randn(4, 3).to(device), torch.randn(4, 1).to(device)) for _ in range(6)]
        rows: list[tuple[bool, float]] = []

        class Rows(Callback):
            def on_train_step_end(self, run_context: RunContext) -> None:
                _, overflow, scale = run_context.original_args().net_outputs
                rows.append((bool(overflow), float(scale)))  # a test may sync

        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        Model(net, _Explodes(), opt, amp_level="O2", loss_scale_manager=manager).train(
            1, data, callbacks=[Rows()]
        )
        return rows

    for make in (
        lambda: DynamicLossScaleManager(2**10, 4, 2),
        lambda: FixedLossScaleManager(256),
    ):
        cuda, cpu = run("cuda", make()), run("cpu", make())
        assert [r[0] for r in cuda] == [i + 1 == OVERFLOW_AT for i in range(6)]
        assert cuda == cpu


def test_device_stats_are_collected_on_cuda(tmp_path: Path) -> None:
    net = _net().cuda()
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.05))
    data = [(x.cuda(), y.cuda()) for x, y in _data()]
    spec = {"collect_landscape": None, "collect_device_stats": True}
    model.train(1, data, callbacks=[SummaryCollector(tmp_path, collect_freq=2,
                                                     collect_specified_data=spec)])  # fmt: skip
    scalars = read_scalars(tmp_path)
    steps, _, allocated = scalars["device/memory_allocated_mib"]
    peak = scalars["device/max_memory_allocated_mib"][2]
    assert steps.tolist() == [1, 2, 4, 6]  # the first step, then every collect_freq-th
    assert (allocated > 0).all() and (peak >= allocated).all()
    assert (scalars["device/memory_reserved_mib"][2] >= allocated).all()


def test_histograms_are_counted_on_cuda_as_on_the_cpu_without_a_sync() -> None:
    g = torch.Generator().manual_seed(0)
    tensors = [
        torch.randn(256, 512, generator=g),
        torch.tensor([1.0, float("nan"), 2.0, float("inf")]),
        torch.full((7,), 3.0),
        torch.arange(-5, 17).float(),
    ]
    maker = DeviceBuckets(30)
    on_gpu = [t.cuda() for t in tensors]

    def check(packed: torch.Tensor) -> None:
        host = [t.cpu() for t in on_gpu]
        for t, ours in zip(host, maker.unpack(packed.cpu()), strict=True):
            theirs = cpu_buckets(t, 30)
            assert ours.counts == theirs.counts and ours.limits == theirs.limits
            assert (ours.min, ours.max, ours.num) == (theirs.min, theirs.max, theirs.num)
            assert ours.sum == pytest.approx(theirs.sum)
            assert ours.sum_squares == pytest.approx(theirs.sum_squares)

    check(maker.count(on_gpu))  # the first count captures the CUDA graph
    assert [v is not None for v in maker._graphs.values()] == [True]
    for t in on_gpu:  # an optimizer's in-place update: the replay reads the new values
        t.mul_(-1.5).add_(0.25)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        packed = maker.count(on_gpu)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    check(packed)
    assert len(maker._graphs) == 1
    on_gpu[0] = on_gpu[0].t()  # not contiguous: counted eagerly, the same buckets
    check(maker.count(on_gpu))
    assert len(maker._graphs) == 1


@pytest.mark.parametrize("chunk", [1 << 16, 1 << 30], ids=["threads, many chunks", "one chunk"])
def test_a_load_onto_the_device_reads_through_pinned_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """``load_checkpoint(device=)`` reads straight to the GPU (``DeviceTarget``): with
    threads and many chunks (each thread's two pinned buffers in turn), the same values as a
    load to the host; a flipped bit is still refused."""
    import trainledger.checkpoint.format as fmt
    from trainledger.errors import CheckpointFormatError

    monkeypatch.setattr(fmt, "_PARALLEL_READ_MIN", 1 << 16)
    monkeypatch.setattr(fmt, "_READ_CHUNK", chunk)
    g = torch.Generator().manual_seed(0)
    state = {
        "a": torch.randn(1000, 333, generator=g),
        "b": torch.randn(77, generator=g).to(torch.bfloat16),
        "c": torch.arange(12345, dtype=torch.int64),
    }
    path = tmp_path / "m.ckpt"
    save_checkpoint(state, str(path))
    loaded = load_checkpoint(path, device="cuda")
    for name, value in state.items():
        assert loaded[name].device.type == "cuda"
        assert torch.equal(loaded[name].cpu(), value)
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0x01
    (tmp_path / "bad.ckpt").write_bytes(bytes(raw))
    with pytest.raises(CheckpointFormatError, match="crc32c"):
        load_checkpoint(tmp_path / "bad.ckpt", device="cuda")
