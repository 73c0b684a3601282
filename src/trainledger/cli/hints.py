"""Commands printed as hints must work when pasted: ``trainledger`` is often not on PATH (a
virtualenv that is not activated, as after ``make demo``), so hints name the program the way
it can be run from here."""

from __future__ import annotations

import os
import shlex
import sys

__all__ = ["cli_command"]


def _shown(path: str) -> str:
    """A path relative to the working directory when it is below it (shorter to type)."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def cli_command() -> str:
    """How to run ``trainledger`` again from the working directory, as a shell word (or two):
    ``trainledger`` when that name on PATH is this installation, else the script that started
    this process (``.venv/bin/trainledger``), else ``<python> -m trainledger``."""
    import shutil  # (here: every command imports this module, few print a hint)

    argv0 = sys.argv[0] if sys.argv else ""
    script = os.path.join(os.path.dirname(sys.executable), "trainledger")
    on_path = shutil.which("trainledger")
    if on_path and os.path.realpath(on_path) == os.path.realpath(script):
        return "trainledger"
    if os.path.basename(argv0) == "trainledger" and os.path.isfile(argv0):
        return shlex.quote(_shown(argv0))
    if os.path.isfile(script):
        return shlex.quote(_shown(script))
    return f"{shlex.quote(_shown(sys.executable))} -m trainledger"
