"""The package's callbacks inside RecModel.online_train: ModelCheckpoint (steps, seconds,
best-N on windowed metrics), TrainLineage (status, bad records), SIGTERM in a child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from trainledger.callbacks import checkpoint as checkpoint_module
from trainledger.callbacks.checkpoint import ModelCheckpoint
from trainledger.callbacks.lineage import TrainLineage
from trainledger.checkpoint import checkpoint_info, latest_checkpoint, load_checkpoint
from trainledger.checkpoint.config import CheckpointConfig
from trainledger.lineage.reader import read_lineage
from trainledger.run.callback import Callback, RunContext
from trainledger.run.rec_model import RecModel

REPO = Path(__file__).resolve().parents[2]


def _clicks(seed: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    while True:
        x = torch.randn(16, 4, generator=g)
        yield x, (x[:, 0] + 0.5 * torch.randn(16, generator=g) > 0).float()


class Squeeze(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).squeeze(-1)


def _model(**kw: Any) -> RecModel:
    torch.manual_seed(0)
    net = Squeeze()
    return RecModel(net, nn.BCEWithLogitsLoss(), torch.optim.SGD(net.parameters(), lr=0.1), **kw)


def _steps(directory: Path) -> list[int]:
    return sorted(checkpoint_info(p)["step"] for p in directory.glob("*.ckpt"))


def test_model_checkpoint_by_steps(tmp_path: Path) -> None:
    ckpt = ModelCheckpoint(
        "ctr", tmp_path, CheckpointConfig(save_checkpoint_steps=5, keep_checkpoint_max=10)
    )
    _model().online_train(_clicks(), callbacks=[ckpt], max_steps=17)
    assert _steps(tmp_path) == [5, 10, 15, 17]  # 17: the final save at train end
    assert latest_checkpoint(tmp_path, "ctr") == ckpt.latest_ckpt_file_name
    net = Squeeze()
    load_checkpoint(ckpt.latest_ckpt_file_name, net, strict_load=True)


def test_model_checkpoint_by_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimpleNamespace(now=1_000.0)
    monkeypatch.setattr(checkpoint_module, "time", SimpleNamespace(time=lambda: clock.now))

    class Tick(Callback):  # every step takes 0.4 s on the fake clock
        def on_train_step_begin(self, rc: RunContext) -> None:
            clock.now += 0.4

    ckpt = ModelCheckpoint(
        "ctr",
        tmp_path,
        CheckpointConfig(
            save_checkpoint_steps=0, save_checkpoint_seconds=1, keep_checkpoint_max=10
        ),
    )
    _model().online_train(_clicks(), callbacks=[Tick(), ckpt], max_steps=10)
    assert _steps(tmp_path) == [3, 6, 9, 10]


def test_best_n_checkpoints_ranked_by_a_windowed_metric(tmp_path: Path) -> None:
    ckpt = ModelCheckpoint(
        "ctr",
        tmp_path,
        CheckpointConfig(
            save_checkpoint_steps=4,
            keep_checkpoint_max=1,
            monitor="auc",
            mode="max",
            keep_best_max=2,
        ),
    )
    seen: dict[int, float] = {}

    class Watch(Callback):
        def on_train_step_end(self, rc: RunContext) -> None:
            p = rc.original_args()
            if p.window_metrics:
                seen[p.cur_step_num] = p.window_metrics["auc"]

    _model(metrics={"auc": "auc"}).online_train(
        _clicks(), callbacks=[Watch(), ckpt], max_steps=24, metric_window=4, metric_every=4
    )
    infos = [checkpoint_info(p) for p in tmp_path.glob("*.ckpt")]
    scored = {i["step"]: i["monitor"]["value"] for i in infos if "monitor" in i}
    for step, value in scored.items():
        if step in seen:
            assert value == pytest.approx(seen[step])  # the score is the windowed AUC
    best_two = sorted(seen.values(), reverse=True)[:2]
    kept = sorted((v for s, v in scored.items() if s in seen), reverse=True)
    assert kept[:2] == pytest.approx(best_two)


def test_train_lineage_inside_online_train(tmp_path: Path) -> None:
    ckpt = ModelCheckpoint("ctr", tmp_path / "ckpt", CheckpointConfig(save_checkpoint_steps=10))
    lineage = TrainLineage(str(tmp_path), user_defined_info={"stream": "clicks"})
    _model().online_train(_clicks(), callbacks=[ckpt, lineage], max_steps=12)
    record = read_lineage(tmp_path)
    assert record["run"]["status"] == "finished"  # max_steps is a planned end
    assert record["run"]["total_steps"] == 12
    assert record["hyper_parameters"]["optimizer"] == "SGD"
    assert "epoch" not in record["hyper_parameters"]  # unbounded: epoch_num is None
    assert record["user_defined"]["stream"] == "clicks"
    assert '"ckpt"' in record["model"]["path"]

    class Stop(Callback):
        def on_train_step_end(self, rc: RunContext) -> None:
            if rc.original_args().cur_step_num == 3:
                rc.request_stop()

    other = tmp_path / "stopped"
    _model().online_train(_clicks(), callbacks=[Stop(), TrainLineage(str(other))])
    assert read_lineage(other)["run"]["status"] == "stopped"


CHILD = textwrap.dedent(
    """
    import sys, torch
    from pathlib import Path
    from torch import nn
    from trainledger.callbacks.checkpoint import ModelCheckpoint
    from trainledger.callbacks.lineage import TrainLineage
    from trainledger.checkpoint.config import CheckpointConfig
    from trainledger.run.callback import Callback
    from trainledger.run.rec_model import RecModel

    run_dir = Path(sys.argv[1])

    def stream():
        while True:
            x = torch.randn(8, 4)
            yield x, x.sum(1, keepdim=True)

    class Ready(Callback):
        def on_train_step_end(self, rc):
            if rc.original_args().cur_step_num == 20:
                (run_dir / "ready").touch()

    net = nn.Linear(4, 1)
    model = RecModel(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.01))
    ckpt = ModelCheckpoint("online", run_dir / "ckpt",
                           CheckpointConfig(save_checkpoint_steps=10**9))
    model.online_train(stream(), callbacks=[Ready(), ckpt, TrainLineage(str(run_dir))])
    print("clean exit", flush=True)
    """
)


@pytest.mark.slow
def test_sigterm_in_a_child_process_leaves_a_final_checkpoint_and_stopped_lineage(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        for _ in range(600):  # bounded wait for the child to be training
            if (tmp_path / "ready").exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert (tmp_path / "ready").exists(), proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "clean exit" in stdout
    final = latest_checkpoint(tmp_path / "ckpt", "online")
    assert final is not None  # only the final save can exist (steps = 10**9)
    assert checkpoint_info(final)["step"] >= 20
    load_checkpoint(final, nn.Linear(4, 1), strict_load=True)
    record = read_lineage(tmp_path)
    assert record["run"]["status"] == "stopped"
    assert record["run"]["error"] == "signal"


def test_summary_collector_inside_online_train(tmp_path: Path) -> None:
    from trainledger.callbacks.summary_collector import SummaryCollector
    from trainledger.summary.reader import read_scalars

    collector = SummaryCollector(
        tmp_path, collect_freq=5, collect_specified_data={"collect_input_data": False}
    )
    ends: dict[str, float] = {}

    class Stage(Callback):  # how a user puts the windowed metrics on every collected step
        def on_train_step_end(self, rc: RunContext) -> None:
            for name, value in rc.original_args().window_metrics.items():
                collector.add_value("scalar", f"window/{name}", value)

        def on_train_end(self, rc: RunContext) -> None:
            ends.update(rc.original_args().window_metrics)

    _model(metrics={"auc": "auc", "logloss": "loss"}).online_train(
        _clicks(),
        callbacks=[Stage(), collector],
        dataset_sink_mode=False,
        max_steps=12,
        metric_window=4,
        metric_every=4,
    )
    scalars = read_scalars(tmp_path)
    assert scalars["loss/auto"][0].tolist() == [1, 5, 10]
    assert scalars["learning_rate/auto"][0].tolist() == [1, 5, 10]
    assert scalars["window/auc"][0].tolist() == [5, 10]  # computed at 4 and 8, staged, collected
    # at the end of the pass (here: of training) the windowed metrics are eval results
    assert scalars["eval/auc"][0].tolist() == [12]
    assert scalars["eval/auc"][2][0] == pytest.approx(ends["auc"], rel=1e-6)
    assert scalars["eval/logloss"][2][0] == pytest.approx(ends["logloss"], rel=1e-6)


def test_bad_records_of_a_stream_reach_the_run_lineage(tmp_path: Path) -> None:
    from trainledger.data import QueueStream

    def collate(records: list[dict[str, Any]]) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.tensor([r["x"] for r in records], dtype=torch.float32)
        return x, torch.tensor([float(r["y"]) for r in records])

    stream = QueueStream(64, batch_size=4, collate_fn=collate)
    good = [{"x": [0.1, 0.2, 0.3, 0.4], "y": i % 2} for i in range(16)]
    bad = [{"x": "not numbers", "y": 1}, {"y": 0}, {"x": [1.0], "y": 1}]
    with pytest.warns(Warning):
        for record in good[:6] + bad + good[6:]:
            stream.put(record)
        stream.end()
        _model().online_train(stream, callbacks=[TrainLineage(str(tmp_path))])
    run = read_lineage(tmp_path)["run"]
    assert stream.bad_records == 3
    assert run["bad_records"] == 3
    assert run["status"] == "finished"


def test_summary_collector_in_sink_mode_collects_per_sink_unit(tmp_path: Path) -> None:
    from trainledger.callbacks.summary_collector import SummaryCollector
    from trainledger.summary.reader import read_scalars

    model = _model(metrics={"auc", "loss"})
    collector = SummaryCollector(
        str(tmp_path),
        collect_freq=2,
        collect_specified_data={
            "collect_train_lineage": False,
            "collect_eval_lineage": False,
            "collect_dataset_graph": False,
        },
    )
    # sink mode, 3 steps per unit, 12 units: hooks fire at steps 3, 6, ..., 36;
    # the collector takes unit 1 (first), then every 2nd unit: 2, 4, ..., 12
    model.online_train(
        _clicks(),
        callbacks=[collector],
        dataset_sink_mode=True,
        sink_size=3,
        max_steps=36,
        metric_window=8,
        metric_every=3,
    )
    scalars = read_scalars(tmp_path)
    steps = scalars["loss/auto"][0].tolist()
    assert steps == [3, 6, 12, 18, 24, 30, 36]
    window_steps, _, auc = scalars["window/auc"]
    assert window_steps.tolist() == steps
    assert all(0.0 <= v <= 1.0 for v in auc.tolist())


def test_a_failing_step_end_names_the_callback_and_the_others_still_get_it() -> None:
    """online_train's step loop calls step-end hooks itself (``functions``/``failed_in``), with
    ``call_all``'s semantics: every later callback gets the hook, then the error names the
    callback that failed, and the end hooks still run."""
    from trainledger.errors import CallbackError

    class Boom(Callback):
        def on_train_step_end(self, rc: RunContext) -> None:
            if rc.original_args().cur_step_num == 3:
                raise RuntimeError("boom")

    class Seen(Callback):
        def __init__(self) -> None:
            self.steps: list[int] = []
            self.ended = False

        def on_train_step_end(self, rc: RunContext) -> None:
            self.steps.append(rc.original_args().cur_step_num)

        def on_train_end(self, rc: RunContext) -> None:
            self.ended = True

    seen = Seen()
    with pytest.raises(CallbackError, match="Boom.on_train_step_end") as info:
        _model().online_train(_clicks(), callbacks=[Boom(), seen], max_steps=10)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert seen.steps == [1, 2, 3] and seen.ended
