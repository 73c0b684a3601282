"""Deleting a run deletes only that run, whatever its lineage names (a lineage file is
untrusted input): the Python API, ``trainledger delete`` and ``DELETE /api/v1/runs/{id}`` on
a live uvicorn server."""

from __future__ import annotations

import hashlib
import json
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from safetensors.torch import save_file

from tests.runs import sample_run, write_run
from tests.server.browser_support import LiveServer
from trainledger.checkpoint import read_info, save_checkpoint
from trainledger.cli import cli
from trainledger.errors import LineageParamValueError
from trainledger.lineage import RunValues, run_uid
from trainledger.query import append_audit, delete_run, read_audit

UID = run_uid(None)
VICTIM = run_uid(None)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _own_checkpoint(path: Path, uid: str | None, home: Path | None = None) -> Path:
    """A checkpoint as ModelCheckpoint saves it for the run ``uid`` living in ``home``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    info = {"run_uid": uid, "run_dir": str(home.resolve()) if home else None} if uid else None
    save_checkpoint({"w": torch.arange(4.0)}, str(path), info=info)
    return path


def _victims(base: Path) -> list[Path]:
    """Files of other runs and of the base itself, each a checkpoint-shaped target."""
    victim = sample_run(base, "victim", 1, scalars=3)
    elsewhere = _own_checkpoint(base / "ckpts" / "victim" / "v-1_8.ckpt", VICTIM, victim)
    append_audit(base, "cli:test", "tag", "./victim", before=None, after=1)
    annotations = base / ".trainledger" / "annotations.json"
    annotations.write_text(json.dumps({"./victim": {"tag": 1}}))
    shared = base / "shared"
    foreign = shared / "foreign.safetensors"  # another writer's file: no identity
    shared.mkdir()
    save_file({"w": torch.ones(3)}, str(foreign))
    return [
        *sorted(p for p in victim.rglob("*") if p.is_file()),  # lineage, events, checkpoint
        # the victim's own checkpoint under the uid the attacker copied: inside another run
        _own_checkpoint(victim / "ckpt" / "claimed.ckpt", VICTIM, victim),
        elsewhere,  # the victim's, outside its folder: the attacker copies its uid, not its home
        annotations,
        base / ".trainledger" / "audit.jsonl",
        foreign,
        _own_checkpoint(shared / "older.ckpt", None),  # written before identities existed
        _own_checkpoint(shared / "other-run.ckpt", run_uid(None)),  # another run's identity
    ]


def _hostile_run(base: Path, targets: list[Path]) -> None:
    """A run whose lineage names every target, absolutely and relative to the base, under
    the victim's identity (a uid is no secret: any lineage file shows it)."""
    named = [str(t) for t in targets] + [str(t.relative_to(base)) for t in targets]
    write_run(
        base,
        "attacker",
        model_path=json.dumps({"ckpt": named[0], "extra": named[-1]}),
        run=RunValues(status="finished", uid=VICTIM, checkpoints=[(p, 1) for p in named]),
    )


def _delete_py(base: Path) -> None:
    delete_run(base, "./attacker")


def _delete_cli(base: Path) -> None:
    done = CliRunner().invoke(cli, ["delete", str(base), "attacker", "--yes"])
    assert done.exit_code == 0, done.output


def _delete_api(base: Path) -> None:
    server = LiveServer(base).start()
    try:
        request = urllib.request.Request(f"{server.url}api/v1/runs/attacker", method="DELETE")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200
    finally:
        server.stop()


@pytest.mark.parametrize("delete", [_delete_py, _delete_cli, _delete_api], ids=["py", "cli", "api"])
def test_a_lineage_naming_other_files_deletes_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delete: Callable[[Path], None]
) -> None:
    base = tmp_path / "base"
    targets = _victims(base)
    before = {t: _digest(t) for t in targets}
    audit_before = (base / ".trainledger" / "audit.jsonl").read_bytes()
    _hostile_run(base, targets)
    monkeypatch.chdir(base)  # relative names must not resolve against the deleting process
    delete(base)
    assert not (base / "attacker").exists()
    after = {t: _digest(t) for t in targets if t.exists()}
    assert after.keys() == before.keys(), sorted(set(map(str, before)) - set(map(str, after)))
    for target in targets:
        if target.name != "audit.jsonl":
            assert after[target] == before[target], target
    # the audit log is only ever appended to
    assert (base / ".trainledger" / "audit.jsonl").read_bytes().startswith(audit_before)


