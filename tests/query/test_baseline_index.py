"""An index written by the original version (before issue 16's fixes) still loads and answers
the same: ``data/baseline_index`` (made by ``data/make_baseline_index.py`` with commit
ad318c0's code) holds runs, that version's ``index.db`` and annotations, and its answers."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from trainledger.query import LineageIndex

DATA = Path(__file__).parent / "data" / "baseline_index"


@pytest.fixture
def old_base(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    shutil.copytree(DATA / "runs", runs)
    for rel, ns in json.loads((DATA / "mtimes.json").read_text()).items():
        os.utime(runs / rel, ns=(ns, ns))
    return runs


def _recorded() -> list[tuple[Any, Any]]:
    data = json.loads((DATA / "answers.json").read_text())
    return list(zip(data["conditions"], data["answers"], strict=True))


def _refuse(run_dir: str) -> dict[str, Any]:
    raise AssertionError(f"re-parsed {run_dir}: the old index was not used")


def test_the_old_index_answers_without_re_parsing(old_base: Path) -> None:
    with LineageIndex(old_base, reader=_refuse) as index:
        stats = index.refresh()
        assert (stats.runs, stats.parsed, stats.unreadable) == (4, 0, 0)
        for condition, answer in _recorded():
            assert json.loads(json.dumps(index.query(condition))) == answer, condition
        assert index.get_annotations() == {
            "./adam_lr001": {"tag": 5, "remark": "from the original version"}
        }
        # migrated to schema 5 in place: MindSpore's runs have no run record, so no status
        assert stats.statuses == 0
        assert index.query({"status": {"in": [None]}})["count"] == 4
        assert index.query({"status": {"eq": "finished"}})["count"] == 0
    assert not list((old_base / ".trainledger").glob("index.db.damaged*"))


def test_a_rebuild_from_the_files_answers_the_same(old_base: Path) -> None:
    (old_base / ".trainledger" / "index.db").unlink()
    with LineageIndex(old_base) as index:
        for condition, answer in _recorded():
            assert json.loads(json.dumps(index.query(condition))) == answer, condition
