"""atomic_write: all-or-nothing files, temp names, sweeping after a crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainledger.storage import (
    TEMP_MARKER,
    atomic_write,
    atomic_write_bytes,
    is_temp_name,
    scan_dir,
    sweep_temp_files,
)


def test_write_replaces_target_completely(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    target.write_bytes(b"old contents that are longer")
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["a.bin"]


def test_writer_function_form(tmp_path: Path) -> None:
    target = tmp_path / "b.bin"
    atomic_write_bytes(target, lambda fh: fh.write(b"x" * 10))
    assert target.read_bytes() == b"x" * 10


def test_exception_leaves_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "c.bin"
    target.write_bytes(b"committed")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as fh:
            fh.write(b"partial")
            raise RuntimeError("interrupted")
    assert target.read_bytes() == b"committed"
    assert [p.name for p in tmp_path.iterdir()] == ["c.bin"]


def test_temp_names_are_recognised() -> None:
    assert is_temp_name(f"CKP-1_2.ckpt{TEMP_MARKER}123-deadbeef")
    assert not is_temp_name("CKP-1_2.ckpt")
    assert not is_temp_name(f"CKP{TEMP_MARKER}x.ckpt")


def test_sweep_removes_crash_leftovers_of_dead_processes_only(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)
    stale = tmp_path / f"CKP-1_1.ckpt{TEMP_MARKER}{dead_pid}-00ff00ff"
    stale.write_bytes(b"half")
    live_parent = tmp_path / f"CKP-1_2.ckpt{TEMP_MARKER}{os.getppid()}-00ff00ff"
    live_parent.write_bytes(b"in progress elsewhere")
    other_prefix = tmp_path / f"OTHER-1_1.ckpt{TEMP_MARKER}{dead_pid}-00ff00ff"
    other_prefix.write_bytes(b"not ours")
    keep = tmp_path / "CKP-1_3.ckpt"
    keep.write_bytes(b"done")

    removed = sweep_temp_files(tmp_path, prefix="CKP")

    assert removed == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [live_parent.name, other_prefix.name, keep.name]
    )


def test_sweep_of_missing_directory_is_empty(tmp_path: Path) -> None:
    assert sweep_temp_files(tmp_path / "nope") == []


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_exclusive_lock_excludes_a_second_holder(tmp_path: Path, kind: str) -> None:
    import threading
    import time

    from trainledger.storage import exclusive_lock

    target = tmp_path / "x.lock" if kind == "file" else tmp_path / "rundir"
    if kind == "directory":
        target.mkdir()
    events: list[str] = []
    held = threading.Event()

    def holder() -> None:
        with exclusive_lock(target):
            events.append("first in")
            held.set()
            time.sleep(0.2)
            events.append("first out")

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(5)
    with exclusive_lock(target):  # waits for the holder (flock is per open file description)
        events.append("second in")
    t.join(5)
    assert events == ["first in", "first out", "second in"]
    if kind == "directory":
        assert list(target.iterdir()) == []  # a directory lock leaves nothing behind


def test_scan_dir_missing_is_empty_other_errors_raise(tmp_path: Path) -> None:
    assert scan_dir(tmp_path / "not-yet") == []
    (tmp_path / "a.bin").write_bytes(b"x")
    assert [e.name for e in scan_dir(tmp_path)] == ["a.bin"]
    with pytest.raises(NotADirectoryError):
        scan_dir(tmp_path / "a.bin")


# --- issue 16 item 9: a killed writer is gone even while a zombie, or when its pid is reused --

_HOLD_TEMPS = """
import contextlib, sys, time
from trainledger.storage import atomic_write
with contextlib.ExitStack() as stack:
    for i in range(int(sys.argv[2])):
        stack.enter_context(atomic_write(f"{sys.argv[1]}/CKP-1_{i}.ckpt")).write(b"half")
    print("ready", flush=True)
    time.sleep(120)
"""


def _exited_unreaped(pid: int) -> bool:
    """A zombie whose threads have all exited too (numpy's threads outlive the leader by a
    moment, and hold the process's files until then)."""
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    state = raw[raw.rfind(b")") + 2 :].split()[0].decode()
    return state == "Z" and len(os.listdir(f"/proc/{pid}/task")) <= 1


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_temp_files_of_a_killed_unreaped_writer_are_swept(tmp_path: Path) -> None:
    """Kill a writer holding 6 temp files and sweep before anyone reaps it (a restart within
    seconds of a group kill): the zombie is not taken for a live writer."""
    import signal
    import time

    from trainledger.storage import pid_alive, writer_alive

    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_TEMPS, str(tmp_path), "6"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        temps = sorted(tmp_path.iterdir())
        assert len(temps) == 6 and all(is_temp_name(p.name) for p in temps)
        assert all(writer_alive(p, child.pid) for p in temps)
        assert sweep_temp_files(tmp_path, prefix="CKP") == []  # live writer: left alone
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not _exited_unreaped(child.pid):  # not reaped: Popen.wait is not called yet
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not pid_alive(child.pid)
        assert sorted(sweep_temp_files(tmp_path, prefix="CKP")) == temps
        assert list(tmp_path.iterdir()) == []
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_a_reused_pid_is_not_the_writer(tmp_path: Path) -> None:
    """A temp file (unlocked, as an older version wrote them) whose pid now belongs to a
    process that started after the file was last written is a crash leftover."""
    import time

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        reused = tmp_path / f"CKP-1_1.ckpt{TEMP_MARKER}{other.pid}-00ff00ff"
        reused.write_bytes(b"half")
        past = time.time() - 600
        os.utime(reused, (past, past))
        ours_before = tmp_path / f"CKP-1_2.ckpt{TEMP_MARKER}{other.pid}-11ff00ff"
        ours_before.write_bytes(b"written after the process started")
        assert sweep_temp_files(tmp_path, prefix="CKP") == [reused]
        assert [p.name for p in tmp_path.iterdir()] == [ours_before.name]
    finally:
        other.kill()
        other.wait()


def test_own_in_progress_write_is_not_swept(tmp_path: Path) -> None:
    """The lock also protects a write in progress in this very process (another thread)."""
    target = tmp_path / "CKP-1_1.ckpt"
    with atomic_write(target) as fh:
        fh.write(b"in progress")
        assert sweep_temp_files(tmp_path, prefix="CKP") == []
    assert target.read_bytes() == b"in progress"
