"""``trainledger archive | restore | delete | audit`` on a real base."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tests.runs import make_base
from trainledger.cli import cli
from trainledger.query import filter_summary_lineage


def _count(base: Path) -> int:
    return int(filter_summary_lineage(str(base))["count"])


def test_archive_asks_first_then_moves_and_audits(tmp_path: Path) -> None:
    base = make_base(tmp_path / "b", n=3, scalars=0)
    runner = CliRunner()
    refused = runner.invoke(cli, ["archive", str(base), "run00"], input="n\n")
    assert refused.exit_code == 1 and _count(base) == 3  # aborted: nothing moved
    done = runner.invoke(cli, ["archive", str(base), "run00", "run01"], input="y\n")
    assert done.exit_code == 0, done.output
    assert _count(base) == 1
    assert runner.invoke(cli, ["restore", str(base), "run01"]).exit_code == 0
    assert _count(base) == 2
    done = runner.invoke(cli, ["delete", str(base), "run00", "--archived", "--yes"])
    assert done.exit_code == 0, done.output
    assert not (base / ".trainledger-archive" / "run00").exists()
    log = runner.invoke(cli, ["audit", str(base)])
    assert log.exit_code == 0
    lines = log.output.splitlines()
    assert [line.split()[2] for line in lines] == ["archive", "archive", "restore", "delete"]
    assert all(line.split()[1].startswith("cli:") for line in lines)


def test_a_bad_run_is_a_clear_error(tmp_path: Path) -> None:
    base = make_base(tmp_path / "b", n=1, scalars=0)
    done = CliRunner().invoke(cli, ["delete", str(base), "../x", "--yes"])
    assert done.exit_code == 1 and "expected a run id relative to the base" in done.output
    assert _count(base) == 1
