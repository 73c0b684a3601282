"""The lineage table at normal terminal widths: no number cut, no line too long, the columns
that tell runs apart first; typos named with suggestions; hints that run as printed."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from tests.runs import make_base, sample_run
from trainledger.cli import cli, cli_command, render_table
from trainledger.errors import LineageSearchConditionParamError
from trainledger.query import filter_summary_lineage, flatten_object, parse_where

NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]?\d+)?")


def _base(tmp_path: Path) -> Path:
    base = make_base(tmp_path / "runs", n=6, scalars=0)
    for i in range(6, 9):  # long names, and values that need their digits
        sample_run(base, f"a_rather_long_run_name_{i}_with_suffix", i, learning_rate=0.000123456)
    return base


@pytest.mark.parametrize("width", [80, 120])
def test_the_table_fits_the_terminal_and_never_cuts_a_number(tmp_path: Path, width: int) -> None:
    result = filter_summary_lineage(str(_base(tmp_path)), {"limit": 100})
    console = Console(width=width, force_terminal=True, record=True, color_system=None)
    render_table(result, console, title="lineage")
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, text
    at = next(i for i, line in enumerate(lines) if line.startswith("run "))
    header = lines[at].split()
    assert header[:2] == ["run", "accuracy"]  # the run, then the metrics
    body = lines[at + 1 : at + 1 + len(result["object"])]
    for line, obj in zip(body, result["object"], strict=True):
        flat = flatten_object(obj)
        assert f"{flat['metric/accuracy']:.6g}" in line  # the metric, whole
        if "lr" in header:
            assert f"{flat['learning_rate']:.6g}" in line
    assert "9 of 9 runs" in text
    assert "same in all:" in text and "network=MLP" in text  # constant fields in one line


def test_narrow_terminals_name_what_they_leave_out(tmp_path: Path) -> None:
    result = filter_summary_lineage(str(_base(tmp_path)), {"limit": 100})
    console = Console(width=40, force_terminal=True, record=True, color_system=None)
    render_table(result, console)
    text = console.export_text()
    assert "not shown:" in text and "--columns" in text
    assert max(len(line) for line in text.splitlines() if not line.startswith("not shown")) <= 40


def test_columns_option_chooses_and_typos_get_suggestions(tmp_path: Path) -> None:
    base = _base(tmp_path)
    runner = CliRunner()
    done = runner.invoke(cli, ["lineage", str(base), "--columns", "optimizer,metric/accuracy"])
    assert done.exit_code == 0, done.output
    header = next(x for x in done.output.splitlines() if x.startswith("run ")).split()
    assert header == ["run", "optimizer", "accuracy"]
    done = runner.invoke(cli, ["lineage", str(base), "--columns", "lr,batch,metric/accuracy"])
    assert done.exit_code == 0, done.output  # the short labels, as --where takes them
    header = next(x for x in done.output.splitlines() if x.startswith("run ")).split()
    assert header == ["run", "lr", "batch", "accuracy"]
    done = runner.invoke(cli, ["lineage", str(base), "--columns", "optimzer"])
    assert done.exit_code == 1 and "did you mean 'optimizer'" in done.output
    done = runner.invoke(cli, ["lineage", str(base), "--sort", "-metric/acc"])
    assert done.exit_code == 1 and "'metric/acc'" in done.output
    assert "did you mean 'metric/accuracy'" in done.output


def test_a_misspelt_sort_or_a_word_for_a_number_is_named(tmp_path: Path) -> None:
    """``--sort -acuracy`` is offered the base's ``metric/accuracy``, never ``metric/acuracy``
    (the misspelt name itself); ``lr > abc`` says that ``abc`` is not a number."""
    base = str(_base(tmp_path))
    runner = CliRunner()
    done = runner.invoke(cli, ["lineage", base, "--sort", "-acuracy"])
    assert done.exit_code == 1 and "did you mean 'metric/accuracy'?" in done.output
    assert "metric/acuracy" not in done.output and "user_defined/acuracy" not in done.output
    done = runner.invoke(cli, ["lineage", base, "-w", "lr > abc"])
    assert done.exit_code == 1 and "'abc', which is not a number" in done.output
    assert "should be a dict" not in done.output


def test_where_errors_name_the_field_and_the_operator() -> None:
    with pytest.raises(LineageSearchConditionParamError, match="did you mean 'optimizer'"):
        parse_where(["optimzer = Adam"])
    with pytest.raises(LineageSearchConditionParamError, match="unknown operator '>>'") as err:
        parse_where(["learning_rate >> 0.1"])
    assert "dict" not in str(err.value)
    with pytest.raises(LineageSearchConditionParamError, match="did you mean 'learning_rate'"):
        parse_where([], sort="-lerning_rate")
    assert parse_where(["lr > 0.1"]) == parse_where(["learning_rate > 0.1"])  # the table's label
    with pytest.raises(
        LineageSearchConditionParamError,
        match="did you mean 'metric/accuracy' or 'user_defined/accuracy'",
    ):  # the table shows a metric without its prefix
        parse_where(["accuracy > 0.9"])


def test_a_filter_that_matches_nothing_says_so(tmp_path: Path) -> None:
    base = str(_base(tmp_path))
    done = CliRunner().invoke(cli, ["lineage", base, "-w", "epoch > 100"])
    assert done.exit_code == 0 and done.output.startswith("no run under ")
    done = CliRunner().invoke(cli, ["lineage", base, "--limit", "4", "--page", "3"])
    assert done.exit_code == 0, done.output  # 9 runs: pages 0-2
    assert done.output.startswith("page 3 is past the last: 9 runs under ")
    assert "4 a page (pages 0-2)" in done.output


def test_the_printed_command_runs_as_printed() -> None:
    words = shlex.split(cli_command())
    done = subprocess.run([*words, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "trainledger" in done.stdout.lower() + done.stderr.lower()


def test_show_reads_like_a_record(tmp_path: Path) -> None:
    base = _base(tmp_path)
    runner = CliRunner(env={"COLUMNS": "80"})
    done = runner.invoke(cli, ["show", str(base / "run02")])
    assert done.exit_code == 0, done.output
    text = done.output
    assert "1.79" not in text and re.search(r"\b20\d\d-\d\d-\d\d \d\d:\d\d:\d\d\b", text)
    from trainledger.cli.show_render import _show_value

    assert _show_value("duration", 12.34) == "12.3 s"
    assert _show_value("duration", 125.0) == "2 min 5 s"
    assert _show_value("duration", 7384.0) == "2 h 3 min"
    ckpt = str(base / "run02" / "ckpt" / "mlp-3_30.ckpt")
    assert ckpt.replace("/", "") in text.replace("\n", "").replace(" ", "").replace("/", "")
    assert '{"ckpt"' not in text  # the model path as a path, not a JSON string
    assert "…" not in text  # nothing cut


def test_show_on_a_base_says_to_use_lineage(tmp_path: Path) -> None:
    base = _base(tmp_path)
    done = CliRunner().invoke(cli, ["show", str(base)])
    assert done.exit_code == 1 and "holds runs" in done.output and " lineage " in done.output


def test_ui_on_a_busy_port_fails_before_saying_it_serves(tmp_path: Path) -> None:
    import socket

    base = _base(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = CliRunner().invoke(cli, ["ui", str(base), "--port", str(port)])
    assert done.exit_code == 1
    assert "serving" not in done.output and f"127.0.0.1:{port}" in done.output
    assert "--port" in done.output


def test_the_table_shows_status_steps_and_checkpoint(tmp_path: Path) -> None:
    base = make_base(tmp_path / "runs", n=2, scalars=0)
    sample_run(base, "live", 3, status="running")
    done = CliRunner().invoke(cli, ["lineage", str(base)])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    header = next(x for x in lines if x.startswith("run ")).split()
    assert header[:2] == ["run", "status"] and "checkpoint" in header
    live = next(x for x in lines if x.startswith("live "))
    assert "running" in live and "mlp-1_40.ckpt" in live
    assert any(x.startswith("run00 ") and "finished" in x for x in lines)


def test_large_counts_are_written_with_thousands_separators(tmp_path: Path) -> None:
    result = filter_summary_lineage(str(_base(tmp_path)), {"limit": 1})
    console = Console(width=120, force_terminal=True, record=True, color_system=None)
    render_table({**result, "count": 123456}, console)
    assert "1 of 123,456 runs" in console.export_text()


def test_text_columns_take_the_room_a_wide_terminal_leaves(tmp_path: Path) -> None:
    """Widths are laid out here, not measured by rich: with room, every run name is whole;
    at 80 columns the long ones end in an ellipsis and every number stays whole."""
    result = filter_summary_lineage(str(_base(tmp_path)), {"limit": 100})
    names = [flatten_object(o)["summary_dir"].removeprefix("./") for o in result["object"]]
    wide = Console(width=250, force_terminal=True, record=True, color_system=None)
    render_table(result, wide)
    text = wide.export_text()
    assert all(name in text for name in names) and "…" not in text
    narrow = Console(width=80, force_terminal=True, record=True, color_system=None)
    render_table(result, narrow)
    lines = narrow.export_text().splitlines()
    assert any("…" in line for line in lines)
    assert max(len(line) for line in lines) <= 80


def test_show_gives_sessions_as_dates_and_paths_whole_off_a_terminal(tmp_path: Path) -> None:
    from tests.runs import write_run
    from trainledger.lineage import RunValues

    deep = tmp_path / ("a-rather-long-folder-name-for-a-team-share-" * 3)
    ckpt = deep / "checkpoints" / "model-with-a-long-descriptive-prefix-12_3400.ckpt"
    sessions = [
        {"start_time": 1_790_000_000.0, "end_time": 1_790_000_600.0, "first_step": 1,
         "last_step": 25, "hostname": "gpu-a", "pid": 11},
        {"start_time": 1_790_003_600.0, "end_time": 1_790_004_800.0, "first_step": 21,
         "last_step": 60, "hostname": "gpu-b", "pid": 12},
    ]  # fmt: skip
    run = RunValues(status="finished", sessions=sessions, checkpoints=[(str(ckpt), 10)])
    write_run(deep, "resumed", model_path=json.dumps({"ckpt": str(ckpt)}), run=run)
    done = CliRunner().invoke(cli, ["show", str(deep / "resumed")])  # output is not a terminal
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert any(str(ckpt) in line for line in lines), done.output  # one line, never cut
    rows = [line.split() for line in lines if line.split()[:1] in (["1"], ["2"])]
    assert [r[5:] for r in rows] == [["10", "min", "0", "s", "1-25", "gpu-a", "11"],
                                     ["20", "min", "0", "s", "21-60", "gpu-b", "12"]]  # fmt: skip
    for row in rows:  # start and end as local date-times
        assert re.fullmatch(r"20\d\d-\d\d-\d\d", row[1]) and re.fullmatch(r"\d\d:\d\d:\d\d", row[2])
    assert "1790000000" not in done.output
