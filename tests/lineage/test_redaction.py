"""TRAINLEDGER_REDACT: host names, command lines and paths blurred in what is written and in
what is exported, keeping what comparisons need."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.runs import make_base
from tests.server.conftest import client_for
from trainledger.callbacks import EvalLineage, ModelCheckpoint, TrainLineage
from trainledger.cli import cli
from trainledger.errors import LineageParamValueError
from trainledger.lineage import Redaction, lineage_pb2, redact_event
from trainledger.query import get_summary_lineage
from trainledger.run import Model


def test_the_setting_is_parsed_strictly() -> None:
    assert Redaction.parse("all") == Redaction(True, True, True)
    assert Redaction.parse(" host, paths ") == Redaction(False, True, True)
    assert not Redaction.parse("") and not Redaction.parse(None)
    with pytest.raises(LineageParamValueError, match="command, host, paths or 'all'"):
        Redaction.parse("hosts")


def test_blurred_values_keep_what_comparisons_need() -> None:
    policy = Redaction.parse("all")
    a, b = policy.path("/home/alice/data/train"), policy.path("/home/bob/data/train")
    assert a.startswith("<redacted>/train#") and a != b and "alice" not in a
    assert policy.path("/home/alice/data/train") == a  # stable: same path, same name
    assert policy.path("s3://team/runs/r0/m.ckpt") == "s3://team/runs/r0/m.ckpt"
    assert policy.hostname("gpu-7.corp") == policy.hostname("gpu-7.corp") != "gpu-7.corp"
    assert policy.commandline(["/usr/bin/python3", "/home/alice/train.py", "--key", "s3cr3t"]) == [
        "python3",
        "train.py",
        "<2 arguments redacted>",
    ]
    assert "alice" not in policy.text("FileNotFoundError: /home/alice/x.csv not found")
    assert Redaction.parse("host").path("/home/alice") == "/home/alice"  # only what is asked


def _fit(run_dir: Path) -> None:
    torch.manual_seed(0)
    x = torch.randn(32, 4)
    data = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8)
    net = nn.Linear(4, 2)
    model = Model(
        net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.1), metrics={"accuracy"}
    )
    callbacks = [TrainLineage(run_dir), EvalLineage(run_dir), ModelCheckpoint(directory=run_dir)]
    model.fit(1, data, data, callbacks=callbacks)


def test_the_writer_blurs_what_it_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINLEDGER_REDACT", "all")
    _fit(tmp_path / "run")
    lineage = get_summary_lineage(str(tmp_path / "run"))
    raw = b"".join(p.read_bytes() for p in (tmp_path / "run").glob("*_lineage"))
    assert str(tmp_path).encode() not in raw  # no local path anywhere in the file
    assert os.uname().nodename.encode() not in raw
    run = lineage["run"]
    assert run["hostname"].startswith("host-")
    command = shlex.split(run["command"])
    assert command[0] == os.path.basename(sys.executable) and len(command) <= 3
    host = os.uname().nodename
    names = [p.name for p in (tmp_path / "run").iterdir()]
    assert not any(f".{host}." in name for name in names), names  # nor in file names
    ckpt = json.loads(lineage["model"]["path"])["ckpt"]
    assert ckpt.startswith("<redacted>/") and ckpt.endswith(tuple("0123456789abcdef"))
    assert lineage["metric"]["accuracy"] >= 0  # the rest is as recorded


def test_dataset_graph_paths_are_blurred() -> None:
    event = lineage_pb2.LineageEvent()
    event.dataset_graph.parameter.mapStr["dataset_dir"] = "/home/alice/imagenet"
    event.dataset_graph.parameter.mapStr["shuffle_mode"] = "global"
    child = event.dataset_graph.children.add()
    child.operations.add().operationParam.mapStrList["dataset_files"].strValue.extend(["/a/x.csv"])
    out = redact_event(event, Redaction.parse("paths"))
    assert out.dataset_graph.parameter.mapStr["dataset_dir"].startswith("<redacted>/imagenet#")
    assert out.dataset_graph.parameter.mapStr["shuffle_mode"] == "global"
    files = out.dataset_graph.children[0].operations[0].operationParam.mapStrList["dataset_files"]
    assert list(files.strValue)[0].startswith("<redacted>/x.csv#")
    assert event.dataset_graph.parameter.mapStr["dataset_dir"] == "/home/alice/imagenet"  # a copy


def test_exports_are_blurred_even_for_runs_written_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = make_base(tmp_path / "runs", n=2, scalars=0)  # written without the setting
    monkeypatch.setenv("TRAINLEDGER_REDACT", "paths,host")
    done = CliRunner().invoke(cli, ["lineage", str(base), "--format", "json"])
    assert done.exit_code == 0, done.output
    assert "/data/train" not in done.output and "<redacted>/train#" in done.output
    assert '"./run00"' in done.output  # run names in the base are kept
    csv_out = CliRunner().invoke(cli, ["lineage", str(base), "--format", "csv"]).output
    assert "/data/train" not in csv_out and str(tmp_path) not in csv_out
    with client_for(base) as client:
        exported = client.post("/api/v1/runs/export.csv").text
    assert "/data/train" not in exported and str(tmp_path) not in exported
    assert "<redacted>/train#" in exported


def test_exports_blur_inside_lists_too() -> None:
    """Checkpoint paths and a resumed run's session hosts sit in lists of the run record."""
    from trainledger.lineage import Redaction
    from trainledger.lineage.redaction import redact_object

    obj = {
        "summary_dir": "./r1",
        "run": {
            "checkpoints": [{"path": "/home/alice/ckpt/m-1_1.ckpt", "size": 3}],
            "sessions": [{"hostname": "alice-laptop", "pid": 7}],
        },
    }
    out = redact_object(obj, Redaction.parse("all"))
    assert out["run"]["checkpoints"][0]["path"].startswith("<redacted>/m-1_1.ckpt#")
    assert out["run"]["sessions"][0]["hostname"].startswith("host-")
    assert obj["run"]["sessions"][0]["hostname"] == "alice-laptop"  # a copy