def test_a_runs_own_checkpoints_elsewhere_go_with_it_and_nothing_else(tmp_path: Path) -> None:
    base = tmp_path / "base"
    shared = base / "ckpts"
    own = [_own_checkpoint(shared / f"mlp-1_{i}.ckpt", UID, base / "r") for i in (10, 20)]
    kept = _own_checkpoint(shared / "mlp-older.ckpt", None)
    link = shared / "link.ckpt"
    link.symlink_to(own[0])
    names = [*own, kept, link]
    (base / "r").mkdir(parents=True)
    write_run(
        base,
        "r",
        run=RunValues(status="finished", uid=UID, checkpoints=[(str(p), 1) for p in names]),
    )
    removed = delete_run(base, "./r")
    assert removed == [str((base / "r").resolve()), *(str(p.resolve()) for p in own)]
    assert kept.exists() and not any(p.exists() for p in own)


def test_a_lineage_without_an_identity_deletes_only_its_folder(tmp_path: Path) -> None:
    base = tmp_path / "base"
    ckpt = _own_checkpoint(base / "ckpts" / "m.ckpt", UID, base / "r")
    write_run(base, "r", run=RunValues(status="finished", checkpoints=[(str(ckpt), 1)]))
    assert delete_run(base, "./r") == [str((base / "r").resolve())]
    assert ckpt.exists()


def test_a_symlinked_run_id_is_refused_not_followed(tmp_path: Path) -> None:
    base = tmp_path / "base"
    sample_run(base, "real", 0)
    (base / "alias").symlink_to(base / "real")
    with pytest.raises(LineageParamValueError, match="symbolic link"):
        delete_run(base, "./alias")
    assert (base / "real").is_dir()
    assert read_audit(base) == []


def test_training_records_one_identity_in_the_lineage_and_every_checkpoint(
    tmp_path: Path,
) -> None:
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from trainledger import CheckpointConfig, Model, ModelCheckpoint, TrainLineage
    from trainledger.lineage import read_lineage

    base = tmp_path / "base"
    data = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)

    def train(epochs: int) -> None:
        net = nn.Linear(4, 1)
        model = Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1))
        config = CheckpointConfig(save_checkpoint_steps=4, keep_checkpoint_max=10)
        model.train(
            epochs,
            data,
            callbacks=[  # the checkpoints live outside the run's folder
                ModelCheckpoint("m", str(base / "ckpts" / "r"), config),
                TrainLineage(str(base / "r")),
            ],
        )

    train(1)
    uid = read_lineage(str(base / "r"))["run"]["uid"]
    first = sorted((base / "ckpts" / "r").glob("*.ckpt"))
    assert first and {read_info(p)["run_uid"] for p in first} == {uid}
    assert {read_info(p)["run_dir"] for p in first} == {str((base / "r").resolve())}
    train(1)  # the same directory trained again: the same run, the same identity
    assert read_lineage(str(base / "r"))["run"]["uid"] == uid
    every = sorted((base / "ckpts" / "r").glob("*.ckpt"))
    assert len(every) > len(first) and {read_info(p)["run_uid"] for p in every} == {uid}
    removed = delete_run(base, "./r")
    assert set(removed[1:]) == {str(p.resolve()) for p in every}
    assert not list((base / "ckpts" / "r").glob("*.ckpt"))


def test_an_archived_run_deletes_its_own_checkpoints_elsewhere(tmp_path: Path) -> None:
    from trainledger.query import archive_run

    base = tmp_path / "base"
    (base / "r").mkdir(parents=True)
    own = _own_checkpoint(base / "ckpts" / "m-1_5.ckpt", UID, base / "r")
    write_run(base, "r", run=RunValues(status="finished", uid=UID, checkpoints=[(str(own), 1)]))
    archive_run(base, "./r")
    removed = delete_run(base, "./r", archived=True)
    assert removed[1:] == [str(own.resolve())] and not own.exists()
