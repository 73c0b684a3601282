"""`trainledger lineage` and `trainledger show`."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from tests.query.conftest import copy_golden
from tests.runs import write_run
from trainledger.cli.main import cli
from trainledger.cli.table import render_table
from trainledger.lineage.records import RunValues
from trainledger.query.lineage_api import filter_summary_lineage


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_lineage_json_is_exactly_the_api_result(tmp_path: Path) -> None:
    base = copy_golden(tmp_path / "runs")
    code, out = run(
        "lineage",
        str(base),
        "--where",
        "learning_rate >= 0.02",
        "-w",
        "optimizer in [Momentum, SGD]",
        "--sort",
        "-learning_rate",
        "--format",
        "json",
    )
    assert code == 0, out
    expected = filter_summary_lineage(
        str(base),
        {
            "learning_rate": {"ge": 0.02},
            "optimizer": {"in": ["Momentum", "SGD"]},
            "sorted_name": "learning_rate",
            "sorted_type": "descending",
        },
    )
    assert json.loads(out) == expected
    assert [o["summary_dir"] for o in expected["object"]] == [
        "./momentum_lr01",
        "./sgd_noeval",
        "./momentum_twice",
    ]


def test_lineage_csv_and_paging(tmp_path: Path) -> None:
    base = copy_golden(tmp_path / "runs")
    code, out = run(
        "lineage", str(base), "--sort", "summary_dir", "--limit", "2", "--page", "1", "-f", "csv"
    )
    assert code == 0, out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["summary_dir"] for r in rows] == ["./momentum_twice", "./sgd_noeval"]
    assert rows[0]["loss"] == "0.6674657" and rows[1]["metric/Accuracy"] == ""
    assert rows[0]["user_defined/trial"] == "4"


def test_lineage_csv_takes_the_columns_in_their_order(tmp_path: Path) -> None:
    """--columns chooses csv's columns too: the run's summary_dir, then those named (the
    table's short labels and the run record's cells included)."""
    base = copy_golden(tmp_path / "runs")
    write_run(base, "ours", run=RunValues(status="failed"), learning_rate=0.5)
    code, out = run(
        "lineage", str(base), "-f", "csv", "-c", "metric/Accuracy,lr,status", "--sort", "lr"
    )
    assert code == 0, out
    table = list(csv.reader(io.StringIO(out)))
    assert table[0] == ["summary_dir", "metric/Accuracy", "learning_rate", "status"]
    assert table[-1][0] == "./ours" and table[-1][2:] == ["0.5", "failed"]
    assert all(len(row) == 4 and row[3] == "" for row in table[1:-1])  # (MindSpore's: no record)


def test_lineage_table_output(tmp_path: Path) -> None:
    base = copy_golden(tmp_path / "runs")
    code, out = run("lineage", str(base), "-w", "metric/Accuracy > 0.75")
    assert code == 0, out
    assert "momentum_lr01" in out and "momentum_twice" in out and "sgd_noeval" not in out
    assert "2 of 2 runs" in out and "Accuracy" in out


def test_the_table_shows_its_first_page_and_json_and_csv_every_run(
    tmp_path: Path, monkeypatch
) -> None:
    """Without --limit the table stops at TABLE_PAGE runs and says how to see the rest (a
    table of a 100,000-run base took minutes); json and csv still hold every run."""
    from trainledger.cli import lineage as lineage_cli

    base = copy_golden(tmp_path / "runs")
    monkeypatch.setattr(lineage_cli, "TABLE_PAGE", 3)
    code, out = run("lineage", str(base), "--sort", "learning_rate")
    assert code == 0, out
    assert "3 of 4 runs" in out
    assert "the first 3 shown: --limit 3 --page 1 for the next, --format csv or json" in out
    code, out = run("lineage", str(base), "--sort", "learning_rate", "-n", "3", "-p", "1")
    assert code == 0 and "1 of 4 runs" in out and "the first" not in out, out
    code, out = run("lineage", str(base), "-w", "metric/Accuracy > 0.75")  # (fits: no hint)
    assert code == 0 and "2 of 2 runs" in out and "the first" not in out, out
    code, out = run("lineage", str(base), "-f", "json")
    assert code == 0 and len(json.loads(out)["object"]) == 4
    code, out = run("lineage", str(base), "-f", "csv")
    assert code == 0 and len(list(csv.reader(io.StringIO(out)))) == 1 + 4


def test_lineage_errors_are_clean(tmp_path: Path) -> None:
    code, out = run("lineage", str(tmp_path), "-w", "bogus = 1")
    assert code == 1 and "unknown field 'bogus'" in out and "known:" in out
    code, out = run("lineage", str(tmp_path), "-w", "optimizer > Adam")
    assert code == 1 and "Its operation should be" in out
    code, out = run("lineage", str(tmp_path / "missing"))
    assert code == 1 and "does not exist" in out
    code, out = run("lineage", str(tmp_path), "--limit", "0")
    assert code == 1 and "0 < limit <= 100" in out


def test_show(tmp_path: Path) -> None:
    base = copy_golden(tmp_path / "runs")
    code, out = run("show", str(base / "momentum_lr01"), "--json")
    assert code == 0
    info = json.loads(out)
    assert info["hyper_parameters"]["optimizer"] == "Momentum"
    code, out = run("show", str(base / "momentum_lr01"))
    assert code == 0 and "Momentum" in out and "hyper_parameters" in out
    code, out = run("show", str(tmp_path))
    assert code == 1 and "no lineage" in out
    code, out = run("show", str(tmp_path / "missing"))
    assert code == 1 and "does not exist" in out


def test_render_table_reusable(tmp_path: Path) -> None:
    base = copy_golden(tmp_path / "runs")
    console = Console(record=True, width=200)
    render_table(filter_summary_lineage(str(base)), console, title="runs")
    text = console.export_text()
    assert "runs" in text and "4 of 4 runs" in text and "adam_lr001" in text


def test_relative_shell_paths_with_dotdot_work(tmp_path: Path, monkeypatch) -> None:
    base = copy_golden(tmp_path / "runs")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, out = run("lineage", "../runs", "-f", "json")
    assert code == 0 and json.loads(out)["count"] == 4
    code, out = run("show", "../runs/sgd_noeval", "--json")
    assert code == 0 and json.loads(out)["summary_dir"] == str((base / "sgd_noeval").resolve())
