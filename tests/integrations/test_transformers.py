"""``TrainledgerTrainerCallback`` in a real ``Trainer.train()`` with evaluation (a tiny BERT
built from a config in code, no hub access): the native lineage, summaries, checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from trainledger.callbacks import EvalLineage, TrainLineage
from trainledger.query import get_summary_lineage
from trainledger.run import Model
from trainledger.summary import read_scalars

transformers = pytest.importorskip("transformers")

from trainledger.integrations.transformers import TrainledgerTrainerCallback  # noqa: E402

LR, EPOCHS, BATCH = 1e-3, 2, 8


def _model() -> Any:
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=32,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=8,
        max_position_embeddings=16,
        num_labels=2,
    )
    return transformers.BertForSequenceClassification(config)


def _rows(n: int, seed: int) -> list[dict[str, Any]]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 32, (n, 6), generator=g)
    return [{"input_ids": ids[i], "labels": int(ids[i, 0] % 2)} for i in range(n)]


class EvalNet(nn.Module):
    """(loss, logits, labels) for the native Model's eval_indexes."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> tuple[Any, ...]:
        out = self.net(input_ids=input_ids, labels=labels)
        return out.loss, out.logits, labels


def _native(run_dir: Path) -> dict[str, Any]:
    net = _model()
    model = Model(
        net,
        None,
        torch.optim.AdamW(net.parameters(), lr=LR),
        metrics={"loss", "accuracy"},
        eval_network=EvalNet(net),
        eval_indexes=[0, 1, 2],
    )
    train = DataLoader(_rows(24, 0), batch_size=BATCH)
    valid = DataLoader(_rows(8, 1), batch_size=BATCH)
    model.fit(EPOCHS, train, valid, callbacks=[TrainLineage(run_dir), EvalLineage(run_dir)])
    return get_summary_lineage(str(run_dir))


def _accuracy(pred: Any) -> dict[str, float]:
    return {"accuracy": float((pred.predictions.argmax(-1) == pred.label_ids).mean())}


def _trainer(tmp_path: Path, callback: Any, **kwargs: Any) -> Any:
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        learning_rate=LR,
        per_device_train_batch_size=BATCH,
        per_device_eval_batch_size=BATCH,
        num_train_epochs=EPOCHS,
        eval_strategy="epoch",
        save_strategy="epoch",
        logging_steps=1,
        seed=7,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        **kwargs,
    )
    return transformers.Trainer(
        model=_model(),
        args=args,
        train_dataset=_rows(24, 0),
        eval_dataset=_rows(8, 1),
        compute_metrics=_accuracy,
        callbacks=[callback],
    )


def test_trainer_run_gives_the_native_lineage(tmp_path: Path) -> None:
    native = _native(tmp_path / "native")
    callback = TrainledgerTrainerCallback(tmp_path / "hf")
    trainer = _trainer(tmp_path, callback)
    trainer.train()  # the Trainer's own idiom, unchanged: train with eval each epoch
    ours = get_summary_lineage(str(tmp_path / "hf"))
    for key in ("hyper_parameters", "train_dataset", "valid_dataset"):
        assert ours[key] == native[key], key
    assert ours["algorithm"]["network"] == native["algorithm"]["network"]
    assert set(ours["metric"]) == set(native["metric"]) == {"loss", "accuracy"}
    assert ours["user_defined"]["learning_rate"] == LR
    assert ours["user_defined"]["seed"] == 7 and ours["run"]["seed"] == 7
    assert ours["user_defined"]["lr_scheduler_type"] == "linear"
    assert ours["user_defined"]["config.hidden_size"] == 8
    assert ours["run"]["status"] == "finished" and ours["run"]["total_steps"] == 6
    # the last checkpoint the Trainer saved is the lineage's model
    weights = tmp_path / "out" / "checkpoint-6" / "model.safetensors"
    assert json.loads(ours["model"]["path"]) == {"ckpt": str(weights)}
    assert ours["model"]["size"] == weights.stat().st_size
    scalars = read_scalars(tmp_path / "hf")
    assert list(scalars["loss"][0]) == list(range(1, 7))
    assert list(scalars["eval/accuracy"][0]) == [3, 6]
    assert "train_runtime" not in scalars


