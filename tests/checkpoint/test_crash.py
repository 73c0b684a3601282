"""Crash safety: a writer killed with SIGKILL at random moments never leaves a half-written file
under a final name, the newest complete checkpoint always loads and verifies, and the next start
sweeps the temp files. The child uses the byte-level format (numpy, no torch) to start fast;
every third checkpoint is encrypted, so sealed files are covered too."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import trainledger
from trainledger.checkpoint import latest_checkpoint
from trainledger.checkpoint.crypto import is_encrypted_prefix
from trainledger.checkpoint.format import raw_to_numpy, read_container
from trainledger.storage import is_temp_name

CHILD = r"""
import sys
from pathlib import Path

import numpy as np

from trainledger.checkpoint.format import numpy_to_raw, save_container
from trainledger.checkpoint import CheckpointManager
from trainledger.storage import sweep_temp_files

directory = Path(sys.argv[1])
KEY = bytes(range(16))
manager = CheckpointManager(directory, "crash", keep_checkpoint_max=3)
sweep_temp_files(directory, "crash")
records = manager.adopt_existing()
manager.apply()  # a kill between commit and retention left one extra file
step = max((r.step for r in records), default=0)
print("ready", flush=True)
while True:
    step += 1
    rng = np.random.default_rng(step)
    arrays = {"w": rng.random((512, 1024), dtype=np.float32), "step": np.array([step])}
    path = manager.file_path(1, step)
    key = KEY if step % 3 == 0 else None  # every third file encrypted (AES-GCM chunks)
    save_container(path, [(k, numpy_to_raw(v)) for k, v in arrays.items()], {"step": step}, key)
    manager.add(path)
    manager.apply()
"""


def verify(path: Path) -> int:
    """Load a checkpoint fully, check its crc and that its content matches its step."""
    with open(path, "rb") as fh:
        encrypted = is_encrypted_prefix(fh.read(8))
    c = read_container(path, bytes(range(16)) if encrypted else None, crc_check=True)
    arrays = {e.name: raw_to_numpy(e, c.data) for e in c.entries}
    step = int(arrays["step"][0])
    assert c.info["step"] == step and path.name == f"crash-1_{step}.ckpt"
    assert encrypted == (step % 3 == 0)
    expected = np.random.default_rng(step).random((512, 1024), dtype=np.float32)
    assert np.array_equal(arrays["w"], expected)
    return step


@pytest.mark.slow
def test_sigkill_loop_never_corrupts(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    directory = tmp_path / "ckpt"
    directory.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(trainledger.__file__).resolve().parents[1])
    rng = random.Random(1234)
    kills = 0
    temps_seen = 0
    newest = 0
    dead_pids: list[int] = []
    while kills < 52:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(directory)], env=env, stdout=subprocess.PIPE
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        # the start swept every temp file left by earlier (dead) writers
        leftovers = [
            n
            for n in os.listdir(directory)
            if is_temp_name(n) and any(f"-{pid}-" in n for pid in dead_pids)
        ]
        assert leftovers == []
        time.sleep(rng.uniform(0.0, 0.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        kills += 1
        dead_pids.append(proc.pid)
        names = os.listdir(directory)
        temps_seen += sum(is_temp_name(n) for n in names)
        finals = [directory / n for n in names if not is_temp_name(n)]
        for path in finals:  # nothing half-written under a final name
            verify(path)
        latest = latest_checkpoint(directory, "crash")
        if latest is not None:
            step = verify(Path(latest))
            assert step >= newest  # a committed checkpoint is never lost
            newest = step
        assert len(finals) <= 4  # retention ran only after commits: at most one extra
    assert newest > 0
    assert temps_seen > 0, "no kill landed mid-write; the test would prove nothing"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(directory)], env=env, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    proc.kill()
    proc.wait()
    proc.stdout.close()
