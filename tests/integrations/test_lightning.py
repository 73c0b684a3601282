"""``TrainledgerCallback`` in real Lightning runs: the native lineage, checkpoints, failures,
and Lightning's own ``fast_dev_run`` idiom with the callback added."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tests.integrations._common import (
    EPOCHS,
    HPARAMS,
    MLP,
    assert_same_lineage,
    loaders,
    native_run,
)
from trainledger.query import get_summary_lineage
from trainledger.summary import read_scalars

pl = pytest.importorskip("lightning.pytorch")

from trainledger.integrations.lightning import TrainledgerCallback  # noqa: E402


class LitMLP(pl.LightningModule):
    def __init__(
        self, lr: float, hidden: int, batch_size: int, fail_at: int = 0, error: type = RuntimeError
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["fail_at", "error"])
        self.error = error
        self.net = MLP(hidden)
        self.loss_fn = nn.CrossEntropyLoss()
        self.fail_at = fail_at

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        if self.fail_at and self.global_step == self.fail_at:
            raise self.error("nan loss")
        x, y = batch
        loss = self.loss_fn(self.net(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        self.log("accuracy", (self.net(x).argmax(1) == y).float().mean())

    def test_step(self, batch: Any, batch_idx: int) -> None:
        self.validation_step(batch, batch_idx)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def _trainer(**kwargs: Any) -> Any:
    defaults: dict[str, Any] = dict(
        max_epochs=EPOCHS,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        log_every_n_steps=1,
        accelerator="cpu",
    )
    return pl.Trainer(**{**defaults, **kwargs})


def test_lightning_run_gives_the_native_lineage(tmp_path: Path) -> None:
    native = native_run(tmp_path / "native")
    torch.manual_seed(0)
    train, valid = loaders()
    trainer = _trainer(callbacks=[TrainledgerCallback(tmp_path / "lit")])
    trainer.fit(LitMLP(**HPARAMS), train, valid)
    ours = get_summary_lineage(str(tmp_path / "lit"))
    assert_same_lineage(ours, native)
    assert ours["user_defined"] == native["user_defined"] == HPARAMS
    assert ours["run"]["total_steps"] == 12 and ours["run"]["epochs_done"] == EPOCHS
    scalars = read_scalars(tmp_path / "lit")
    assert list(scalars["loss"][0]) == list(range(1, 13))
    assert len(scalars["eval/accuracy"][0]) == EPOCHS  # no sanity-check value


def test_model_checkpoint_best_file_is_the_model(tmp_path: Path) -> None:
    train, valid = loaders()
    ckpt = pl.callbacks.ModelCheckpoint(
        dirpath=tmp_path / "ckpt", monitor="accuracy", mode="max", save_top_k=1
    )
    trainer = _trainer(
        callbacks=[TrainledgerCallback(tmp_path / "run"), ckpt], enable_checkpointing=True
    )
    trainer.fit(LitMLP(**HPARAMS), train, valid)
    lineage = get_summary_lineage(str(tmp_path / "run"))
    best = os.path.abspath(ckpt.best_model_path)
    assert json.loads(lineage["model"]["path"]) == {"ckpt": best}
    assert lineage["model"]["size"] == os.path.getsize(best)
    assert {"path": best, "size": os.path.getsize(best)} in lineage["run"]["checkpoints"]


def test_failure_is_recorded_and_raised(tmp_path: Path) -> None:
    train, valid = loaders()
    trainer = _trainer(callbacks=[TrainledgerCallback(tmp_path)])
    with pytest.raises(RuntimeError, match="nan loss"):
        trainer.fit(LitMLP(**HPARAMS, fail_at=3), train, valid)
    run = get_summary_lineage(str(tmp_path))["run"]
    assert run["status"] == "failed" and "nan loss" in run["error"]
    assert run["total_steps"] == 3


def test_fast_dev_run_and_test_work_unchanged(tmp_path: Path) -> None:
    train, valid = loaders()
    model = LitMLP(**HPARAMS)
    trainer = pl.Trainer(fast_dev_run=True, callbacks=[TrainledgerCallback(tmp_path)])
    trainer.fit(model, train, valid)
    (result,) = trainer.test(model, valid)
    assert set(result) == {"accuracy"}
    lineage = get_summary_lineage(str(tmp_path))
    assert lineage["run"]["status"] == "finished" and lineage["run"]["total_steps"] == 1
    assert lineage["metric"] == {"accuracy": pytest.approx(result["accuracy"])}
    assert lineage["valid_dataset"] == {"valid_dataset_size": 16}


def test_ctrl_c_is_recorded_as_stopped(tmp_path: Path) -> None:
    train, valid = loaders()
    trainer = _trainer(callbacks=[TrainledgerCallback(tmp_path)])
    handler = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit):  # Lightning's graceful shutdown exits
            trainer.fit(LitMLP(**HPARAMS, fail_at=2, error=KeyboardInterrupt), train, valid)
    finally:
        signal.signal(signal.SIGINT, handler)  # Lightning ignores SIGINT from then on
    run = get_summary_lineage(str(tmp_path))["run"]
    assert run["status"] == "stopped" and run["total_steps"] == 2


def test_only_the_global_zero_rank_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pl.Trainer, "is_global_zero", property(lambda self: False))
    train, valid = loaders()
    trainer = _trainer(callbacks=[TrainledgerCallback(tmp_path / "run")])
    trainer.fit(LitMLP(**HPARAMS), train, valid)
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


class Data(pl.LightningDataModule):
    def train_dataloader(self) -> Any:
        return loaders()[0]

    def val_dataloader(self) -> Any:
        return loaders()[1]


class Scheduled(LitMLP):
    def configure_optimizers(self) -> Any:
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 4))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": warmup, "interval": "step"}}


def test_datamodule_and_scheduler(tmp_path: Path) -> None:
    trainer = _trainer(callbacks=[TrainledgerCallback(tmp_path)], max_epochs=1)
    trainer.fit(Scheduled(**HPARAMS), datamodule=Data())
    lineage = get_summary_lineage(str(tmp_path))
    # the scheduler's base lr, as the native path records it (not the warm-up's first value)
    assert lineage["hyper_parameters"]["optimizer"] == "Adam"
    assert lineage["hyper_parameters"]["learning_rate"] == HPARAMS["lr"]
    settings = lineage["optimizer_settings"]  # the optimizer configure_optimizers made
    assert settings["lr"] == HPARAMS["lr"] and settings["betas.1"] == 0.999
    assert lineage["scheduler_settings"] == {"type": "LambdaLR"}
    assert lineage["train_dataset"] == {"train_dataset_size": 48}
    assert lineage["valid_dataset"] == {"valid_dataset_size": 16}
    assert lineage["hyper_parameters"]["batch_size"] == 8


_DDP = """
import sys
from tests.integrations._common import HPARAMS, loaders
from tests.integrations.test_lightning import LitMLP, _trainer
from trainledger.integrations.lightning import TrainledgerCallback

