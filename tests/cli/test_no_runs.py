"""`trainledger lineage` over a base without runs answers "no runs under BASE"."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from trainledger.cli.main import cli


def test_lineage_of_a_base_without_runs(tmp_path: Path) -> None:
    (tmp_path / "not-a-run").mkdir()
    result = CliRunner().invoke(cli, ["lineage", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().startswith(f"no runs under {tmp_path} (")


def test_lineage_json_of_a_base_without_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["lineage", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"customized": {}, "object": [], "count": 0}
    assert result.stderr.strip().startswith(f"no runs under {tmp_path} (")


def test_bad_base_still_fails(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["lineage", str(tmp_path / "missing")])
    assert result.exit_code != 0
    assert "The summary path does not exist or is not a dir." in result.output
