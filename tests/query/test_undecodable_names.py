"""A run folder whose name is not UTF-8 (old NFS shares, other tools) is listed under an id
with each such byte written ``%XX`` (a literal ``%`` as ``%25``) that resolves back to the
folder, in Python, the CLI, the UI and PostgreSQL; every other run is answered as before,
and a long-lived process keeps answering once the folder is gone."""

from __future__ import annotations

import json
import os
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.runs import sample_run
from tests.server.browser_support import LiveServer
from trainledger.cli import cli
from trainledger.query import LineageIndex, delete_run, filter_summary_lineage, get_summary_lineage
from trainledger.storage import id_of_name, name_of_id

RAW = b"r\xff%41un\xe9"  # two bytes that are not UTF-8, and a literal "%41"
ID = "r%FF%2541un%E9"


def _base(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / "base"
    sample_run(base, "good", 0, scalars=3)
    made = sample_run(base, "odd", 1, scalars=3)
    odd = Path(os.fsdecode(os.fsencode(base) + b"/" + RAW))
    os.rename(made, odd)
    return base, odd


@pytest.mark.parametrize(
    "raw", [b"plain", b"caf\xc3\xa9", b"a%b", b"%25", b"\xff", b"\xe9%E9", b"x\x80y"]
)
def test_ids_are_valid_text_and_resolve_back(raw: bytes) -> None:
    name = os.fsdecode(raw)
    run_id = id_of_name(name)
    run_id.encode("utf-8")  # valid text: SQLite, PostgreSQL, JSON and URLs take it
    assert name_of_id(run_id) == name
    assert os.fsencode(name_of_id(run_id)) == raw


def test_no_escape_spells_a_step_out() -> None:
    assert name_of_id("%2E%2E") == "%2E%2E" and name_of_id("%2F") == "%2F"


def test_python_lists_it_under_its_id_and_reads_it_back(tmp_path: Path) -> None:
    base, odd = _base(tmp_path)
    found = filter_summary_lineage(str(base), {"sorted_name": "summary_dir"})
    assert [o["summary_dir"] for o in found["object"]] == ["./good", f"./{ID}"]
    one = filter_summary_lineage(str(base), {"summary_dir": {"eq": str(odd)}})
    assert [o["summary_dir"] for o in one["object"]] == [f"./{ID}"]
    assert get_summary_lineage(str(odd))["summary_dir"] == str(odd)
    assert delete_run(base, f"./{ID}")[0] == str(odd)
    assert not odd.exists() and (base / "good").is_dir()


def test_a_long_lived_index_answers_before_and_after_the_folder_goes(tmp_path: Path) -> None:
    base, odd = _base(tmp_path)
    with LineageIndex(base) as index:
        assert index.query()["count"] == 2
        shutil.rmtree(odd)
        assert [o["summary_dir"] for o in index.query()["object"]] == ["./good"]
    with LineageIndex(base) as index:  # a new process's warm start
        assert index.query()["count"] == 1


def test_the_cli_lists_it(tmp_path: Path) -> None:
    base, _ = _base(tmp_path)
    done = CliRunner().invoke(cli, ["lineage", str(base), "--format", "json"])
    assert done.exit_code == 0, done.output
    assert sorted(o["summary_dir"] for o in json.loads(done.output)["object"]) == [
        "./good",
        f"./{ID}",
    ]


def test_the_ui_lists_it_and_opens_its_page(tmp_path: Path) -> None:
    base, _ = _base(tmp_path)
    server = LiveServer(base).start()
    try:
        request = urllib.request.Request(
            f"{server.url}api/v1/runs", data=b"{}", headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            ids = sorted(o["run_id"] for o in json.loads(answer.read())["object"])
        assert ids == ["good", ID]
        quoted = urllib.parse.quote(ID, safe="")
        with urllib.request.urlopen(f"{server.url}api/v1/runs/{quoted}", timeout=30) as answer:
            detail = json.loads(answer.read())
        assert detail["run_id"] == ID and detail["lineage"]["metric"]
        series = f"{server.url}api/v1/scalars/tags?run={quoted}"
        with urllib.request.urlopen(series, timeout=30) as answer:
            assert answer.status == 200
    finally:
        server.stop()


@pytest.mark.slow
def test_postgresql_holds_it(tmp_path: Path, pg_url: str) -> None:
    base, _ = _base(tmp_path)
    with LineageIndex(base, index=pg_url) as index:
        assert sorted(o["summary_dir"] for o in index.query()["object"]) == ["./good", f"./{ID}"]


def test_file_names_that_are_not_utf8_inside_runs_are_read(tmp_path: Path) -> None:
    """Names of lineage and event files too (a host name in a file name, another tool's)."""
    from torch.utils.tensorboard import SummaryWriter

    base = tmp_path / "base"
    sample_run(base, "good", 0, scalars=3)
    odd = sample_run(base, "odd", 1, scalars=3)
    for path in list(odd.glob("events.*")):  # the host in each file name: another machine's
        raw = os.fsencode(path)
        host = raw.rsplit(b"/", 1)[1].split(b".")[-3]
        os.rename(raw, raw.replace(b"." + host + b".", b"." + host + b"\xff."))
    tb = base / "tb"
    with SummaryWriter(str(tb)) as writer:
        writer.add_scalar("loss", 1.5, 1)
    for path in list(tb.iterdir()):
        os.rename(os.fsencode(path), os.fsencode(path) + b"\xfe")
    found = filter_summary_lineage(
        str(base), {"sorted_name": "summary_dir", "series": ["max(loss)"]}
    )
    assert [o["summary_dir"] for o in found["object"]] == ["./good", "./odd", "./tb"]
    assert found["object"][1]["model_lineage"]["optimizer"] == "SGD"  # its lineage was read
    assert any(
        b"\xff" in os.fsencode(p.name) and p.name.endswith("_lineage") for p in odd.iterdir()
    )
    assert found["object"][2]["series"]["max(loss)"] == 1.5
    with LineageIndex(base) as index:  # a new process, warm from what the first one saved
        assert index.query()["count"] == 3
