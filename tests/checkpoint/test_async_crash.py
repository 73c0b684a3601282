"""Issue 16 item 5: process-mode async saves killed as a group leave nothing in /dev/shm.

The snapshot used to be a named POSIX segment (``/dev/shm/psm_*``) that outlived every SIGKILL
of the process group; it is now anonymous memory (``SnapshotMemory``) the kernel frees with the
last process holding it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import trainledger
from trainledger.checkpoint.async_save import ProcessSaver

SHM = Path("/dev/shm")
SNAP = 3_141_568  # a snapshot size nothing else uses: a leaked segment is recognised by it

TRAINER = r"""
import sys
from pathlib import Path

import torch

from trainledger.checkpoint.async_save import ProcessSaver

directory, size = Path(sys.argv[1]), int(sys.argv[2])
directory.mkdir(parents=True, exist_ok=True)
saver = ProcessSaver()
state = [("w", torch.arange(size, dtype=torch.uint8))]
i = 0
while True:
    saver.save(directory / f"s{i % 3}.ckpt", state, {"i": i})
    if i == 0:
        print("saving", flush=True)
    saver.wait()
    i += 1
"""


def _leaked() -> list[str]:
    out = []
    for entry in os.scandir(SHM):
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat().st_size == SNAP:
                out.append(entry.name)
        except FileNotFoundError:
            continue
    return out


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies hold no memory)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            raw = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


@pytest.mark.slow
@pytest.mark.skipif(not SHM.is_dir() or sys.platform != "linux", reason="needs /dev/shm")
def test_group_kills_of_process_saves_leave_nothing_in_dev_shm(tmp_path: Path) -> None:
    assert _leaked() == []
    env = dict(os.environ)
    root = str(Path(trainledger.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    rng = random.Random(16)
    for batch in range(4):  # 4 x 5 = 20 group kills; 5 trainers at a time to save wall time
        trainers = [
            subprocess.Popen(
                [sys.executable, "-c", TRAINER, str(tmp_path / f"{batch}-{i}"), str(SNAP)],
                stdout=subprocess.PIPE,
                env=env,
                start_new_session=True,  # its own process group, writer child included
            )
            for i in range(5)
        ]
        for trainer in trainers:
            assert trainer.stdout is not None and trainer.stdout.readline() == b"saving\n"
            time.sleep(rng.uniform(0.0, 0.2))  # mid-save or between saves
            os.killpg(trainer.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        for trainer in trainers:
            trainer.wait()
            trainer.stdout.close()  # type: ignore[union-attr]
            while _group_alive(trainer.pid):
                assert time.monotonic() < deadline, "a writer process outlived the kill"
                time.sleep(0.02)
        assert _leaked() == [], f"batch {batch}: a snapshot was left in /dev/shm"


def test_process_saver_memory_is_anonymous_and_freed_on_close(tmp_path: Path) -> None:
    """No name in /dev/shm at any time; the descriptor is closed by close()."""
    torch = pytest.importorskip("torch")
    saver = ProcessSaver()
    try:
        saver.save(tmp_path / "a.ckpt", [("w", torch.zeros(SNAP, dtype=torch.uint8))], {})
        assert _leaked() == []
        memory = saver._memory
        assert memory is not None and os.readlink(f"/proc/self/fd/{memory.fd}").startswith(
            ("/memfd:", "/tmp")
        )
        assert saver.wait() == tmp_path / "a.ckpt"
    finally:
        saver.close()
    assert saver._memory is None and memory.fd == -1
