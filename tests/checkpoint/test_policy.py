"""Pure retention and save decisions, as tables."""

from __future__ import annotations

import pytest

from trainledger.checkpoint.policy import (
    CkptRecord,
    best_names,
    qualifies_for_best,
    select_deletions,
    should_save,
)


def rec(
    step: int, t: float | None = None, bp: bool = False, score: float | None = None, epoch: int = 1
) -> CkptRecord:
    suffix = "_breakpoint" if bp else ""
    return CkptRecord(
        f"P-{epoch}_{step}{suffix}.ckpt", epoch, step, float(step) if t is None else t, bp, score
    )


@pytest.mark.parametrize(
    ("cur", "last", "now", "last_t", "steps", "seconds", "expected"),
    [
        (2, 0, 0, 0, 2, 0, True),
        (3, 2, 0, 0, 2, 0, False),
        (4, 2, 0, 0, 2, 0, True),
        (6, 3, 0, 0, 2, 0, True),  # sink mode jumps: difference, not modulo
        (5, 5, 0, 0, 1, 0, False),  # never twice for one step
        (9, 0, 100.0, 50.0, 0, 60, False),
        (9, 0, 110.0, 50.0, 0, 60, True),
        (9, 0, 110.0, 50.0, 0, 0, False),
    ],
)
def test_should_save(cur, last, now, last_t, steps, seconds, expected) -> None:
    assert should_save(cur, last, now, last_t, steps, seconds) is expected


def names(recs: list[CkptRecord]) -> list[str]:
    return [r.name for r in recs]


def test_keep_max_keeps_newest() -> None:
    recs = [rec(s) for s in range(1, 7)]
    assert select_deletions(recs, keep_max=3, keep_per_n_minutes=0) == names(recs[:3])
    assert select_deletions(recs, keep_max=0, keep_per_n_minutes=0) == []
    assert select_deletions(recs, keep_max=10, keep_per_n_minutes=0) == []


def test_order_is_epoch_then_step() -> None:
    recs = [rec(5, epoch=1, t=1), rec(1, epoch=2, t=2), rec(3, epoch=2, t=3)]
    assert select_deletions(recs, keep_max=2, keep_per_n_minutes=0) == ["P-1_5.ckpt"]


def test_breakpoints_never_deleted_nor_counted() -> None:
    recs = [rec(1), rec(2, bp=True), rec(3), rec(4)]
    assert select_deletions(recs, keep_max=1, keep_per_n_minutes=0) == ["P-1_1.ckpt", "P-1_3.ckpt"]


def test_pinned_counts_and_stays() -> None:
    recs = [rec(s) for s in range(1, 7)]
    out = select_deletions(recs, keep_max=3, keep_per_n_minutes=0, pinned={"P-1_2.ckpt"})
    assert out == ["P-1_1.ckpt", "P-1_3.ckpt", "P-1_4.ckpt"]  # kept: 2 (pinned), 5, 6


def test_newest_always_kept_even_with_pins() -> None:
    recs = [rec(1), rec(2)]
    assert select_deletions(recs, keep_max=1, keep_per_n_minutes=0, pinned={"P-1_1.ckpt"}) == []


def test_best_n_kept_beside_rolling() -> None:
    scores = [0.9, 0.1, 0.5, 0.2, 0.8, 0.7]
    recs = [rec(i + 1, score=s) for i, s in enumerate(scores)]
    out = select_deletions(recs, keep_max=2, keep_per_n_minutes=0, keep_best_max=2, mode="min")
    # best (min): steps 2 (0.1) and 4 (0.2); rolling newest 2 among the rest: 5, 6
    assert out == ["P-1_1.ckpt", "P-1_3.ckpt"]
    out = select_deletions(recs, keep_max=1, keep_per_n_minutes=0, keep_best_max=1, mode="max")
    assert out == ["P-1_2.ckpt", "P-1_3.ckpt", "P-1_4.ckpt", "P-1_5.ckpt"]  # kept: 1 (0.9), 6


def test_best_names_ties_and_nan() -> None:
    recs = [rec(1, score=0.5), rec(2, score=0.5), rec(3, score=float("nan")), rec(4)]
    assert best_names(recs, 1, "min") == {"P-1_1.ckpt"}
    assert best_names(recs, 5, "max") == {"P-1_1.ckpt", "P-1_2.ckpt"}
    assert best_names(recs, 0, "max") == set()


@pytest.mark.parametrize(
    ("score", "k", "mode", "expected"),
    [
        (0.3, 2, "min", True),
        (0.6, 2, "min", False),
        (0.6, 2, "max", True),
        (0.1, 2, "max", False),
        (None, 2, "min", False),
        (0.1, 0, "min", False),
        (0.9, 5, "min", True),
    ],
)
def test_qualifies_for_best(score, k, mode, expected) -> None:
    recs = [rec(1, score=0.2), rec(2, score=0.5), rec(3, score=0.4)]
    assert qualifies_for_best(score, recs, k, mode) is expected


def test_per_n_minutes_keeps_first_of_each_window_and_newest() -> None:
    # 2-minute windows: [0,120) [120,240) [240,360)
    times = [10, 50, 100, 130, 200, 250, 300]
    recs = [rec(i + 1, t=t) for i, t in enumerate(times)]
    out = select_deletions(recs, keep_max=0, keep_per_n_minutes=2)
    assert out == ["P-1_2.ckpt", "P-1_3.ckpt", "P-1_5.ckpt"]  # kept: 10, 130, 250, 300 (newest)


def test_empty_and_only_protected() -> None:
    assert select_deletions([], keep_max=1, keep_per_n_minutes=0) == []
    recs = [rec(1, bp=True), rec(2, bp=True)]
    assert select_deletions(recs, keep_max=1, keep_per_n_minutes=0) == []
