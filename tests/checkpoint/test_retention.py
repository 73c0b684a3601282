"""CheckpointManager: naming, adoption, deleting only its own files after commit.

(Sweeping temp files of a crashed writer is ``storage.sweep_temp_files``, tested there.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trainledger.checkpoint import CheckpointManager, next_free_prefix


def touch(d: Path, *names: str) -> None:
    for n in names:
        (d / n).write_bytes(b"x")


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        ([], "CKP"),
        (["CKP-1_1.ckpt"], "CKP_1"),
        (["CKP-1_1.ckpt", "CKP_1-1_1.ckpt"], "CKP_2"),
        (["CKP_4-1_1.ckpt"], "CKP_5"),
        (["CKP-1_1_breakpoint.ckpt"], "CKP_1"),
        (["CKPX-1_1.ckpt", "CKP.txt", "CKP-1_1.ckpt.tl-tmp-1-ab", "other-1_1.ckpt"], "CKP"),
        (["CKP_a-1_1.ckpt"], "CKP"),
    ],
)
def test_next_free_prefix(tmp_path: Path, existing: list[str], expected: str) -> None:
    touch(tmp_path, *existing)
    assert next_free_prefix(tmp_path, "CKP") == expected
    assert next_free_prefix(tmp_path / "missing", "CKP") == "CKP"


def test_prefix_with_slash_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="without '/'"):
        CheckpointManager(tmp_path, "a/b")


def test_apply_deletes_only_own_tracked_files(tmp_path: Path) -> None:
    touch(tmp_path, "CKP_1-1_1.ckpt", "mine-notes.txt", "CKPX-1_1.ckpt")
    m = CheckpointManager(tmp_path, "CKP", keep_checkpoint_max=2)
    for step in range(1, 6):
        path = m.file_path(1, step)
        path.write_bytes(b"c")
        m.add(path)
        m.apply()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "CKP-1_4.ckpt",
        "CKP-1_5.ckpt",
        "CKPX-1_1.ckpt",
        "CKP_1-1_1.ckpt",
        "mine-notes.txt",
    ]
    assert m.ckpoint_num == 2
    m.add(tmp_path / "CKPX-1_1.ckpt")  # not this prefix: ignored
    assert m.ckpoint_num == 2


def test_adopt_existing_and_pin(tmp_path: Path) -> None:
    touch(
        tmp_path, "P-1_1.ckpt", "P-1_2.ckpt", "P-1_3.ckpt", "P-2_1_breakpoint.ckpt", "P_1-1_1.ckpt"
    )
    m = CheckpointManager(tmp_path, "P", keep_checkpoint_max=2)
    m.adopt_existing(pinned=tmp_path / "P-1_2.ckpt")
    assert [r.name for r in m.records] == [
        "P-1_1.ckpt",
        "P-1_2.ckpt",
        "P-1_3.ckpt",
        "P-2_1_breakpoint.ckpt",
    ]
    new = m.file_path(2, 2)
    new.write_bytes(b"x")
    m.add(new)
    assert [p.name for p in m.apply()] == ["P-1_1.ckpt", "P-1_3.ckpt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "P-1_2.ckpt",
        "P-2_1_breakpoint.ckpt",
        "P-2_2.ckpt",
        "P_1-1_1.ckpt",
    ]


def test_adopt_reads_scores(tmp_path: Path) -> None:
    touch(tmp_path, "P-1_1.ckpt", "P-1_2.ckpt", "P-1_3.ckpt")
    scores = {"P-1_1.ckpt": 0.1, "P-1_2.ckpt": 0.9}

    def score_of(path: Path) -> float | None:
        if path.name == "P-1_3.ckpt":
            raise ValueError("unreadable")
        return scores[path.name]

    m = CheckpointManager(tmp_path, "P", keep_checkpoint_max=1, keep_best_max=1, mode="min")
    m.adopt_existing(score_of)
    assert {r.name: r.score for r in m.records} == {
        "P-1_1.ckpt": 0.1,
        "P-1_2.ckpt": 0.9,
        "P-1_3.ckpt": None,
    }
    assert m.would_be_best(0.05) and not m.would_be_best(0.5)
    assert [p.name for p in m.to_delete()] == ["P-1_2.ckpt"]


def test_remove_ckpoint_file(tmp_path: Path) -> None:
    touch(tmp_path, "P-1_1.ckpt", "Q-1_1.ckpt")
    m = CheckpointManager(tmp_path, "P")
    m.adopt_existing()
    m.remove_ckpoint_file("P-1_1.ckpt")
    assert not (tmp_path / "P-1_1.ckpt").exists() and m.ckpoint_num == 0
    with pytest.raises(ValueError, match="not a checkpoint of prefix"):
        m.remove_ckpoint_file("Q-1_1.ckpt")


def test_resume_prefix(tmp_path: Path) -> None:
    import os

    from trainledger.checkpoint import resume_prefix

    assert resume_prefix(tmp_path, "CKP") == "CKP"
    touch(tmp_path, "CKP-1_1.ckpt", "CKP_1-1_5.ckpt", "CKPX-9_9.ckpt")
    os.utime(tmp_path / "CKP-1_1.ckpt", (1, 1))
    assert resume_prefix(tmp_path, "CKP") == "CKP_1"  # the newest run of the family
    assert resume_prefix(tmp_path, "CKP", tmp_path / "CKP-1_1.ckpt") == "CKP"
    assert resume_prefix(tmp_path, "CKP", tmp_path / "elsewhere.ckpt") == "CKP_1"
