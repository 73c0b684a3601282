"""Sharded checkpoints in one process: the format (safetensors + JSON only), round trips,
clear errors, and the readers that must see one checkpoint (UI table, lineage, retention)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from trainledger.checkpoint import (
    CheckpointManager,
    is_sharded_checkpoint,
    load_distributed_checkpoint,
    save_sharded,
)
from trainledger.errors import CheckpointFormatError
from trainledger.lineage import file_size
from trainledger.server.checkpoint_listing import list_checkpoints


def trained() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(3):
        opt.zero_grad()
        net(torch.randn(5, 4)).sum().backward()
        opt.step()
    return net, opt


def test_round_trip_restores_weights_and_optimizer_state(tmp_path: Path) -> None:
    net, opt = trained()
    path = save_sharded(tmp_path / "m-1_3.ckpt", net, opt, {"epoch": 1, "step": 3})
    assert is_sharded_checkpoint(path)
    assert sorted(p.name for p in path.iterdir()) == ["manifest.json", "shard_00000.safetensors"]
    manifest = json.loads((path / "manifest.json").read_text())
    shard = load_file(str(path / "shard_00000.safetensors"))  # plain safetensors
    assert {c["key"] for e in manifest["tensors"].values() for c in e["chunks"]} == set(shard)
    assert manifest["info"] == {"epoch": 1, "step": 3}

    torch.manual_seed(1)
    other = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    other_opt = torch.optim.Adam(other.parameters(), lr=0.5)
    info = load_distributed_checkpoint(path, other, other_opt)
    assert info["step"] == 3
    for a, b in zip(net.state_dict().values(), other.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert other_opt.param_groups[0]["lr"] == 0.01
    mine, theirs = opt.state_dict()["state"], other_opt.state_dict()["state"]
    for k in mine:
        assert torch.equal(mine[k]["exp_avg"], theirs[k]["exp_avg"])
        assert float(mine[k]["step"]) == float(theirs[k]["step"])


def test_a_different_network_is_refused_by_name(tmp_path: Path) -> None:
    net, opt = trained()
    path = save_sharded(tmp_path / "m-1_3.ckpt", net, opt)
    wrong = torch.nn.Linear(4, 2)
    with pytest.raises(CheckpointFormatError, match="does not match"):
        load_distributed_checkpoint(path, wrong, torch.optim.Adam(wrong.parameters()))


def test_a_directory_without_its_manifest_is_not_a_checkpoint(tmp_path: Path) -> None:
    net, _ = trained()
    path = save_sharded(tmp_path / "m-1_3.ckpt", net)
    (path / "manifest.json").unlink()
    assert not is_sharded_checkpoint(path)
    with pytest.raises(CheckpointFormatError, match="manifest.json"):
        load_distributed_checkpoint(path, net)
    (path / "manifest.json").write_text('{"format": "other/9"}')
    with pytest.raises(CheckpointFormatError, match="expected format"):
        load_distributed_checkpoint(path, net)


def test_readers_see_one_checkpoint_with_its_total_size(tmp_path: Path) -> None:
    net, opt = trained()
    run = tmp_path / "run"
    path = save_sharded(run / "ckpt" / "m-1_3.ckpt", net, opt)
    total = sum(p.stat().st_size for p in path.iterdir())
    assert file_size(str(path)) == total  # what lineage records
    (entry,) = list_checkpoints(run)  # the UI's table
    assert entry["name"] == "ckpt/m-1_3.ckpt" and entry["size"] == total
    assert (entry["epoch"], entry["step_in_epoch"]) == (1, 3)

    manager = CheckpointManager(run / "ckpt", "m", keep_checkpoint_max=1)
    manager.add(path)
    later = save_sharded(run / "ckpt" / "m-1_4.ckpt", net, opt)
    manager.add(later)
    assert manager.apply() == [path]  # retention removes the whole directory
    assert not path.exists() and is_sharded_checkpoint(later)