train, valid = loaders()
trainer = _trainer(
    strategy="ddp", devices=2, callbacks=[TrainledgerCallback(sys.argv[1])]
)
trainer.fit(LitMLP(**HPARAMS), train, valid)
import torch.distributed as dist
if dist.is_initialized():  # a clean exit: gloo's threads joined before the interpreter ends
    dist.destroy_process_group()
"""


@pytest.mark.slow
def test_under_torchrun_ddp_only_rank_zero_writes(tmp_path: Path) -> None:
    """Two real processes (torchrun, gloo): one lineage file, written by rank 0, whole run."""
    import subprocess
    import sys

    script = tmp_path / "ddp_fit.py"
    script.write_text(_DDP)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
        + [str(script), str(tmp_path / "run")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    files = [p.name for p in (tmp_path / "run").iterdir() if "lineage" in p.name]
    assert len(files) == 1, files
    lineage = get_summary_lineage(str(tmp_path / "run"))
    assert lineage["run"]["status"] == "finished"
    assert lineage["hyper_parameters"]["device_num"] == 2
    assert lineage["hyper_parameters"]["parallel_mode"] == "data_parallel"
    assert lineage["run"]["total_steps"] == 6  # 48 samples / 2 ranks / batch 8, 2 epochs
    assert lineage["metric"]["accuracy"] is not None


def test_a_lightning_fine_tune_finds_its_parent(tmp_path: Path) -> None:
    """Issue 53 item 7: the callback records the starting digests; a LightningModule whose
    network was loaded from a trainledger checkpoint descends from that checkpoint's run."""
    import trainledger
    from trainledger.checkpoint import load_checkpoint, save_checkpoint

    torch.manual_seed(0)
    pre = MLP(16)
    with trainledger.track(tmp_path / "pre", network=pre) as run:
        run.log(5, loss=0.4)
        save_checkpoint(pre, str(tmp_path / "pre" / "pre.ckpt"))
        run.checkpoint(tmp_path / "pre" / "pre.ckpt")
    module = LitMLP(lr=0.1, hidden=16, batch_size=8)
    load_checkpoint(str(tmp_path / "pre" / "pre.ckpt"), module.net)
    _trainer(callbacks=[TrainledgerCallback(tmp_path / "lit")]).fit(module, *loaders())
    (parent,) = trainledger.run_family(tmp_path, "lit")["ancestors"]
    assert (parent["run"], parent["step"], parent["match"]) == ("./pre", 5, 1.0)
