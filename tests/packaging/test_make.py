"""The README's two commands each install what they run: `make demo` the package with its
`all` extra (no development stack: MLflow, Transformers, Playwright, moto...), `make test`
the whole development stack. Checked with `make -n` on a copy of the build files, so nothing
is installed here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _plan(tmp_path: Path, target: str) -> str:
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    done = subprocess.run(
        ["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_demo_installs_the_all_extra_only(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "demo")
    installs = [line for line in plan.splitlines() if "pip install" in line and "-e" in line]
    assert installs == [line for line in installs if '".[all]"' in line] and installs, plan
    assert "trainledger demo" in plan


def test_make_test_installs_the_development_stack(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "test")
    assert any('".[dev]"' in line for line in plan.splitlines() if "pip install" in line), plan
