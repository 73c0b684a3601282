"""``trainledger demo``: the offline runs and table, the --online hand-off, help."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainledger.cli.main import cli


@pytest.mark.slow
def test_demo_trains_runs_and_prints_lineage_table(tmp_path: Path) -> None:
    from trainledger.checkpoint import latest_checkpoint
    from trainledger.lineage.reader import read_lineage
    from trainledger.summary.reader import read_scalars

    out = tmp_path / "runs"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    for name in ("mlp_sgd", "mlp_momentum", "mlp_adam", "cnn_adam"):
        run = out / name
        lineage = read_lineage(run)  # train + eval lineage for every run
        assert lineage["hyper_parameters"]["optimizer"] in ("SGD", "Adam")
        assert 0.8 < lineage["metric"]["accuracy"] <= 1.0
        assert lineage["user_defined"]["arch"] in ("mlp", "cnn")
        assert lineage["run"]["status"] == "finished"
        ckpt = latest_checkpoint(run / "ckpt")
        assert ckpt is not None and lineage["model"]["path"]  # checkpoints recorded
        assert "loss/auto" in read_scalars(run)  # TensorBoard summaries
        assert f"\n{name} " in result.output or f" {name} " in result.output
    # the table is the lineage query's answer, not squeezed when the output is not a terminal
    assert "5 of 5 runs" in result.output
    # the fine-tune's parent, found from the weights (issue 53: the demo shows a family)
    assert "mlp_finetune started from ./mlp_sgd at step" in result.output
    assert "(100% of its weights)" in result.output
    assert "DigitsCNN" in result.output and "accuracy" in result.output
    assert f"trainledger ui {out}" in result.output


@pytest.mark.slow
def test_run_demo_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    offline = importlib.import_module("trainledger.demos.offline")
    data = offline.load_digits_data()
    row = offline.run_mlp_sgd(tmp_path, data)
    assert set(row) == {"run_dir", "optimizer", "lr", "batch", "epochs", "accuracy", "loss"}
    assert row["optimizer"] == "SGD" and row["lr"] == 0.1 and row["batch"] == 32
    assert row["accuracy"] > 0.8  # digits are easy; a broken loop would be near 0.1
    again = offline.run_mlp_sgd(tmp_path, data)
    assert again["accuracy"] == row["accuracy"]  # seeded: reproducible
    assert again["run_dir"] == row["run_dir"]  # the demo's own run is replaced, not duplicated
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp_sgd"]
    (tmp_path / "mlp_momentum").mkdir()  # a directory the demo did not make is kept
    (tmp_path / "mlp_momentum" / "mine.txt").write_text("user data")
    other = offline.run_mlp_momentum(tmp_path, data)
    assert Path(other["run_dir"]).name == "mlp_momentum_2"
    assert (tmp_path / "mlp_momentum" / "mine.txt").read_text() == "user data"


def test_online_calls_online_ctr_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    fake = types.ModuleType("trainledger.demos.online_ctr")
    fake.run = lambda out, max_steps: calls.append((out, max_steps)) or {"steps": max_steps}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "trainledger.demos.online_ctr", fake)
    result = CliRunner().invoke(
        cli, ["demo", "--online", "--out", str(tmp_path), "--max-steps", "5"]
    )
    assert result.exit_code == 0, result.output
    assert calls == [(tmp_path, 5)]
    assert "steps: 5" in result.output


def test_online_missing_module_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "trainledger.demos.online_ctr", None)  # import fails
    result = CliRunner().invoke(cli, ["demo", "--online", "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "online demo is not available" in result.output


def test_help() -> None:
    result = CliRunner().invoke(cli, ["demo", "--help"])
    assert result.exit_code == 0
    assert "--out" in result.output and "--online" in result.output
