"""Exit hooks that wait for background work (``storage.parallel.before_executors_stop``) run
only in the process that registered them: a forked child inherits the hook but not the threads
it would wait for, and hung at its exit (a ``multiprocessing`` worker forked after an
``async_save`` never ended)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CHILD_AFTER_ASYNC_SAVE = textwrap.dedent(
    """
    import multiprocessing as mp, os, sys, time
    import torch
    from trainledger.checkpoint import save_checkpoint, wait_async_save

    save_checkpoint({"w": torch.zeros(1000)}, os.path.join(sys.argv[1], "a.ckpt"), async_save=True)
    wait_async_save()

    def child() -> None:
        print("child ran", flush=True)

    process = mp.get_context("fork").Process(target=child)
    start = time.monotonic()
    process.start()
    process.join(20)
    print("child exit", process.exitcode, round(time.monotonic() - start, 1), flush=True)
    if process.exitcode is None:
        process.kill()
    """
)


def test_a_forked_child_does_not_wait_for_its_parents_saves(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD_AFTER_ASYNC_SAVE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "child ran" in done.stdout
    line = next(x for x in done.stdout.splitlines() if x.startswith("child exit"))
    code, seconds = line.split()[2], float(line.split()[3])
    assert code == "0" and seconds < 10, done.stdout
