"""Reading HParams plugin data back (``summary/hparams_read.py``), from files written by
torch's ``add_hparams``, by our own writer, and damaged ones."""

from __future__ import annotations

from pathlib import Path

from trainledger.storage import frame
from trainledger.summary import read_hparams, session_end_event, session_start_event
from trainledger.summary.encoders import file_version_event
from trainledger.summary.hparams import write_hparams_events


def test_torch_add_hparams_folder(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_hparams({"lr": 0.5, "opt": "adam", "flag": True}, {"acc": 0.25})
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    found = read_hparams(folder, scalars=True)
    assert found.hparams == {"lr": 0.5, "opt": "adam", "flag": 1.0}  # torch: bools as 0/1
    assert found.metrics == [("", "acc")]
    assert found.scalars == {"acc": 0.25}
    assert found.sessions == 1
    assert found.status is None  # torch's session end has no end time: it says nothing
    assert read_hparams(folder).scalars == {}  # scalars only when asked


def test_our_session_end_gives_the_status(tmp_path: Path) -> None:
    write_hparams_events(tmp_path, session_start_event({"depth": 3, "on": False}))
    write_hparams_events(tmp_path, session_end_event("failed", end_time=123.0))
    found = read_hparams(tmp_path)
    assert found.hparams == {"depth": 3.0, "on": False}
    assert found.status == "failed"


def test_only_the_window_is_read_and_damage_is_skipped(tmp_path: Path) -> None:
    start = session_start_event({"lr": 0.1}).SerializeToString()
    filler = file_version_event(1.0).SerializeToString()
    late = tmp_path / "events.out.tfevents.1.host.1.1"
    late.write_bytes(b"".join(frame(filler) for _ in range(200)) + frame(start))
    assert read_hparams(tmp_path, window=1000).hparams == {}  # beyond the first 1000 bytes
    assert read_hparams(tmp_path).hparams == {"lr": 0.1}
    late.unlink()
    damaged = bytearray(frame(start))
    damaged[-6] ^= 0xFF  # a bad checksum: the record is skipped
    (tmp_path / "events.out.tfevents.2.host.1.1").write_bytes(bytes(damaged) + frame(start)[:9])
    assert read_hparams(tmp_path).hparams == {}  # (and the truncated one waits)