def test_recording_marks_a_failed_train(tmp_path: Path) -> None:
    class Boom(transformers.TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.global_step == 2:
                raise RuntimeError("out of memory")

    callback = TrainledgerTrainerCallback(tmp_path / "hf")
    trainer = _trainer(tmp_path, callback)
    trainer.add_callback(Boom())
    with pytest.raises(RuntimeError, match="out of memory"), callback.recording():
        trainer.train()
    run = get_summary_lineage(str(tmp_path / "hf"))["run"]
    assert run["status"] == "failed" and "out of memory" in run["error"]


_CRASH = """
import sys
from pathlib import Path
from typing import Any
import transformers
from tests.integrations.test_transformers import _trainer
from trainledger.integrations.transformers import TrainledgerTrainerCallback

class Boom(transformers.TrainerCallback):
    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if state.global_step == 2:
            raise RuntimeError("out of memory")

tmp = Path(sys.argv[1])
trainer = _trainer(tmp, TrainledgerTrainerCallback(tmp / "hf"))
trainer.add_callback(Boom())
trainer.train()  # no recording(): the exception ends the process
"""


def test_a_crash_without_recording_is_failed_at_exit(tmp_path: Path) -> None:
    """The Trainer has no exception hook; the uncaught error is recorded when Python exits."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _CRASH, str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "out of memory" in done.stderr
    run = get_summary_lineage(str(tmp_path / "hf"))["run"]
    assert run["status"] == "failed", run
    assert "RuntimeError: out of memory" in run["error"]


def test_a_finished_train_leaves_nothing_at_exit(tmp_path: Path) -> None:
    callback = TrainledgerTrainerCallback(tmp_path / "hf")
    _trainer(tmp_path, callback).train()
    callback._at_exit()  # what the interpreter would call: the run is over, nothing to do
    run = get_summary_lineage(str(tmp_path / "hf"))["run"]
    assert run["status"] == "finished"


def test_trainer_optimizer_is_recorded_as_configured(tmp_path: Path) -> None:
    callback = TrainledgerTrainerCallback(tmp_path / "hf")
    trainer = _trainer(tmp_path, callback)
    trainer.train()
    ours = get_summary_lineage(str(tmp_path / "hf"))
    settings = ours["optimizer_settings"]
    # the Trainer's AdamW, its decay and no-decay groups (equal here: weight_decay 0), and
    # its linear schedule, a LambdaLR whose lambda is no plain value
    assert settings["lr"] == LR and settings["betas.0"] == 0.9 and settings["betas.1"] == 0.999
    assert settings["decoupled_weight_decay"] == "true" and settings["param_groups"] == 2
    assert not any(k.startswith("groups.") for k in settings)
    assert ours["scheduler_settings"] == {"type": "LambdaLR"}


def test_a_trainer_fine_tune_finds_its_parent(tmp_path: Path) -> None:
    """Issue 53 item 7: a Trainer run whose model was loaded from another run's checkpoint
    (here one a ``track`` loop saved) is that run's child."""
    import trainledger
    from trainledger.checkpoint import load_checkpoint, save_checkpoint

    pre = _model()
    torch.nn.init.normal_(pre.classifier.weight)  # (weights no fresh model has)
    path = tmp_path / "pre" / "pre.ckpt"
    with trainledger.track(tmp_path / "pre", network=pre) as run:
        run.log(3, loss=0.7)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(pre, str(path))
        run.checkpoint(path)
    trainer = _trainer(tmp_path, TrainledgerTrainerCallback(tmp_path / "hf"))
    load_checkpoint(str(path), trainer.model)
    trainer.train()
    (parent,) = trainledger.run_family(tmp_path, "hf")["ancestors"]
    assert (parent["run"], parent["step"], parent["match"]) == ("./pre", 3, 1.0)
