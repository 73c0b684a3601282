"""Values and run names that hold control characters never drive the terminal: escape codes
and newlines are printed as escapes in the table and in ``show``; JSON and CSV stay exact."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from tests.runs import write_run
from trainledger.cli import cli

EVIL = "\x1b[2Jcleared\nfake row\x07[red]markup[/red]"


def test_table_and_show_escape_control_characters_and_exports_stay_exact(tmp_path: Path) -> None:
    write_run(tmp_path, "r\x1b[31mred", user={"note": EVIL}, learning_rate=0.1)
    write_run(tmp_path, "plain", user={"note": "fine"}, learning_rate=0.2)
    runner = CliRunner()
    table = runner.invoke(cli, ["lineage", str(tmp_path), "-c", "user_defined/note"])
    assert table.exit_code == 0, table.output
    assert "\x1b" not in table.output and "\x07" not in table.output
    assert "\\x1b[2Jcleared\\nfake row\\x07[red]markup[/red]" in table.output
    assert "r\\x1b[31mred" in table.output
    assert not any(line.startswith("fake row") for line in table.output.splitlines())
    shown = runner.invoke(cli, ["show", str(tmp_path / "r\x1b[31mred")])
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.output and "\\x1b[2Jcleared\\nfake row" in shown.output
    exported = runner.invoke(cli, ["lineage", str(tmp_path), "--format", "json"])
    values = {o["summary_dir"]: o for o in json.loads(exported.output)["object"]}
    assert values["./r\x1b[31mred"]["model_lineage"]["user_defined"]["note"] == EVIL
    as_csv = runner.invoke(cli, ["lineage", str(tmp_path), "--format", "csv"])
    cells = [c for row in csv.reader(io.StringIO(as_csv.output)) for c in row]
    assert EVIL in cells
