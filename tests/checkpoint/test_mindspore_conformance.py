"""A config ported from MindSpore leaves the files MindSpore's ModelCheckpoint left.

Reference: tests/golden/conformance/mindspore_checkpoints.json, made with MindSpore 2.10 by
record_mindspore.py next to it (2 epochs of 4 steps, batch 4, per config: MindSpore's
``get_checkpoint_policy()`` and the files left; ``append_dict`` per ``append_info``).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from trainledger.callbacks.checkpoint import ModelCheckpoint
from trainledger.checkpoint.config import CheckpointConfig
from trainledger.checkpoint.io import load_checkpoint
from trainledger.run import Model

GOLDEN = Path(__file__).parents[1] / "golden" / "conformance" / "mindspore_checkpoints.json"
MS = json.loads(GOLDEN.read_text())


def _batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(MS["samples"], 4, generator=gen)
    y = (x[:, 0] > 0).long()
    b = MS["batch"]
    return [(x[i : i + b], y[i : i + b]) for i in range(0, len(x), b)]


def _train(directory: Path, config: CheckpointConfig) -> list[str]:
    net = nn.Linear(4, 2)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    model.train(MS["epochs"], _batches(), callbacks=[ModelCheckpoint("net", directory, config)])
    return sorted(n for n in os.listdir(directory) if n.endswith(".ckpt"))


def _ms_policy(policy: dict[str, Any]) -> dict[str, Any]:
    """MindSpore says None for a rule that is off; trainledger says 0."""
    return {k: (v or 0) if k != "saved_network" else v for k, v in policy.items()}


@pytest.mark.parametrize("name", sorted(MS["runs"]))
def test_same_files_as_mindspore(name: str, tmp_path: Path) -> None:
    run = MS["runs"][name]
    config = CheckpointConfig(**run["config"])
    policy = config.get_checkpoint_policy()
    policy["saved_network"] = policy["saved_network"] is not None
    assert policy == _ms_policy(run["policy"])
    assert _train(tmp_path, config) == [f for f in run["files"] if f.endswith(".ckpt")]


def test_ignored_arguments_are_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="trainledger.checkpoint.config"):
        CheckpointConfig(save_checkpoint_seconds=60)
    assert "save_checkpoint_seconds=60 is ignored" in caplog.text
    assert "save_checkpoint_steps=0" in caplog.text  # how to get what was meant
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="trainledger.checkpoint.config"):
        CheckpointConfig(keep_checkpoint_per_n_minutes=30)
    assert "keep_checkpoint_per_n_minutes=30 is ignored" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="trainledger.checkpoint.config"):
        CheckpointConfig(keep_checkpoint_max=0)
    assert "keeps the newest checkpoint only" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="trainledger.checkpoint.config"):
        CheckpointConfig(save_checkpoint_steps=0, save_checkpoint_seconds=60)
        CheckpointConfig(keep_checkpoint_max=0, keep_checkpoint_per_n_minutes=5)
    assert caplog.text == ""  # nothing ignored, nothing said


@pytest.mark.parametrize("name", sorted(MS["append_info"]))
def test_append_dict_as_mindspore(name: str) -> None:
    info = MS["append_info"][name]
    assert CheckpointConfig(append_info=info).append_dict == MS["append_dict"][name]


def test_append_dict_entries_are_saved(tmp_path: Path) -> None:
    config = CheckpointConfig(append_info=MS["append_info"]["with_dict"], keep_checkpoint_max=1)
    (name,) = _train(tmp_path, config)
    params = load_checkpoint(tmp_path / name)
    expected = dict(config.append_dict or {}, step_num=MS["epochs"] * len(_batches()))
    assert {k: params[k] for k in expected} == expected


def test_saved_network_in_policy() -> None:
    net = nn.Linear(2, 2)
    assert CheckpointConfig(saved_network=net).get_checkpoint_policy()["saved_network"] is net
    assert CheckpointConfig().get_checkpoint_policy()["saved_network"] is None


def test_checkpoint_manager_as_mindspore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainledger.checkpoint.retention import CheckpointManager

    ref = MS["manager"]
    for name, offset in ref["files"].items():
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (ref["t0"] + offset, ref["t0"] + offset))

    def names(manager: CheckpointManager) -> list[str]:
        return sorted(os.path.basename(p) for p in manager.ckpoint_filelist)

    monkeypatch.chdir(tmp_path)
    manager = CheckpointManager()  # MindSpore's no-argument constructor
    assert names(manager) == ref["empty"]
    assert manager.directory == tmp_path.absolute() and manager.prefix == "CKP"
    manager.update_ckpoint_filelist(str(tmp_path), "net")
    assert names(manager) == ref["updated"]
    manager.remove_oldest_ckpoint_file()
    assert names(manager) == ref["after_remove_oldest"]
    manager.keep_one_ckpoint_per_minutes(ref["minutes"], ref["cur_time"])
    assert names(manager) == ref["after_keep_one_per_2_minutes"]
    assert sorted(os.listdir(tmp_path)) == ref["on_disk"]


def test_checkpoint_manager_never_removes_the_resumed_file(tmp_path: Path) -> None:
    from trainledger.checkpoint.retention import CheckpointManager

    for i, name in enumerate(("p-1_1.ckpt", "p-1_2.ckpt")):
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    manager = CheckpointManager()
    manager.update_ckpoint_filelist(tmp_path, "p")
    manager.pin(tmp_path / "p-1_1.ckpt")
    manager.remove_oldest_ckpoint_file()
    assert sorted(os.listdir(tmp_path)) == ["p-1_1.ckpt"]
