"""Where the demos put their runs: the same names every time, never mixed with a user's runs."""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["DEMO_MARKER", "next_run_dir"]

#: written into every run directory the demo makes, so running it again replaces only those
DEMO_MARKER = ".trainledger-demo"


def next_run_dir(out: Path, name: str) -> Path:
    """An empty ``out/name``: a run the demo made earlier (it holds ``DEMO_MARKER``) is
    replaced, so running the demo again leaves the same runs, not duplicates; a directory of
    that name that the demo did not make is kept, and ``name_2``, ... is used instead."""
    candidate, n = out / name, 1
    while candidate.exists():
        if (candidate / DEMO_MARKER).is_file():
            shutil.rmtree(candidate)
            break
        n += 1
        candidate = out / f"{name}_{n}"
    candidate.mkdir(parents=True)
    (candidate / DEMO_MARKER).write_text("made by trainledger demo; replaced when it runs again\n")
    return candidate
