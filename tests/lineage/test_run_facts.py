"""Status and checkpoint decisions as tables."""

from __future__ import annotations

from typing import Any

import pytest

from trainledger.lineage.run_facts import as_int, run_status, saved_checkpoint_of


@pytest.mark.parametrize(
    ("exception", "reason", "status"),
    [
        (None, None, "finished"),
        (None, "completed", "finished"),
        (None, "requested", "stopped"),
        (None, "signal", "stopped"),
        (RuntimeError("x"), "error", "failed"),
        (RuntimeError("x"), None, "failed"),
        (KeyboardInterrupt(), "error", "stopped"),
    ],
)
def test_run_status(exception: BaseException | None, reason: Any, status: str) -> None:
    assert run_status(exception, reason) == status


class _Ckpt:
    def __init__(self, name: str | None) -> None:
        self.latest_ckpt_file_name = name


class _Broken:
    @property
    def latest_ckpt_file_name(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, None),
        ({"latest_ckpt_file": "/a.ckpt", "list_callback": [_Ckpt("/b.ckpt")]}, "/a.ckpt"),
        ({"latest_ckpt_file": None, "list_callback": [_Ckpt(None), _Ckpt("/b.ckpt")]}, "/b.ckpt"),
        ({"list_callback": [_Broken(), _Ckpt("/c.ckpt")]}, "/c.ckpt"),
        ({"list_callback": None}, None),
    ],
)
def test_saved_checkpoint_of(params: dict, expected: str | None) -> None:
    assert saved_checkpoint_of(params) == expected


def test_the_old_name_latest_checkpoint_still_works_and_warns() -> None:
    import trainledger.lineage

    with pytest.warns(DeprecationWarning, match=r"trainledger\.lineage\.saved_checkpoint_of"):
        from trainledger.lineage import latest_checkpoint  # type: ignore[attr-defined]
    assert latest_checkpoint is saved_checkpoint_of
    assert latest_checkpoint({"latest_ckpt_file": "/a.ckpt"}) == "/a.ckpt"
    assert "latest_checkpoint" not in trainledger.lineage.__all__


def test_as_int() -> None:
    assert as_int(3) == 3 and as_int(True) is None and as_int(2.0) is None and as_int(None) is None
