"""FileTailSource: appended lines, new files, partial lines, restart from offsets, bad lines."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import torch

from trainledger.data import BadRecordWarning, FileTailSource, StreamWarning
from trainledger.errors import StreamError
from trainledger.storage import TEMP_MARKER


def _collate(records: list[dict]) -> list[int]:
    return [int(r["x"]) for r in records]


def _append(path: Path, *records: object, raw: str = "") -> None:
    with open(path, "a") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
        fh.write(raw)


def _source(directory: Path, **kw: object) -> FileTailSource:
    kw.setdefault("collate_fn", _collate)
    kw.setdefault("poll_interval", 0.01)
    return FileTailSource(directory, **kw)  # type: ignore[arg-type]


def test_reads_appended_lines_and_new_files_in_name_order(tmp_path: Path) -> None:
    _append(tmp_path / "part-0001.jsonl", {"x": 1}, {"x": 2})
    src = _source(tmp_path, batch_size=2)
    assert next(src) == [1, 2]
    _append(tmp_path / "part-0001.jsonl", {"x": 3})  # appended to a known file
    _append(tmp_path / "part-0002.jsonl", {"x": 4}, {"x": 5})  # a new file
    (tmp_path / "ignored.txt").write_text('{"x": 99}\n')
    (tmp_path / f"part-0003.jsonl{TEMP_MARKER}1-ab").write_text('{"x": 98}\n')
    assert next(src) == [3, 4]
    (tmp_path / "_END").touch()
    assert list(src) == [[5]]
    assert src.records_read == 5
    assert src.offsets == {
        "part-0001.jsonl": (tmp_path / "part-0001.jsonl").stat().st_size,
        "part-0002.jsonl": (tmp_path / "part-0002.jsonl").stat().st_size,
    }


def test_partial_line_waits_for_its_newline(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    _append(f, {"x": 1}, raw='{"x": ')
    src = _source(tmp_path, batch_size=1)
    assert next(src) == [1]
    got: list[list[int]] = []
    t = threading.Thread(target=lambda: got.append(next(src)))
    t.start()
    t.join(0.1)
    assert t.is_alive() and got == []  # "{"x": " is still being written
    _append(f, raw="2}\n")
    t.join(5)
    assert got == [[2]]


def test_unterminated_last_line_is_read_at_end_marker(tmp_path: Path) -> None:
    _append(tmp_path / "a.jsonl", {"x": 1}, raw='{"x": 2}')
    (tmp_path / "_END").touch()
    assert list(_source(tmp_path, batch_size=5)) == [[1, 2]]


def test_restart_resumes_from_committed_offsets(tmp_path: Path) -> None:
    data, offsets = tmp_path / "in", tmp_path / "state" / "offsets.json"
    data.mkdir()
    _append(data / "p1.jsonl", *({"x": i} for i in range(5)))
    with pytest.warns(StreamWarning, match="no offsets file"):
        src = _source(data, batch_size=2, offsets_path=offsets)
    assert next(src) == [0, 1]
    src.close()  # close() commits only what finished training: nothing yet
    assert json.loads(offsets.read_text())["offsets"] == {}
    src = _source(data, batch_size=2, offsets_path=offsets)
    assert next(src) == [0, 1]  # replayed, not lost
    src.acknowledge()  # trained: committed now
    assert json.loads(offsets.read_text())["offsets"] == {"p1.jsonl": 18}
    src = _source(data, batch_size=2, offsets_path=offsets)
    assert src.resumed_from == {"p1.jsonl": 18}
    assert next(src) == [2, 3]
    src.acknowledge()  # as online_train does at a clean stop
    doc = json.loads(offsets.read_text())
    assert doc["version"] == 1 and doc["offsets"] == {"p1.jsonl": 4 * len('{"x": 0}\n')}
    src.close()
    assert list(src) == []  # closed: the pending record 4 is not delivered

    _append(data / "p1.jsonl", {"x": 5})
    _append(data / "p2.jsonl", {"x": 6})
    (data / "_END").touch()
    again = _source(data, batch_size=2, offsets_path=offsets)
    assert again.resumed_from == {"p1.jsonl": 36}
    assert list(again) == [[4, 5], [6]]
    final = json.loads(offsets.read_text())["offsets"]  # committed at end of stream
    assert final == {"p1.jsonl": 6 * 9, "p2.jsonl": 9}


def test_offsets_committed_by_interval(tmp_path: Path) -> None:
    offsets = tmp_path / "off.json"
    _append(tmp_path / "a.jsonl", {"x": 1}, {"x": 2})
    src = _source(tmp_path, batch_size=1, offsets_path=offsets, commit_interval=1e-9)
    next(src)
    assert not offsets.exists()  # handed out, not trained: nothing to commit
    next(src)  # asking for the next batch means the first one finished training
    assert json.loads(offsets.read_text())["offsets"] == {"a.jsonl": 9}
    (tmp_path / "_END").touch()  # the producer is done
    assert list(src) == [] and src.offsets == {"a.jsonl": 18}


def test_delivered_offsets_are_committed_while_waiting_for_data(tmp_path: Path) -> None:
    """A producer pacing itself on the offsets file must see the consumer's progress even
    when no commit interval passes before the consumer runs out of data (else both wait)."""
    offsets = tmp_path / "off.json"
    data = tmp_path / "a.jsonl"
    _append(data, *({"x": i} for i in range(4)))
    src = _source(tmp_path, batch_size=2, offsets_path=offsets, commit_interval=3600)
    assert next(src) == [0, 1] and next(src) == [2, 3]
    assert not offsets.exists()  # the interval has not passed
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(next(src, None)), daemon=True)
    waiter.start()  # blocks: no more data yet
    try:
        deadline = time.monotonic() + 5
        while not offsets.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert offsets.exists(), "nothing committed while the consumer waited for data"
        assert json.loads(offsets.read_text())["offsets"] == {"a.jsonl": data.stat().st_size}
        _append(data, {"x": 4}, {"x": 5})  # the producer goes on
        waiter.join(5)
        assert got == [[4, 5]]
    finally:
        src.close()  # also releases a waiter still blocked after a failure
        waiter.join(5)


def test_malformed_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    _append(f, {"x": 1}, raw='{"x": \n')  # broken JSON
    _append(f, {"y": 2})  # parses, but collate_fn raises KeyError on it
    with open(f, "ab") as fh:
        fh.write(b"\xff\xfe\n")  # not UTF-8
    _append(f, {"x": 4}, raw="\n")  # a blank line is not a record
    (tmp_path / "_END").touch()
    src = _source(tmp_path, batch_size=10)
    with pytest.warns(BadRecordWarning) as caught:
        assert list(src) == [[1, 4]]
    assert src.bad_records == 3
    assert any("a.jsonl:9" in str(w.message) and "invalid JSON" in str(w.message) for w in caught)


def test_csv_files_with_header_and_resume(tmp_path: Path) -> None:
    f = tmp_path / "a.csv"
    f.write_text("x,label\n1,0\n2,1\nbad-row\n")
    offsets = tmp_path / "o.json"
    src = _source(
        tmp_path,
        pattern="*.csv",
        batch_size=2,
        offsets_path=offsets,
        collate_fn=lambda rs: [(r["x"], r["label"]) for r in rs],
    )
    assert next(src) == [(1, 0), (2, 1)]
    src.acknowledge()  # trained: committed
    with open(f, "a") as fh:
        fh.write("3,1.5\n")
    (tmp_path / "_END").touch()
    again = _source(
        tmp_path,
        pattern="*.csv",
        batch_size=2,
        offsets_path=offsets,
        collate_fn=lambda rs: [(r["x"], r["label"]) for r in rs],
    )
    assert again.fmt == "csv"
    with pytest.warns(BadRecordWarning, match="expected 2 CSV fields"):
        assert list(again) == [[(3, 1.5)]]  # header re-read from the file start
    assert again.bad_records == 1


def test_idle_timeout_and_close_end_the_stream(tmp_path: Path) -> None:
    _append(tmp_path / "a.jsonl", {"x": 1})
    assert list(_source(tmp_path, batch_size=4, idle_timeout=0.05)) == [[1]]
    src = _source(tmp_path / "missing-yet", batch_size=1)
    threading.Timer(0.05, src.close).start()
    assert list(src) == []


def test_default_collate_makes_tensors(tmp_path: Path) -> None:
    _append(tmp_path / "a.jsonl", {"x": 1, "y": 0.5}, {"x": 2, "y": 1.5})
    (tmp_path / "_END").touch()
    (batch,) = list(FileTailSource(tmp_path, batch_size=2))
    assert torch.equal(batch["x"], torch.tensor([1, 2]))


def test_file_shorter_than_its_offset_is_read_again_and_bad_offsets_file_raises(
    tmp_path: Path,
) -> None:
    offsets = tmp_path / "o.json"
    offsets.write_text(json.dumps({"version": 1, "offsets": {"a.jsonl": 100}}))
    _append(tmp_path / "a.jsonl", {"x": 1})
    with pytest.warns(StreamWarning, match="a.jsonl is not the file its saved offset 100"):
        assert next(_source(tmp_path, offsets_path=offsets)) == [1]
    offsets.write_text("not json")
    with pytest.raises(StreamError, match="offsets document"):
        _source(tmp_path, offsets_path=offsets)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"fmt": "xml"}, "fmt expected 'jsonl' or 'csv'"),
        ({"poll_interval": 0}, "poll_interval expected a positive number"),
        ({"idle_timeout": -1}, "idle_timeout expected"),
        ({"batch_size": 2.5}, "batch_size expected a positive int"),
    ],
)
def test_config_errors(tmp_path: Path, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        FileTailSource(tmp_path, **kwargs)


def test_close_from_another_thread_while_waiting_commits_on_the_way_out(tmp_path: Path) -> None:
    offsets = tmp_path / "o.json"
    _append(tmp_path / "a.jsonl", {"x": 1}, {"x": 2})
    src = _source(tmp_path, batch_size=3, offsets_path=offsets)
    threading.Timer(0.05, src.close).start()  # the consumer is blocked waiting for record 3
    assert list(src) == [[1, 2]]  # the partial batch is handed out, then the stream ends
    assert json.loads(offsets.read_text())["offsets"] == {"a.jsonl": 18}
