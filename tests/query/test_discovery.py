"""Path safety and run discovery: base checks, NUL/.., symlinks, nesting, summary_dir values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.runs import write_run
from trainledger.errors import LineageFileNotFoundError, LineageParamSummaryPathError
from trainledger.query.discovery import discover
from trainledger.query.lineage_api import filter_summary_lineage
from trainledger.query.safe_paths import resolve_summary_dir


def dirs(result: dict) -> list[str]:
    return sorted(o["summary_dir"] for o in result["object"])


@pytest.mark.parametrize("bad", ["", "a\x00b", "../x", "x/../y", 5, None])
def test_bad_base_text(bad: object) -> None:
    with pytest.raises(LineageParamSummaryPathError):
        filter_summary_lineage(bad)  # type: ignore[arg-type]


def test_base_must_exist_and_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(LineageParamSummaryPathError, match="does not exist"):
        filter_summary_lineage(str(tmp_path / "missing"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(LineageParamSummaryPathError, match="not a directory"):
        filter_summary_lineage(str(tmp_path / "file"))


def test_empty_base_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(LineageFileNotFoundError, match="no summary log file"):
        filter_summary_lineage(str(tmp_path))
    write_run(tmp_path, "a")  # one run: the same base answers
    assert filter_summary_lineage(str(tmp_path))["count"] == 1


def test_base_itself_and_depth(tmp_path: Path) -> None:
    write_run(tmp_path, ".")
    write_run(tmp_path, "a")
    write_run(tmp_path / "group", "b")
    write_run(tmp_path / "group" / "deeper", "c")
    assert dirs(filter_summary_lineage(str(tmp_path))) == ["./", "./a"]
    assert dirs(filter_summary_lineage(str(tmp_path), max_depth=2)) == ["./", "./a", "./group/b"]
    assert dirs(filter_summary_lineage(str(tmp_path), max_depth=3)) == [
        "./",
        "./a",
        "./group/b",
        "./group/deeper/c",
    ]


def test_symlinks_outside_base_ignored_inside_followed_once(tmp_path: Path) -> None:
    base = tmp_path / "base"
    write_run(base, "real")
    outside = write_run(tmp_path / "elsewhere", "secret")
    os.symlink(outside, base / "link_out")
    os.symlink(base / "real", base / "link_in")
    os.symlink(tmp_path, base / "link_parent")
    found = discover(str(base.resolve()), max_depth=3)
    assert sorted(r.summary_dir for r in found) == ["./real"]
    # a symlinked lineage file is not read either
    run = base / "with_link_file"
    run.mkdir()
    target = next(outside.iterdir())
    os.symlink(target, run / target.name)
    assert dirs(filter_summary_lineage(str(base))) == ["./real"]


def test_in_base_symlink_to_unique_run_is_listed(tmp_path: Path) -> None:
    base = tmp_path / "base"
    write_run(base / "store", "x")
    os.symlink(base / "store" / "x", base / "x_link")
    assert dirs(filter_summary_lineage(str(base))) == ["./x_link"]


def test_summary_dir_condition_values(tmp_path: Path) -> None:
    write_run(tmp_path, "a")
    write_run(tmp_path, "b")
    base = str(tmp_path)
    assert dirs(filter_summary_lineage(base, {"summary_dir": {"eq": "./a"}})) == ["./a"]
    assert dirs(filter_summary_lineage(base, {"summary_dir": {"eq": "a"}})) == ["./a"]
    absolute = {"summary_dir": {"in": [str(tmp_path / "a"), str(tmp_path / "b")]}}
    assert dirs(filter_summary_lineage(base, absolute)) == ["./a", "./b"]
    for bad in ("/etc", "../a", "./a/../../x", "a\x00"):
        with pytest.raises(LineageParamSummaryPathError):
            filter_summary_lineage(base, {"summary_dir": {"in": [bad]}})


def test_resolve_summary_dir(tmp_path: Path) -> None:
    base = str(tmp_path)
    assert resolve_summary_dir(base, "./x/") == "./x"
    assert resolve_summary_dir(base, base) == "./"
    assert resolve_summary_dir(base, "/elsewhere") is None


def test_temp_files_and_non_lineage_names_ignored(tmp_path: Path) -> None:
    run = write_run(tmp_path, "a")
    (run / "events.out.events.summary.1.0.h_lineage.tl-tmp-1-abcd").write_bytes(b"x")
    (run / "notes_lineage").write_bytes(b"x")
    (found,) = discover(str(tmp_path.resolve()))
    assert len(found.files) == 1


def test_max_depth_validation(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_depth"):
        filter_summary_lineage(str(tmp_path), max_depth=-1)


def _age(path: Path, seconds: float) -> None:
    t = os.stat(path).st_mtime - seconds
    os.utime(path, (t, t))


def test_scanner_racy_listing_is_not_trusted(tmp_path: Path) -> None:
    """A file added in the same mtime tick as the listing is still found next scan."""
    from trainledger.query.discovery import Scanner

    run = write_run(tmp_path, "a")
    scanner = Scanner(str(tmp_path.resolve()))
    (first,) = scanner.scan()
    mtime = os.stat(run).st_mtime_ns
    write_run(tmp_path, "a", seq=1, ts=1_800_000_001)  # a second lineage file
    os.utime(run, ns=(mtime, mtime))  # same directory mtime as when listed
    (second,) = scanner.scan()
    assert len(first.files) == 1 and len(second.files) == 2


def test_new_process_reuses_saved_listings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainledger.query import discovery
    from trainledger.query.index import LineageIndex

    for i in range(3):
        write_run(tmp_path, f"r{i}")
    with LineageIndex(tmp_path) as index:  # creates .trainledger/ in the base
        for path in [*tmp_path.iterdir(), tmp_path]:
            _age(path, 100)
        index.refresh()  # lists every directory (taken long after their last change: trusted)
    calls: list[str] = []
    real_list = discovery.Scanner._list
    monkeypatch.setattr(
        discovery.Scanner, "_list", lambda self, p, m: calls.append(str(p)) or real_list(self, p, m)
    )
    with LineageIndex(tmp_path) as fresh:
        assert fresh.refresh().parsed == 0
        assert calls == []  # only stats: nothing listed again
        write_run(tmp_path, "r1", seq=1, ts=1_800_000_001, train=False, metrics={"acc": 1.0})
        _age(tmp_path / "r1", 50)
        assert fresh.refresh().parsed == 1
        assert calls == [str(tmp_path.resolve() / "r1")]
        assert fresh.query({"metric/acc": {"eq": 1.0}})["count"] == 1


def test_files_of_exited_writers_are_not_stat_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    from trainledger.query import discovery
    from trainledger.storage import lineage_file_name

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    run = tmp_path / "r"
    run.mkdir()
    live = run / lineage_file_name(1_800_000_000, 0, None, child.pid, 0)
    live.write_bytes(b"x")
    mindspore = run / "events.out.events.summary.1800000001.0.vm_lineage"
    mindspore.write_bytes(b"y")
    _age(run, 100)
    stats: list[str] = []
    real_stat = os.stat
    monkeypatch.setattr(
        discovery.os, "stat", lambda p, **kw: (stats.append(str(p)), real_stat(p, **kw))[1]
    )
    scanner = discovery.Scanner(str(tmp_path.resolve()))
    try:
        scanner.scan()
        with open(live, "ab") as fh:  # the live writer appends: seen
            fh.write(b"more")
        (found,) = scanner.scan()
        assert dict((n, s) for n, s, _ in found.files)[live.name] == 5
    finally:
        child.kill()
        child.wait()
    scanner.scan()  # writer gone: this stat is the file's last
    live_path, mindspore_path = str(live.resolve()), str(mindspore.resolve())
    stats.clear()
    (found,) = scanner.scan()
    assert live_path not in [os.path.realpath(p) for p in stats]  # final: not stat'ed again
    assert mindspore_path in [os.path.realpath(p) for p in stats]  # unknown writer
    assert dict((n, s) for n, s, _ in found.files)[live.name] == 5


def test_final_files_are_remembered_by_new_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    from trainledger.query import discovery
    from trainledger.query.index import LineageIndex
    from trainledger.storage import lineage_file_name, machine_name

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    run = write_run(tmp_path, "r", metrics={"acc": 0.5})
    (src,) = run.iterdir()
    final = run / lineage_file_name(1_800_000_000, 0, None, int(dead.stdout), 0)
    src.rename(final)
    # an event file of the same exited writer (its statistics are indexed too): final as well
    events = run / f"events.out.tfevents.1800000000.{machine_name()}.{int(dead.stdout)}.0"
    events.write_bytes(b"")
    with LineageIndex(tmp_path) as index:
        for path in (run, tmp_path):
            _age(path, 100)
        index.refresh()
        index.refresh()  # the writer is gone: the listing is settled and saved
    final_path, run_path = str(final.resolve()), str(run.resolve())
    stats: list[str] = []
    real_stat = os.stat
    monkeypatch.setattr(
        discovery.os,
        "stat",
        lambda p, **kw: (stats.append(os.path.realpath(p)), real_stat(p, **kw))[1],
    )
    with LineageIndex(tmp_path) as fresh:
        assert fresh.query({"metric/acc": {"eq": 0.5}})["count"] == 1
    monkeypatch.undo()
    assert final_path not in stats  # remembered as final: only its directory is stat'ed
    assert str(events.resolve()) not in stats
    assert run_path in stats


def test_stable_fast_path_still_sees_new_and_removed_runs(tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    from trainledger.query.discovery import Scanner
    from trainledger.storage import lineage_file_name

    dead = int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )

    def finished_run(name: str) -> None:
        run = write_run(tmp_path, name)
        (src,) = run.iterdir()
        src.rename(run / lineage_file_name(1_800_000_000, 0, None, dead, 0))
        _age(run, 100)

    finished_run("a")
    finished_run("b")
    _age(tmp_path, 100)
    scanner = Scanner(str(tmp_path.resolve()))
    first = scanner.scan()
    assert scanner.scan() is first  # nothing but directory stats: the same answer
    finished_run("c")
    _age(tmp_path, 50)
    assert sorted(r.summary_dir for r in scanner.scan()) == ["./a", "./b", "./c"]
    shutil.rmtree(tmp_path / "a")
    _age(tmp_path, 40)
    assert sorted(r.summary_dir for r in scanner.scan()) == ["./b", "./c"]
