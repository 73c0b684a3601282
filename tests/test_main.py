"""``python -m trainledger`` is the ``trainledger`` command."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import GOLDEN


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainledger", *args], capture_output=True, text=True, timeout=120
    )


def test_version_and_commands() -> None:
    from trainledger.version import __version__

    assert _run("--version").stdout.strip() == f"trainledger, version {__version__}"
    help_text = _run("--help").stdout
    for command in ("demo", "lineage", "show", "ui"):
        assert f"  {command} " in help_text


def test_same_output_as_the_console_script(tmp_path: Path) -> None:
    # a copy: a query writes its index under the base, which must not land in tests/golden
    base = shutil.copytree(GOLDEN / "mindspore-runs", tmp_path / "runs")
    script = Path(sys.executable).with_name("trainledger")
    via_module = _run("lineage", str(base), "--format", "json")
    via_script = subprocess.run(
        [str(script), "lineage", str(base), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert via_module.returncode == via_script.returncode
    assert via_module.stdout == via_script.stdout
    assert via_module.stdout.strip()
