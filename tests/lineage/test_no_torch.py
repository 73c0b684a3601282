"""The reader works without torch (the query engine, CLI and UI depend on it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_reader_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # any import of torch now fails\n"
        "from trainledger.lineage.reader import read_lineage\n"
        "d = read_lineage('tests/golden/mindspore-runs/momentum_lr01')\n"
        "assert d['hyper_parameters']['optimizer'] == 'Momentum'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
