"""Where and how a run ran: host, process, command line, versions, git state, seed, and the
distributed layout. Cheap enough to call once per run; git is asked once per process and
directory (the code a process runs was loaded when it started)."""

from __future__ import annotations

import functools
import os
import platform
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from trainledger.version import __version__

__all__ = ["EnvironmentInfo", "environment_info", "git_info", "torch_seed", "distributed_info"]

_GIT_TIMEOUT = 5.0


@dataclass
class EnvironmentInfo:
    hostname: str
    pid: int
    command: list[str] = field(default_factory=list)
    python_version: str = ""
    torch_version: str | None = None
    trainledger_version: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None


def environment_info(cwd: str | None = None) -> EnvironmentInfo:
    """This process's environment (git from ``cwd``, default the working directory)."""
    torch = sys.modules.get("torch")
    commit, dirty = git_info(os.path.realpath(cwd or os.getcwd()))
    return EnvironmentInfo(
        hostname=socket.gethostname(),
        pid=os.getpid(),
        command=[sys.executable, *sys.argv],
        python_version=platform.python_version(),
        torch_version=getattr(torch, "__version__", None) if torch is not None else None,
        trainledger_version=__version__,
        git_commit=commit,
        git_dirty=dirty,
    )


@functools.lru_cache(maxsize=64)
def git_info(directory: str) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git work tree holding ``directory``, or (None, None)."""
    commit = _git(directory, "rev-parse", "HEAD")
    if not commit:
        return None, None
    status = _git(directory, "status", "--porcelain", "--untracked-files=no")
    return commit, (None if status is None else bool(status))


def _git(directory: str, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def torch_seed() -> int | None:
    """The seed of torch's default generator (``torch.initial_seed()``), when torch is loaded:
    re-seeding with it reproduces the CPU random stream."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return int(torch.initial_seed())
    except (AttributeError, RuntimeError):  # pragma: no cover
        return None


def distributed_info() -> tuple[int, int, str]:
    """(rank, world_size, parallel_mode) from torch.distributed; (0, 1, "stand_alone") alone."""
    torch = sys.modules.get("torch")
    dist: Any = getattr(torch, "distributed", None) if torch is not None else None
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size()), "data_parallel"
    except (AttributeError, RuntimeError):  # pragma: no cover
        pass
    return 0, 1, "stand_alone"
