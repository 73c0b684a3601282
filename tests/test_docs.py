"""The documentation: the MkDocs site builds without a warning, the README stays short, the
README's quick start runs as printed, and BENCHMARKS.md opens with the current figures."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
BENCHMARKS = REPO / "BENCHMARKS.md"
CURRENT = "## Current figures"
LOG = "## Log (newest first)"
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
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
    # every metric and eval field the examples of docs/queries.md write is one the quick start
    # records (a field no run has only warns and answers nothing: under -W error, it fails)
    examples = "".join(
        re.findall(r"```\w*\n(.*?)```", (REPO / "docs" / "queries.md").read_text(), re.S)
    )
    fields = sorted(set(re.findall(r"\b(?:metric|eval)/[A-Za-z][A-Za-z_]*\b", examples)))
    probe = (
        "import runpy\n"
        "ns = runpy.run_path('quickstart.py', run_name='__main__')\n"
        "counts = ns['y'].bincount()\n"
        "print('MAJORITY', float(counts.max()) / len(ns['y']), 'CLASSES', len(counts))\n"
        "from trainledger import filter_summary_lineage\n"
        f"for field in {fields!r}:\n"
        "    series = [] if field.startswith('metric/') else [f'max({field})']\n"
        "    cond = {'sorted_name': series[0] if series else field, 'series': series}\n"
        "    assert filter_summary_lineage('runs', cond)['count'] == 1, field\n"
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


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation and symbols dropped (letters,
    digits, marks, ``_`` and ``-`` kept), each space a ``-``."""
    kept = (
        ch
        for ch in heading.lower()
        if ch in "- " or unicodedata.category(ch)[0] in "LNM" or unicodedata.category(ch) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


def benchmark_parts() -> tuple[str, list[list[str]], str]:
    """BENCHMARKS.md split into what comes before "Current figures", that section's table rows
    (as cells) and the log from its heading on."""
    text = BENCHMARKS.read_text()
    assert CURRENT in text and LOG in text, "BENCHMARKS.md lacks the current figures or the log"
    head, rest = text.split(CURRENT + "\n", 1)
    current, log = rest.split(LOG + "\n", 1)
    rows = [
        [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        for line in current.splitlines()
        if line.startswith("|")
    ]
    return head, rows, log


def test_benchmarks_open_with_one_table_of_current_figures_before_the_log() -> None:
    head, rows, log = benchmark_parts()
    # only the title and its short introduction come before the table: no dated entry
    assert [line for line in head.splitlines() if line.startswith("## ")] == []
    assert not DATE.search(head)
    header, rule, *body = rows
    assert header == [
        "measure",
        "current figure (ours vs peer, median and spread as recorded)",
        "command",
        "date",
        "commit",
    ]
    assert set("".join(rule)) <= {"-", ":"}
    assert len(body) >= 30
    # the dated entries all follow the log's heading
    assert log.lstrip().startswith("The entries")
    assert len(re.findall(r"^## ", log, re.M)) >= 60


def test_every_current_figure_has_a_command_and_a_date_from_the_log() -> None:
    _, rows, log = benchmark_parts()
    log_dates = set(DATE.findall(log))
    headings = {github_anchor(h) for h in re.findall(r"^#{2,6} (.*)$", log, re.M)}
    measures = []
    for row in rows[2:]:
        assert len(row) == 5, row
        measure, figure, command, date, commit = row
        assert measure and figure and command, row
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), row
        # the table cites only recorded entries: its date is one of the log's
        assert date in log_dates, row
        assert re.fullmatch(r"[0-9a-f]{7,40}|added in [0-9a-f]{7,40}|not recorded", commit), row
        link = re.fullmatch(r"\[(.+)\]\(#([^)]+)\)", measure)
        assert link, row
        assert link[2] in headings, f"{link[1]}: no log heading has the anchor #{link[2]}"
        measures.append(link[1])
    assert len(measures) == len(set(measures)), "a measure has more than one row"
