"""``InsideCopy`` answers as ``inside`` does, key by key, with a folder checked once: plain
keys, a symbolic link inside the copy, one leading out of it, and a file that is a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainledger.storage.cache import InsideCopy, inside


def test_the_same_answers_as_inside(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    (copy / "run1").mkdir(parents=True)
    (copy / "real").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(copy / "real", copy / "inlink")  # a folder link that stays inside
    os.symlink(outside, copy / "outlink")  # one that leads out
    os.symlink(outside / "f", copy / "run1" / "filelink")  # a file that is a link out
    keys = [
        "run1/a_lineage", "run1/sub/b", "new/c", "inlink/d", "outlink/e", "run1/filelink",
        "top",
    ]  # fmt: skip
    within = InsideCopy(str(copy))
    for _ in range(2):  # (the second time from the folders it checked)
        for key in keys:
            assert within(str(copy), key) == inside(str(copy), key), key
    assert within(str(copy), "outlink/e") is None
    assert within(str(copy), "run1/filelink") is None
    assert within(str(copy), "inlink/d") == str((copy / "real" / "d").resolve())
    assert within(str(tmp_path / "other"), "x") == inside(str(tmp_path / "other"), "x")


def test_a_folder_checked_once_costs_no_more_lookups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    within = InsideCopy(str(copy))
    calls: list[str] = []
    real = os.path.islink
    monkeypatch.setattr(os.path, "islink", lambda p: (calls.append(p), real(p))[1])
    for i in range(100):
        within(str(copy), f"run{i % 10}/f{i}")
    assert len(calls) == 110  # 10 folders once, 100 files once; ``inside``: ~900 lstat calls
