"""The wheel works on its own: built from the source tree, installed without extras into a
fresh virtual environment (no torch, pandas or web server, only the core dependencies pinned
by constraints.txt), it imports and answers the CLI's query commands over runs that this
environment (with torch) trained.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(args, capture_output=True, text=True, timeout=540, env=env, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def _train_runs(base: Path) -> None:
    """Two tiny runs with lineage, written by this (full) environment."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from trainledger import EvalLineage, Model, ModelCheckpoint, TrainLineage

    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    for lr in (0.1, 0.01):
        run = base / f"sgd_lr{lr}"
        net = nn.Linear(4, 2)
        model = Model(
            net,
            nn.CrossEntropyLoss(),
            torch.optim.SGD(net.parameters(), lr=lr),
            metrics={"accuracy"},
        )
        model.show_progress = False
        loader = DataLoader(TensorDataset(x, y), batch_size=16)
        model.fit(
            2,
            loader,
            loader,
            callbacks=[
                ModelCheckpoint("lin", str(run / "ckpt")),
                TrainLineage(str(run), user_defined_info={"lr_name": f"lr{lr}"}),
                EvalLineage(str(run)),
            ],
        )


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "src",
        source / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"),
    )
    dist = work / "dist"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(source),
        ]
    )
    (wheel,) = dist.glob("trainledger-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in (
        "trainledger/py.typed",
        "trainledger/__main__.py",
        "trainledger/lineage/proto/lineage.proto",
        "trainledger/server/static/",
    ):
        assert any(n.startswith(needed) for n in names), needed

    venv = work / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])  # no --system-site-packages
    _run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "-c",
            str(REPO / "constraints.txt"),
            str(wheel),
        ]
    )
    return venv


def test_core_install_has_no_optional_dependency(fresh_venv: Path) -> None:
    code = (
        "import importlib.util as u\n"
        "print([m for m in ('torch', 'pandas', 'fastapi', 'safetensors', 'sklearn')"
        " if u.find_spec(m)])\n"
        "import trainledger, trainledger.metrics\n"
        "from trainledger import filter_summary_lineage, get_summary_lineage\n"
        "print(trainledger.__file__)\n"
    )
    out = _run([str(fresh_venv / "bin" / "python"), "-c", code]).stdout.splitlines()
    assert out[0] == "[]"
    assert out[1].startswith(str(fresh_venv))  # the installed wheel, not the source tree


def test_optional_names_say_which_extra(fresh_venv: Path) -> None:
    code = (
        "for stmt in ('from trainledger import Model', 'from trainledger import lineage_table'):\n"
        "    try:\n"
        "        exec(stmt)\n"
        "    except ImportError as exc:\n"
        "        print(exc)\n"
    )
    out = _run([str(fresh_venv / "bin" / "python"), "-c", code]).stdout.splitlines()
    assert out == [
        "trainledger.Model needs torch, which is not installed: pip install 'trainledger[torch]'",
        "trainledger.lineage_table needs pandas, which is not installed: "
        "pip install 'trainledger[pandas]'",
    ]


def test_query_commands_over_runs_written_with_torch(fresh_venv: Path, tmp_path: Path) -> None:
    base = tmp_path / "runs"
    _train_runs(base)
    cli = str(fresh_venv / "bin" / "trainledger")

    as_json = json.loads(_run([cli, "lineage", str(base), "--format", "json"]).stdout)
    ours = json.loads(
        _run([sys.executable, "-m", "trainledger", "lineage", str(base), "--format", "json"]).stdout
    )
    assert as_json == ours
    assert sorted(o["summary_dir"] for o in as_json["object"]) == ["./sgd_lr0.01", "./sgd_lr0.1"]
    assert {o["model_lineage"]["learning_rate"] for o in as_json["object"]} == {0.1, 0.01}

    table = _run([cli, "lineage", str(base)]).stdout
    assert "sgd_lr0.1" in table and "sgd_lr0.01" in table and "SGD" in table

    shown = _run([cli, "show", str(base / "sgd_lr0.1")]).stdout
    assert "SGD" in shown and "CrossEntropyLoss" in shown

    same = _run(
        [
            str(fresh_venv / "bin" / "python"),
            "-m",
            "trainledger",
            "lineage",
            str(base),
            "--format",
            "json",
        ]
    ).stdout
    assert json.loads(same) == as_json
