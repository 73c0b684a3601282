"""File naming, the append-only writer, and reading our own files back (ours and MindInsight's
schema)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.lineage.mindinsight_schema import mindinsight_pb2
from trainledger.errors import LineageWriteError
from trainledger.lineage.reader import parse_lineage_file, read_lineage, read_record
from trainledger.lineage.records import (
    EvalValues,
    RunValues,
    TrainValues,
    dataset_graph_event,
    eval_event,
    run_event,
    train_event,
    user_defined_event,
)
from trainledger.lineage.writer import (
    LineageWriter,
    clear_registry,
    create_lineage_file,
    get_writer,
)
from trainledger.storage import (
    file_timestamp,
    frame,
    is_lineage_file_name,
    lineage_file_name,
    list_lineage_files,
    read_records,
)


@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    clear_registry()


def test_name_pattern_is_found_by_mindinsight_rules() -> None:
    name = lineage_file_name(1795284213, 0, "my.host.name", 4242, 3)
    assert name == "events.out.events.summary.1795284213.0.my-host-name.4242.3_lineage"
    assert file_timestamp(name) == 1795284213 and is_lineage_file_name(name)
    assert not is_lineage_file_name("events.out.events.summary.1795284213.0.vm_MS")
    assert not is_lineage_file_name(name + ".tl-tmp-12-abcd")


def test_timestamps_unique_and_increasing_within_a_directory(tmp_path: Path) -> None:
    (tmp_path / "events.out.events.summary.1000.0.vm_lineage").write_bytes(b"keep")
    a = create_lineage_file(tmp_path, now=1000.5)
    b = create_lineage_file(tmp_path, now=1000.9)  # same second again
    c = create_lineage_file(tmp_path, now=990)  # clock went back
    assert [file_timestamp(os.path.basename(p)) for p in (a, b, c)] == [1001, 1002, 1003]
    assert (tmp_path / "events.out.events.summary.1000.0.vm_lineage").read_bytes() == b"keep"
    assert [f.timestamp for f in list_lineage_files(tmp_path)] == [1000, 1001, 1002, 1003]


def test_concurrent_creators_get_distinct_timestamps(tmp_path: Path) -> None:
    paths: list[str] = []
    lock = threading.Lock()

    def make(i: int) -> None:
        p = create_lineage_file(tmp_path, now=5000, pid=10_000 + i)
        with lock:
            paths.append(p)

    threads = [threading.Thread(target=make, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stamps = sorted(file_timestamp(os.path.basename(p)) for p in paths)
    assert stamps == list(range(5000, 5008))


def test_writer_appends_and_never_truncates(tmp_path: Path) -> None:
    writer = LineageWriter(tmp_path)
    path = writer.write([user_defined_event({"team": "a"})])
    size = os.path.getsize(path)
    assert writer.write([eval_event(EvalValues(metrics={"acc": 0.5}))]) == path
    assert os.path.getsize(path) > size
    payloads, corrupt = read_records(path)
    assert len(payloads) == 2 and corrupt == 0


def test_shared_writer_per_directory(tmp_path: Path) -> None:
    link = tmp_path / "link"
    real = tmp_path / "real"
    real.mkdir()
    link.symlink_to(real)
    assert get_writer(real) is get_writer(link)
    assert get_writer(real) is not get_writer(tmp_path)


def test_vanished_file_is_replaced_by_a_new_one(tmp_path: Path) -> None:
    writer = LineageWriter(tmp_path)
    first = writer.write([user_defined_event({"a": 1})])
    os.remove(first)
    second = writer.write([user_defined_event({"a": 2})])
    assert second != first and os.path.exists(second)


def test_unwritable_directory_raises_lineage_write_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(LineageWriteError, match="could not write lineage"):
        LineageWriter(blocker / "run").write([user_defined_event({"a": 1})])


def _full_run(tmp_path: Path, lr: float = 0.12) -> str:
    writer = get_writer(tmp_path)
    writer.write(
        [
            user_defined_event({"team": "a", "trial": 3, "dropout": 0.5}),
            dataset_graph_event({"op_type": "DataLoader", "batch_size": 4, "children": []}),
            run_event(RunValues(status="running", start_time=1.0, hostname="h", pid=7)),
        ]
    )
    writer.write(
        [
            train_event(
                TrainValues(
                    optimizer="SGD",
                    learning_rate=lr,
                    loss_function="CrossEntropyLoss",
                    epoch=2,
                    parallel_mode="stand_alone",
                    device_num=1,
                    batch_size=4,
                    train_dataset_path="/data/train",
                    train_dataset_size=40,
                    train_dataset_fingerprint="files:abc",
                    network="MLP",
                    loss=0.123456789,
                    model_path='{"ckpt": "/x/m.ckpt"}',
                    model_size=99,
                    step=20,
                )
            ),
            run_event(
                RunValues(
                    status="finished",
                    start_time=1.0,
                    end_time=3.0,
                    duration=2.0,
                    total_steps=20,
                    command=["python", "train.py", "--lr", "0.12 x"],
                    checkpoints=[("/x/m.ckpt", 99)],
                    seed=2**63 + 5,
                )
            ),
            eval_event(
                EvalValues(
                    metrics={"accuracy": 0.9},
                    valid_dataset_path="/data/val",
                    valid_dataset_size=10,
                )
            ),
        ]
    )
    assert writer.path is not None
    return writer.path


def test_our_records_read_back_with_float64_precision(tmp_path: Path) -> None:
    _full_run(tmp_path)
    d = read_lineage(tmp_path)
    assert d["hyper_parameters"] == {
        "optimizer": "SGD",
        "learning_rate": 0.12,  # not 0.1199999973: the float64 extension is preferred
        "loss_function": "CrossEntropyLoss",
        "epoch": 2,
        "parallel_mode": "stand_alone",
        "device_num": 1,
        "batch_size": 4,
    }
    assert d["algorithm"] == {"network": "MLP", "loss": 0.123456789}
    assert d["train_dataset"] == {"train_dataset_path": "/data/train", "train_dataset_size": 40}
    assert d["valid_dataset"] == {"valid_dataset_path": "/data/val", "valid_dataset_size": 10}
    assert d["model"] == {"path": '{"ckpt": "/x/m.ckpt"}', "size": 99}
    assert d["metric"] == {"accuracy": 0.9}
    assert d["user_defined"] == {"team": "a", "trial": 3, "dropout": 0.5}
    assert d["dataset_graph"] == {"op_type": "DataLoader", "batch_size": 4, "children": []}
    run = d["run"]
    assert run["status"] == "finished" and run["duration"] == 2.0 and run["total_steps"] == 20
    assert "hostname" not in run  # the last snapshot wins whole (writers write full ones)
    assert run["command"] == "python train.py --lr '0.12 x'"
    assert run["checkpoints"] == [{"path": "/x/m.ckpt", "size": 99}]
    assert run["seed"] == 2**63 + 5
    assert run["train_dataset_fingerprint"] == "files:abc"


def test_our_records_parse_with_mindinsight_schema(tmp_path: Path) -> None:
    mi = mindinsight_pb2(tmp_path / "mi")
    path = _full_run(tmp_path / "run")
    kinds = []
    for payload in read_records(path)[0]:
        event = mi.LineageEvent()
        event.ParseFromString(payload)  # unknown extension fields are skipped
        kinds.append(event.WhichOneof("what"))
        if kinds[-1] == "train_lineage":
            hp = event.train_lineage.hyper_parameters
            assert hp.optimizer == "SGD" and hp.batch_size == 4
            assert hp.learning_rate == pytest.approx(0.12, rel=1e-6)  # float32 in their schema
            assert event.train_lineage.model.size == 99
        if kinds[-1] == "user_defined_info":
            assert event.user_defined_info.user_info[0].map_str["team"] == "a"
    # our run snapshots are an event kind MindInsight does not know: it sees no oneof
    assert kinds == [
        "user_defined_info",
        "dataset_graph",
        None,
        "train_lineage",
        None,
        "evaluation_lineage",
    ]


def test_truncated_tail_and_corrupt_record(tmp_path: Path) -> None:
    path = _full_run(tmp_path)
    with open(path, "ab") as fh:
        fh.write(frame(user_defined_event({"late": 1}).SerializeToString())[:-3])  # being written
    assert read_lineage(tmp_path)["user_defined"] == {"team": "a", "trial": 3, "dropout": 0.5}
    data = bytearray(Path(path).read_bytes())
    data[40] ^= 0xFF  # damage the first record's payload
    Path(path).write_bytes(bytes(data))
    part = parse_lineage_file(path)
    assert part.corrupt == 1 and part.train is not None
    record = read_record(tmp_path)
    assert record is not None and record.corrupt_records == 1


def test_files_merge_oldest_first_like_mindinsight(tmp_path: Path) -> None:
    def write_file(now: int, *events: object) -> None:
        path = create_lineage_file(tmp_path, now=now)
        with open(path, "ab") as fh:
            for e in events:
                fh.write(frame(e.SerializeToString()))  # type: ignore[attr-defined]

    write_file(
        100,
        user_defined_event({"team": "a"}),
        train_event(TrainValues(optimizer="SGD", batch_size=8)),
    )
    write_file(101, eval_event(EvalValues(metrics={"acc": 0.5})), user_defined_event({"x": 1}))
    d = read_lineage(tmp_path)
    assert d["metric"] == {"acc": 0.5} and d["hyper_parameters"]["optimizer"] == "SGD"
    assert d["user_defined"] == {"team": "a", "x": 1}
    # a later training replaces everything before it (its eval and user info included)
    write_file(102, train_event(TrainValues(optimizer="Adam")))
    d = read_lineage(tmp_path)
    assert d["hyper_parameters"] == {"optimizer": "Adam"}
    assert d["metric"] == {} and d["user_defined"] == {} and d["valid_dataset"] == {}
    # a file with only user info is ignored (MindInsight needs a lineage event in the file)
    write_file(103, user_defined_event({"ignored": 1}))
    assert read_lineage(tmp_path)["user_defined"] == {}
    # within a file, the last event of each kind wins
    write_file(
        104,
        train_event(TrainValues(optimizer="A")),
        train_event(TrainValues(optimizer="B")),
    )
    assert read_lineage(tmp_path)["hyper_parameters"] == {"optimizer": "B"}


def test_nan_loss_shows_as_protobuf_json_does(tmp_path: Path) -> None:
    get_writer(tmp_path).write([train_event(TrainValues(loss=float("nan"), learning_rate=1e-3))])
    record = read_record(tmp_path)
    assert record is not None
    assert record.algorithm["loss"] == "NaN"
    assert record.loss != record.loss  # raw value stays a float NaN
    assert record.hyper_parameters["learning_rate"] == 1e-3
