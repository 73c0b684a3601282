"""``status`` as a query field (issue 17) on runs the training host made: the CLI's --where and
--sort, ``filter_summary_lineage``, a run seen while running and again once finished, and the
typo suggestion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.trained import train_run
from trainledger.cli import cli
from trainledger.lineage.writer import clear_registry
from trainledger.query import filter_summary_lineage


@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    clear_registry()


def _dirs(result: dict[str, Any]) -> list[str]:
    return sorted(o["summary_dir"] for o in result["object"])


def _cli_dirs(base: Path, *args: str) -> list[str]:
    done = CliRunner().invoke(cli, ["lineage", str(base), "-f", "json", *args])
    assert done.exit_code == 0, done.output
    return [o["summary_dir"] for o in json.loads(done.output)["object"]]


@pytest.fixture
def base(tmp_path: Path) -> dict[str, Any]:
    """done (finished), boom (failed), halted (stopped) and live, queried at its step 3."""
    runs = tmp_path / "runs"
    train_run(runs, "done")
    train_run(runs, "boom", fail_at=3)
    train_run(runs, "halted", stop_at=2)
    seen: dict[str, Any] = {}

    def while_running() -> None:
        seen["api"] = _dirs(filter_summary_lineage(str(runs), {"status": {"eq": "running"}}))
        seen["cli"] = _cli_dirs(runs, "-w", "status = running")

    train_run(runs, "live", during=while_running)
    return {"runs": runs, "while_running": seen}


def test_a_running_run_matches_running_then_finished(base: dict[str, Any]) -> None:
    runs = base["runs"]
    assert base["while_running"] == {"api": ["./live"], "cli": ["./live"]}
    # the next query after the training ended: the index re-parsed the changed run
    assert _dirs(filter_summary_lineage(str(runs), {"status": {"eq": "running"}})) == []
    assert sorted(_cli_dirs(runs, "-w", "status = finished")) == ["./done", "./live"]


def test_status_filters_and_sorts_in_the_api_and_the_cli(base: dict[str, Any]) -> None:
    runs = base["runs"]
    api = filter_summary_lineage(str(runs), {"status": {"in": ["failed", "stopped"]}})
    assert _dirs(api) == ["./boom", "./halted"]
    assert all("status" not in o["model_lineage"] for o in api["object"])  # not MindInsight's
    assert sorted(_cli_dirs(runs, "-w", "status in [failed, stopped]")) == ["./boom", "./halted"]
    assert sorted(_cli_dirs(runs, "-w", "status != finished")) == ["./boom", "./halted"]
    assert _cli_dirs(runs, "-w", "status = failed", "-w", "lr = 0.1") == ["./boom"]
    ordered = filter_summary_lineage(
        str(runs), {"sorted_name": "status", "sorted_type": "descending"}
    )
    statuses = [o["summary_dir"] for o in ordered["object"]]
    assert statuses[0] == "./halted" and statuses[-1] == "./boom"  # stopped > ... > failed
    assert _cli_dirs(runs, "-s", "status")[0] == "./boom"


def test_the_table_of_a_status_filter(base: dict[str, Any]) -> None:
    done = CliRunner().invoke(cli, ["lineage", str(base["runs"]), "-w", "status = failed"])
    assert done.exit_code == 0, done.output
    rows = [line for line in done.output.splitlines() if line.startswith(("boom", "done"))]
    assert len(rows) == 1 and rows[0].split()[:2] == ["boom", "failed"]


def test_a_typo_names_status(tmp_path: Path) -> None:
    train_run(tmp_path / "runs", "done")
    done = CliRunner().invoke(cli, ["lineage", str(tmp_path / "runs"), "-w", "statsu = finished"])
    assert done.exit_code == 1
    assert "unknown field 'statsu'; did you mean 'status'?" in done.output
    done = CliRunner().invoke(cli, ["lineage", str(tmp_path / "runs"), "-s", "-statsu"])
    assert done.exit_code == 1 and "did you mean 'status'?" in done.output


def test_a_tag_set_with_the_cli_filters_the_table(base: dict[str, Any]) -> None:
    """``-w 'tag = 3'``: the CLI's field check accepted it, the query refused it (issue 17)."""
    from trainledger.query import LineageIndex

    runs = base["runs"]
    with LineageIndex(runs) as index:
        index.set_annotation("./halted", tag=3)
        index.set_annotation("./done", tag=1)
    assert _cli_dirs(runs, "-w", "tag = 3") == ["./halted"]
    assert sorted(_cli_dirs(runs, "-w", "tag >= 1")) == ["./done", "./halted"]
