"""The static checks of docs/development.md hold: ruff's lint and format, and mypy over the
package and the benchmarks (full type hints are a convention; these keep it from eroding)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_finds_nothing_and_the_code_is_formatted() -> None:
    lint = _run("ruff", "check", "src", "tests", "bench", "examples")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _run("ruff", "format", "--check", "src", "tests", "bench", "examples")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_finds_no_type_errors_in_the_package_and_the_benchmarks() -> None:
    result = _run("mypy", "src", "bench")
    assert result.returncode == 0, result.stdout + result.stderr
