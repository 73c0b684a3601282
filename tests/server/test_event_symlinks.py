"""Issue 16 item 7: an event-file symlink inside a run must not serve a file outside BASE.

Through the reader (``list_event_files``, ``read_scalars``) and through the scalar API.
"""

from __future__ import annotations

from pathlib import Path

from tests.runs import sample_run, write_scalars
from tests.server.conftest import client_for
from trainledger.summary import list_event_files, read_scalars


def _base_with_linked_events(tmp_path: Path) -> tuple[Path, Path]:
    """A run with no event file of its own but a symlink to one outside the base (``secret``
    tag), and a run with a real event file next to a second, dangling link."""
    base = tmp_path / "base"
    outside = tmp_path / "outside"
    outside.mkdir()
    from trainledger.summary.record import SummaryRecord

    with SummaryRecord(outside) as record:
        record.add_scalar("secret", 42.0, 0, wall_time=1_700_000_000.0)
    [target] = list_event_files(outside)
    linked = sample_run(base, "linked", 0, scalars=0)
    (linked / "events.out.tfevents.1700000000.host.1.0").symlink_to(target)
    real = sample_run(base, "real", 1, scalars=0)
    write_scalars(real, 1, 3)
    (real / "events.out.tfevents.1700000001.host.2.0").symlink_to(tmp_path / "missing")
    return base, target


def test_reader_skips_symlinked_event_files(tmp_path: Path) -> None:
    base, target = _base_with_linked_events(tmp_path)
    assert list_event_files(base / "linked") == []
    assert read_scalars(base / "linked") == {}
    real = list_event_files(base / "real")
    assert len(real) == 1 and not real[0].is_symlink()
    assert set(read_scalars(base / "real")) == {"loss", "accuracy"}
    assert list_event_files(target.parent) == [target]  # the file itself is a valid one


def test_scalar_api_does_not_serve_a_linked_event_file(tmp_path: Path) -> None:
    base, _ = _base_with_linked_events(tmp_path)
    with client_for(base) as c:
        tags = c.get("/api/v1/scalars/tags", params=[("run", "linked"), ("run", "real")])
        assert tags.status_code == 200
        assert tags.json()["runs"]["linked"] == []
        assert "secret" not in tags.json()["tags"]
        series = c.post(
            "/api/v1/scalars/series", json={"runs": ["linked", "real"], "tags": ["secret", "loss"]}
        )
        assert series.status_code == 200
        got = [(s["run_id"], s["tag"]) for s in series.json()["series"]]
        assert got == [("real", "loss")]
