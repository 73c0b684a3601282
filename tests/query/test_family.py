"""Parents found from the weights themselves (issue 53 items 1-3 and 5): a run whose starting
tensors match a checkpoint of another run of the base descends from it, however the file was
loaded, and nothing else does (a same-seed start, constant tensors, a resume)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from trainledger.callbacks import EvalLineage, ModelCheckpoint, TrainLineage
from trainledger.checkpoint import CheckpointConfig, latest_checkpoint, load_checkpoint
from trainledger.errors import LineageParamValueError
from trainledger.query.family import Candidate, find_sources, run_family
from trainledger.run import Model
from trainledger.storage import Digests


def data(seed: int = 0) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 8, generator=g)
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16)


def make_net(seed: int, head: int = 2) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, head))


def train(base: Path, name: str, net: nn.Module, epochs: int = 2, evaluate: bool = False) -> Path:
    run = base / name
    model = Model(
        net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1), metrics={"accuracy"}
    )
    ckpt = ModelCheckpoint("m", run, CheckpointConfig(save_checkpoint_steps=4))
    callbacks = [ckpt, TrainLineage(run)]
    if evaluate:
        model.fit(epochs, data(), data(1), callbacks=[*callbacks, EvalLineage(run)])
    else:
        model.train(epochs, data(), callbacks=callbacks)
    return run


def only_parent(base: Path, run: str) -> dict[str, object]:
    family = run_family(base, run)
    (parent,) = [a for a in family["ancestors"] if a["depth"] == 1]
    return parent


@pytest.mark.parametrize("how", ["load_checkpoint", "safetensors", "torch.load"])
def test_a_full_load_however_it_was_made_finds_the_checkpoint(tmp_path: Path, how: str) -> None:
    base = tmp_path / "base"
    a = train(base, "pre", make_net(0))
    ckpt = latest_checkpoint(a)
    assert ckpt is not None
    child = make_net(1)
    if how == "load_checkpoint":
        load_checkpoint(ckpt, child)
    elif how == "safetensors":
        child.load_state_dict(load_file(ckpt))
    else:  # a state dict the user saved with torch.save at the same moment
        torch.save(load_file(ckpt), tmp_path / "pre.pt")
        child.load_state_dict(torch.load(tmp_path / "pre.pt", weights_only=True))
    train(base, "fine", child)
    parent = only_parent(base, "fine")
    assert parent["run"] == "./pre" and parent["checkpoint"] == ckpt
    assert parent["match"] == 1.0 and parent["step"] == 8
    family = run_family(base, "pre")
    assert [(d["run"], d["match"]) for d in family["descendants"]] == [("./fine", 1.0)]


def test_a_partial_load_and_two_sources(tmp_path: Path) -> None:
    base = tmp_path / "base"
    backbone = train(base, "backbone", make_net(0))
    head_run = train(base, "head", make_net(5, head=3))
    child = make_net(1, head=3)
    state = load_file(latest_checkpoint(backbone))
    child.load_state_dict({k: v for k, v in state.items() if not k.startswith("3.")}, strict=False)
    train(base, "partial", child)
    parent = only_parent(base, "partial")
    assert parent["run"] == "./backbone" and 0 < parent["match"] < 1  # a new head
    two = make_net(2, head=3)
    two.load_state_dict({k: v for k, v in state.items() if not k.startswith("3.")}, strict=False)
    head = load_file(latest_checkpoint(head_run))
    two.load_state_dict({k: v for k, v in head.items() if k.startswith("3.")}, strict=False)
    train(base, "two", two)
    parents = [a for a in run_family(base, "two")["ancestors"] if a["depth"] == 1]
    assert [p["run"] for p in parents] == ["./backbone", "./head"]  # largest first
    assert parents[0]["match"] > parents[1]["match"] > 0
    assert sum(p["match"] for p in parents) == pytest.approx(1.0, abs=1e-3)


def test_no_parent_for_a_fresh_start_a_shared_seed_or_constant_tensors(tmp_path: Path) -> None:
    base = tmp_path / "base"
    train(base, "a", make_net(0))
    train(base, "same-seed", make_net(0))  # the same start as "a": a step-0 save is no parent
    train(base, "fresh", make_net(7))  # batch norm's 1s and 0s match "a"'s, and never count
    for run in ("a", "same-seed", "fresh"):
        family = run_family(base, run)
        assert family["ancestors"] == [] and family["descendants"] == [], (run, family)


def test_a_resume_is_a_session_and_grandchildren_are_found(tmp_path: Path) -> None:
    base = tmp_path / "base"
    a = train(base, "a", make_net(0))
    net = make_net(3)
    load_checkpoint(latest_checkpoint(a), net)
    train(base, "b", net)  # a's child
    net2 = make_net(4)
    load_checkpoint(latest_checkpoint(base / "b"), net2)
    train(base, "b", net2, epochs=1)  # b resumed into its own folder: no self-parent
    c_net = make_net(5)
    load_checkpoint(latest_checkpoint(base / "b"), c_net)
    train(base, "c", c_net)
    family = run_family(base, "./c")
    assert [(x["run"], x["depth"]) for x in family["ancestors"]] == [("./b", 1), ("./a", 2)]
    assert [x["run"] for x in run_family(base, "a")["descendants"]] == ["./b", "./c"]
    assert all(x["run"] != "./b" for x in run_family(base, "b")["ancestors"])


def test_a_checkpoint_copied_in_later_and_evaluations(tmp_path: Path) -> None:
    elsewhere, base = tmp_path / "elsewhere", tmp_path / "base"
    a = train(elsewhere, "pre", make_net(0))
    child = make_net(1)
    load_checkpoint(latest_checkpoint(a), child)
    train(base, "fine", child)
    before = only_parent(base, "fine")  # loaded from outside the base: a file, no run
    assert before["run"] is None and before["checkpoint"] == latest_checkpoint(a)
    import shutil

    shutil.copytree(a, base / "pre")  # the lineage names the files where they were written
    assert only_parent(base, "fine")["run"] == "./pre"
    net = make_net(9)
    load_checkpoint(latest_checkpoint(base / "fine"), net)
    evaluator = Model(net, nn.CrossEntropyLoss(), metrics={"accuracy"})
    evaluator.eval(data(3), callbacks=[EvalLineage(base / "eval-other-data")])
    evals = run_family(base, "fine")["evaluations"]
    assert [(e["run"], e["match"]) for e in evals] == [("./eval-other-data", 1.0)]


def test_an_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    base = tmp_path / "base"
    train(base, "a", make_net(0), epochs=1)
    with pytest.raises(LineageParamValueError, match=r"received: 'nope'"):
        run_family(base, "nope")


def _d(*tensors: tuple[int, str, bool]) -> Digests:
    return Digests(
        tuple(t[0] for t in tensors), tuple(t[1] for t in tensors), tuple(t[2] for t in tensors)
    )


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        # (crc, kind, constant) of the candidate's tensors -> the sources found
        (Candidate("./p", "p.ckpt", 5, _d((1, "F32:100", False), (2, "F32:100", False))), 1.0),
        (Candidate("./p", "p.ckpt", 0, _d((1, "F32:100", False), (2, "F32:100", False))), None),
        (Candidate("./p", "p/ckpt_dir/x.ckpt", 5, _d((1, "F32:100", False))), None),
        (Candidate("./p", "p.ckpt", 5, _d((9, "F32:1", True))), None),  # a constant only
        (Candidate("./p", "p.ckpt", 5, _d((1, "F16:200", False))), None),  # other dtype/shape
        (Candidate("./me", "me.ckpt", 5, _d((1, "F32:100", False))), None),  # its own
        (Candidate("./p", "p.ckpt", 5, _d((2, "F32:100", False))), 0.5),  # a partial load
    ],
)
def test_the_decision_table(candidate: Candidate, expected: float | None) -> None:
    start = _d((1, "F32:100", False), (2, "F32:100", False), (9, "F32:1", True))
    found = find_sources(start, [candidate], own="./me")
    assert (found[0].match if found else None) == expected


def test_a_source_below_one_percent_is_no_parent() -> None:
    start = _d(*[(i, "F32:1000", False) for i in range(200)])
    tiny = Candidate("./p", "p.ckpt", 3, _d((0, "F32:1000", False)))  # 0.5 % of the bytes
    assert find_sources(start, [tiny]) == []


def test_the_family_command_prints_the_tree_and_the_data(tmp_path: Path) -> None:
    from click.testing import CliRunner

    import trainledger
    from trainledger.cli.main import cli

    base = tmp_path / "base"
    a = train(base, "a", make_net(0), evaluate=True)
    net = make_net(3)
    load_checkpoint(latest_checkpoint(a), net)
    train(base, "b", net, evaluate=True)
    shown = CliRunner().invoke(cli, ["family", str(base), "b"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].startswith("./b  accuracy ") and lines[1] == "started from"
    assert lines[2].startswith("  ./a  accuracy ") and "step 8, match 100%" in lines[2]
    as_json = CliRunner().invoke(cli, ["family", str(base), "./a", "--json"])
    data = json.loads(as_json.output)
    assert data == trainledger.run_family(base, "a")
    assert [d["run"] for d in data["descendants"]] == ["./b"]
    wrong = CliRunner().invoke(cli, ["family", str(base), "zz"])
    assert wrong.exit_code == 1 and "received: 'zz'" in wrong.output


def test_a_family_in_a_bucket_and_on_postgresql(
    s3_bucket: str, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers and the child's load on ``s3://``; the family read through the index's copy,
    with the index on PostgreSQL."""
    from trainledger.storage import flush_mirrors

    base = f"s3://{s3_bucket}/team"
    net = make_net(0)
    model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1))
    ckpt = ModelCheckpoint("m", f"{base}/pre", CheckpointConfig(save_checkpoint_steps=4))
    model.train(2, data(), callbacks=[ckpt, TrainLineage(f"{base}/pre")])
    flush_mirrors()
    child = make_net(1)
    load_checkpoint(f"{base}/pre/m-2_4.ckpt", child)
    model = Model(child, nn.CrossEntropyLoss(), torch.optim.SGD(child.parameters(), 0.1))
    model.train(1, data(), callbacks=[TrainLineage(f"{base}/fine")])
    flush_mirrors()
    monkeypatch.setenv("TRAINLEDGER_INDEX_URL", pg_url)
    parent = only_parent(base, "fine")  # type: ignore[arg-type]
    assert parent == {
        "run": "./pre",
        "checkpoint": f"{base}/pre/m-2_4.ckpt",
        "step": 8,
        "match": 1.0,
        "child": "./fine",
        "depth": 1,
        "metric": {},
    }
