"""The documentation: the MkDocs site builds without a warning, the README stays short, and
the README's quick start runs as printed."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
QUICKSTART = re.compile(
    r"<!-- --8<-- \[start:quickstart\] -->\n```python\n(?P<code>.*?)```\n"
    r"<!-- --8<-- \[end:quickstart\] -->",
    re.DOTALL,
)


def quickstart_code() -> str:
    """The quick start's code block, exactly as the README shows it."""
    match = QUICKSTART.search(README.read_text())
    assert match, "README.md has no quick start block between the snippet markers"
    return match.group("code")


def test_mkdocs_build_is_strict_and_clean(tmp_path: Path) -> None:
    """``mkdocs build --strict``: a broken link, a missing nav page, a docstring mkdocstrings
    cannot render or a missing snippet fails the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    # the API pages were generated from the docstrings, and the README's quick start included
    model_page = (tmp_path / "api" / "training" / "index.html").read_text()
    assert "dataset_sink_mode" in model_page and "RecModel" in model_page
    started = (tmp_path / "getting-started" / "index.html").read_text()
    assert "held-out accuracy" in started and "--8&lt;--" not in started
    assert "```" not in started  # the included block is rendered as code, not as text


def test_every_docs_page_is_in_the_nav() -> None:
    """A page left out of the nav is only an INFO line in MkDocs, so check it here."""
    nav = (REPO / "mkdocs.yml").read_text()
    pages = sorted(str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md"))
    assert pages
    assert [p for p in pages if f": {p}" not in nav] == []


def test_readme_is_short_and_keeps_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.encode()) < 12 * 1024
    assert "make demo   # builds .venv (the package and its `all` extra, pinned), trains" in text
    assert "make test   # adds the development stack to .venv, runs the whole test suite" in text


def test_readme_links_point_at_files() -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text()):
        assert (REPO / target).exists(), target


def test_quickstart_block_is_valid_python() -> None:
    ast.parse(quickstart_code())


@pytest.mark.slow
def test_quickstart_runs_without_warnings_and_learns(tmp_path: Path) -> None:
    """Run the README's block under ``python -W error``; it must print nothing on stderr (a
    logged warning counts too) and reach 0.9 held-out accuracy on data whose majority class is
    at most half. The block runs as a file of its own; the wrapper only reads its globals."""
    (tmp_path / "quickstart.py").write_text(quickstart_code())
    probe = (
        "import runpy\n"
        "ns = runpy.run_path('quickstart.py', run_name='__main__')\n"
        "counts = ns['y'].bincount()\n"
        "print('MAJORITY', float(counts.max()) / len(ns['y']), 'CLASSES', len(counts))\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    accuracy = float(re.search(r"^held-out accuracy: ([0-9.]+)$", result.stdout, re.M)[1])
    assert accuracy >= 0.9
    majority = re.search(r"^MAJORITY ([0-9.]+) CLASSES (\d+)$", result.stdout, re.M)
    assert float(majority[1]) <= 0.5 and int(majority[2]) >= 2
    # the query at the end of the block found the run it wrote
    assert re.search(r"^\./adam_lr0\.01 \{'accuracy': ", result.stdout, re.M)
    assert (tmp_path / "runs" / "adam_lr0.01" / "ckpt").is_dir()
