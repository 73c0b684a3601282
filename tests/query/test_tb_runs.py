"""Runs of a TensorBoard logdir (no lineage files) answer queries (``query/tb_runs.py``):
logdirs written by torch's ``SummaryWriter``, Lightning's ``TensorBoardLogger`` and
TensorBoard's own writer in Keras's layout."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.query.conftest import GOLDEN_ORDER, copy_golden
from tests.query.test_golden import EXPECTED, _close
from tests.tb_logdirs import keras_run, lightning_version, scalar_event, torch_run
from trainledger.errors import LineageFileNotFoundError
from trainledger.query import LineageIndex
from trainledger.query.discovery import discover
from trainledger.query.lineage_api import filter_summary_lineage
from trainledger.storage import frame


def _dirs(result: dict[str, Any]) -> list[str]:
    return [o["summary_dir"] for o in result["object"]]


def _lineage(result: dict[str, Any], summary_dir: str) -> dict[str, Any]:
    found = [o for o in result["object"] if o["summary_dir"] == summary_dir]
    assert len(found) == 1, _dirs(result)
    return found[0]["model_lineage"]  # type: ignore[no-any-return]


@pytest.fixture
def torch_base(tmp_path: Path) -> Path:
    base = tmp_path / "runs"
    torch_run(base / "slow", {"lr": 0.001, "bs": 32, "opt": "adam"}, {"hparam/acc": 0.7}, [3, 2])
    torch_run(base / "fast", {"lr": 0.1, "bs": 64, "opt": "sgd"}, {"hparam/acc": 0.9}, [3, 1, 0.5])
    return base


def test_torch_add_hparams_run_is_one_run_with_its_hparams(torch_base: Path) -> None:
    stamped = [p for p in (torch_base / "slow").iterdir() if p.is_dir()]
    assert len(stamped) == 1  # add_hparams' own <time.time()> folder
    for depth in (1, 2):  # the timestamp folder belongs to its run, at any depth
        result = filter_summary_lineage(
            str(torch_base), {"sorted_name": "summary_dir"}, max_depth=depth
        )
        assert _dirs(result) == ["./fast", "./slow"]
    fast = _lineage(result, "./fast")
    assert fast["user_defined"] == {"bs": 64.0, "lr": 0.1, "opt": "sgd"}
    assert fast["metric"] == {"hparam/acc": 0.9}  # the float32 scalar, shortest
    assert fast["learning_rate"] is None and fast["optimizer"] is None  # no lineage fields
    assert result["customized"]["user_defined/lr"]["type"] == "float"
    assert result["customized"]["metric/hparam/acc"]["type"] == "float"


def test_a_bool_hparam_is_an_int_as_every_user_defined_bool(tmp_path: Path) -> None:
    """TensorBoard's HParams hold bools (``bool_value``); under ``user_defined/`` a bool is an
    int, as ``track()`` and MindInsight store one, so a condition can test it."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    for name, amp in (("a", True), ("b", False)):  # as TensorFlow's hparams API writes them
        session = plugin_data_pb2.SessionStartInfo()
        session.hparams["amp"].bool_value = amp
        session.hparams["lr"].number_value = 0.1
        data = plugin_data_pb2.HParamsPluginData(session_start_info=session)
        plugin = summary_pb2.SummaryMetadata.PluginData(
            plugin_name="hparams", content=data.SerializeToString()
        )
        value = summary_pb2.Summary.Value(
            tag="_hparams_/session_start_info",
            metadata=summary_pb2.SummaryMetadata(plugin_data=plugin),
        )
        writer = EventFileWriter(str(tmp_path / name))
        writer.add_event(
            event_pb2.Event(wall_time=time.time(), summary=summary_pb2.Summary(value=[value]))
        )
        writer.close()
    result = filter_summary_lineage(str(tmp_path), {"user_defined/amp": {"eq": 1}})
    assert _dirs(result) == ["./a"]
    assert _lineage(result, "./a")["user_defined"]["amp"] == 1
    assert result["customized"]["user_defined/amp"]["type"] == "int"


def test_torch_runs_filter_and_sort_on_hparams_and_series(torch_base: Path) -> None:
    big = filter_summary_lineage(str(torch_base), {"user_defined/lr": {"gt": 0.01}})
    assert _dirs(big) == ["./fast"]
    by_loss = filter_summary_lineage(
        str(torch_base), {"sorted_name": "min(loss)", "sorted_type": "ascending"}
    )
    assert _dirs(by_loss) == ["./fast", "./slow"]
    assert [o["series"]["min(loss)"] for o in by_loss["object"]] == [0.5, 2.0]
    # torch's session end is written with the start and carries no end time: no status
    assert filter_summary_lineage(str(torch_base), {"status": {"eq": "finished"}})["count"] == 0


def test_lightning_versions_are_runs_at_their_depth(tmp_path: Path) -> None:
    save = tmp_path / "logs"
    lightning_version(save, "mnist", {"lr": 0.01, "layers": 2}, hp_metric=0.3, loss=0.5)
    lightning_version(save, "mnist", {"lr": 0.02, "layers": 3}, hp_metric=0.6, loss=0.4)
    # <save>/mnist/version_N is depth 2: the default depth 1 finds no run there ...
    with pytest.raises(LineageFileNotFoundError):
        filter_summary_lineage(str(save))
    # ... depth 2 does, and so does the logger's folder at the default depth
    deep = filter_summary_lineage(str(save), {"sorted_name": "summary_dir"}, max_depth=2)
    assert _dirs(deep) == ["./mnist/version_0", "./mnist/version_1"]
    near = filter_summary_lineage(str(save / "mnist"), {"sorted_name": "summary_dir"})
    assert _dirs(near) == ["./version_0", "./version_1"]
    second = _lineage(near, "./version_1")
    assert second["user_defined"] == {"layers": 3.0, "lr": 0.02}
    assert second["metric"] == {"hp_metric": 0.6}  # the tag's last point, not the first -1
    picked = filter_summary_lineage(str(save / "mnist"), {"metric/hp_metric": {"lt": 0.5}})
    assert _dirs(picked) == ["./version_0"]


HPARAMS = {"lr": 0.01, "model": {"layers": 3, "act": "relu"}, "aug": None, "sizes": (1, 2)}
#: as Lightning logs them to the HParams plugin: flattened with "/", the rest as text
FLAT = {"aug": "None", "lr": 0.01, "model/act": "relu", "model/layers": 3.0, "sizes": "(1, 2)"}


def _logged(save: Path, hp_metric: bool) -> Path:
    """A ``TensorBoardLogger`` run whose hyper-parameters go to ``hparams.yaml`` (and to the
    HParams plugin only when ``hp_metric``: Lightning pairs them with a metric)."""
    from lightning.pytorch.loggers import TensorBoardLogger

    logger = TensorBoardLogger(str(save), name="m", default_hp_metric=hp_metric)
    logger.log_hyperparams(HPARAMS)
    logger.log_metrics({"loss": 0.5}, step=1)
    logger.finalize("success")
    return Path(logger.log_dir)


@pytest.mark.parametrize("hp_metric", [False, True])
def test_a_lightning_runs_hparams_yaml_gives_its_hyperparameters(
    tmp_path: Path, hp_metric: bool
) -> None:
    """With ``default_hp_metric=False`` a run's hyper-parameters are only in its
    ``hparams.yaml``; they answer as the plugin's would (and equal them where both are)."""
    run = _logged(tmp_path / "logs", hp_metric)
    assert (run / "hparams.yaml").is_file()
    result = filter_summary_lineage(str(tmp_path / "logs" / "m"))
    assert _lineage(result, "./version_0")["user_defined"] == FLAT
    picked = filter_summary_lineage(
        str(tmp_path / "logs" / "m"), {"user_defined/model/layers": {"eq": 3}}
    )
    assert _dirs(picked) == ["./version_0"]


def test_an_hparams_yaml_written_after_the_index_read_the_run_is_found(tmp_path: Path) -> None:
    """Lightning writes ``hparams.yaml`` when the logger is finalized, after its last event:
    the file is tracked like the run's event files, and a saved listing of the format before
    (which did not track it) is taken again."""
    import sqlite3

    run = _logged(tmp_path / "logs", hp_metric=False)
    text = (run / "hparams.yaml").read_text()
    (run / "hparams.yaml").unlink()
    base = tmp_path / "logs" / "m"
    with LineageIndex(base, watch=False) as index:
        assert _lineage(index.query(None), "./version_0")["user_defined"] == {}
        (run / "hparams.yaml").write_text(text)
        assert _lineage(index.query(None), "./version_0")["user_defined"] == FLAT
        path = index.path
    (run / "hparams.yaml").unlink()
    stamp = time.time_ns() - 60 * 10**9  # (a listing taken long after: trusted, and saved)
    for folder in (run, base):
        os.utime(folder, ns=(stamp, stamp))
    with LineageIndex(base, watch=False) as index:
        assert _lineage(index.query(None), "./version_0")["user_defined"] == {}
    with sqlite3.connect(path) as conn:  # the listings and scan state of the format before
        rows = conn.execute("SELECT path, data FROM listings").fetchall()
        for name, data in rows:
            conn.execute(
                "UPDATE listings SET data = ? WHERE path = ?", (data.rsplit(",", 1)[0] + "]", name)
            )
        conn.execute(  # ("dirs/1/2" -> "dirs/1": the keys before the format was in them)
            "UPDATE scan_state SET key = substr(key, 1, length(key) - 2) WHERE key LIKE '%/2'"
        )
    (run / "hparams.yaml").write_text(text)
    os.utime(run, ns=(stamp, stamp))  # (as if the file had always been there: no new listing)
    with LineageIndex(base, watch=False) as index:
        assert _lineage(index.query(None), "./version_0")["user_defined"] == FLAT


def test_a_hostile_hparams_yaml_runs_nothing_and_costs_only_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The file may come from a shared bucket: a ``!!python/object/apply`` tag is text, a
    file over the size limit or one that is not a mapping gives nothing, with a warning, and a
    symlink is never followed."""
    from trainledger.summary import read_hparams_yaml
    from trainledger.summary.hparams_yaml import MAX_BYTES

    marker = tmp_path / "ran"
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "hparams.yaml").write_text(
        f"lr: 0.1\ncmd: !!python/object/apply:os.system ['touch {marker}']\n"
        "obj: !!python/object:collections.OrderedDict {a: 1}\n"
    )
    found = read_hparams_yaml(folder)
    assert not marker.exists()
    assert found == {"lr": 0.1, "cmd": f"['touch {marker}']", "obj/a": 1.0}
    (folder / "hparams.yaml").write_text("lr: 0.1\n" + "#" * MAX_BYTES)
    assert read_hparams_yaml(folder) == {} and "larger than" in caplog.text
    (folder / "hparams.yaml").write_text("- just\n- a list\n")
    assert read_hparams_yaml(folder) == {}
    (folder / "hparams.yaml").write_text("lr: [unclosed\n")
    assert read_hparams_yaml(folder) == {} and "skipped" in caplog.text
    outside = tmp_path / "outside.yaml"
    outside.write_text("secret: 1\n")
    (folder / "hparams.yaml").unlink()
    (folder / "hparams.yaml").symlink_to(outside)  # (may point out of the base: not opened)
    assert read_hparams_yaml(folder) == {}


def test_keras_train_and_validation_are_one_run(tmp_path: Path) -> None:
    base = tmp_path / "fit"
    keras_run(base / "a", [1.0, 0.5], [1.25, 0.875], {"units": 64, "opt": "adam"}, end_time=1e9)
    keras_run(base / "b", [1.0, 0.75], [1.5, 0.625])  # no HParams at all: its folders only
    for depth in (1, 2, 3):  # train/ and validation/ are never runs of their own
        result = filter_summary_lineage(
            str(base),
            {"sorted_name": "min(validation/epoch_loss)", "sorted_type": "ascending"},
            max_depth=depth,
            series=["last(train/epoch_loss)"],
        )
        assert _dirs(result) == ["./b", "./a"]
    a, b = result["object"][1], result["object"][0]
    assert a["series"] == {"min(validation/epoch_loss)": 0.875, "last(train/epoch_loss)": 0.5}
    assert b["series"] == {"min(validation/epoch_loss)": 0.625, "last(train/epoch_loss)": 0.75}
    assert a["model_lineage"]["user_defined"] == {"opt": "adam", "units": 64.0}
    assert a["model_lineage"]["metric"] == {"validation/epoch_loss": 0.875}  # group/tag
    assert b["model_lineage"]["user_defined"] == {} and b["model_lineage"]["metric"] == {}
    # a session end with an end time (TensorBoard's API, ours) gives the status
    finished = filter_summary_lineage(str(base), {"status": {"eq": "finished"}})
    assert _dirs(finished) == ["./a"]


def test_which_directories_are_runs(tmp_path: Path) -> None:
    base = tmp_path / "base"
    torch_run(base / "t", {"lr": 0.1}, {"acc": 1.0}, [1.0])
    stamp = next(p for p in (base / "t").iterdir() if p.is_dir())
    # a timestamp folder under a parent that is no run is a run of its own
    lone = base / "group" / "1795747763.2180219"
    shutil.copytree(stamp, lone)
    # a symlinked "validation" is not a part: the run's series stay its own
    keras_run(base / "k", [1.0], [2.0])
    (base / "other").mkdir()
    shutil.move(str(base / "k" / "validation"), base / "other" / "val")
    os.symlink(base / "other" / "val", base / "k" / "validation")
    # an empty train/ with no event file anywhere is no run
    (base / "empty" / "train").mkdir(parents=True)
    runs = {r.summary_dir: r for r in discover(str(base.resolve()), max_depth=2)}
    # (the link, reached first, names the linked folder: a run of its own, not a part)
    assert sorted(runs) == ["./group/1795747763.2180219", "./k", "./k/validation", "./t"]
    assert runs["./t"].parts == (stamp.name,)
    assert runs["./k"].parts == ("train",)
    assert all(r.tensorboard for r in runs.values())
    newest = max(m for _, _, m in runs["./t"].files)
    assert runs["./t"].update_time == newest / 1e9  # the newest event file, parts included


def test_mixed_base_keeps_mindinsight_answers_for_lineage_runs(tmp_path: Path) -> None:
    base = copy_golden(tmp_path / "runs")
    torch_run(base / "tb_torch", {"lr": 0.5}, {"hparam/acc": 0.1}, [1.0])
    keras_run(base / "tb_keras", [1.0], [1.0], {"units": 8})
    kinds = {r.summary_dir: r.tensorboard for r in discover(str(base.resolve()))}
    tensorboard = {"./tb_torch": True, "./tb_keras": True}
    assert kinds == {**{f"./{d}": False for d in GOLDEN_ORDER}, **tensorboard}
    for case in EXPECTED:
        if "error" in case:
            continue
        condition = case["condition"] or {}
        only_golden = {**condition, "summary_dir": {"in": [f"./{d}" for d in GOLDEN_ORDER]}}
        if "summary_dir" in condition:
            continue  # (covered by the golden tests themselves)
        ours = filter_summary_lineage(str(base), only_golden)
        theirs = case["result"]
        assert ours["count"] == theirs["count"], case["condition"]
        assert ours["customized"] == theirs["customized"], case["condition"]
        assert _close(ours["object"], theirs["object"], {}), case["condition"]
    everything = filter_summary_lineage(str(base), {"sorted_name": "summary_dir"})
    assert everything["count"] == len(GOLDEN_ORDER) + 2


def test_refresh_sees_new_versions_and_appended_files(
    tmp_path: Path, index_url: str | None
) -> None:
    from torch.utils.tensorboard import SummaryWriter

    save = tmp_path / "logs"
    lightning_version(save, "m", {"lr": 0.01}, hp_metric=0.3, loss=0.5)
    live = SummaryWriter(str(save / "live"))
    live.add_scalar("loss", 2.0, 0)
    live.flush()
    with LineageIndex(save, max_depth=2, index=index_url) as index:
        first = index.query({"sorted_name": "summary_dir"}, series=["min(loss)"])
        assert _dirs(first) == ["./live", "./m/version_0"]
        assert first["object"][0]["series"]["min(loss)"] == 2.0
        lightning_version(save, "m", {"lr": 0.02}, hp_metric=0.6, loss=0.4)
        live.add_scalar("loss", 1.5, 1)
        live.flush()
        stats = index.refresh()
        assert (stats.runs, stats.parsed) == (3, 2)
        again = index.query({"sorted_name": "summary_dir"}, series=["min(loss)"])
        assert _dirs(again) == ["./live", "./m/version_0", "./m/version_1"]
        assert again["object"][0]["series"]["min(loss)"] == 1.5
        assert index.refresh().parsed == 0  # nothing changed: nothing read
    live.close()


def _age_tree(root: Path, seconds: float = 100) -> None:
    """Every directory of the runs last changed ``seconds`` ago (listings then trusted)."""
    t = time.time() - seconds
    for path in [*root.rglob("*"), root]:
        if path.is_dir() and ".trainledger" not in path.parts:
            os.utime(path, (t, t))


def test_fresh_process_sees_an_append_in_a_keras_part(
    tmp_path: Path, index_url: str | None
) -> None:
    base = tmp_path / "fit"
    keras_run(base / "a", [1.0], [2.0])
    with LineageIndex(base, watch=False, index=index_url) as index:  # (makes .trainledger/)
        _age_tree(base)
        assert index.query(series=["min(validation/epoch_loss)"])["object"][0]["series"] == {
            "min(validation/epoch_loss)": 2.0
        }
    with LineageIndex(base, watch=False, index=index_url) as fresh:
        assert fresh.refresh().trusted  # unchanged: the saved scan state holds
    # another writer appends to validation/'s file: no directory changes
    path = next((base / "a" / "validation").iterdir())
    with open(path, "ab") as fh:
        fh.write(frame(scalar_event("epoch_loss", 0.25, 1).SerializeToString()))
    with LineageIndex(base, watch=False, index=index_url) as fresh:
        result = fresh.query(series=["min(validation/epoch_loss)"])
        assert result["object"][0]["series"] == {"min(validation/epoch_loss)": 0.25}


def test_damaged_event_files_cost_only_themselves(tmp_path: Path) -> None:
    base = tmp_path / "runs"
    torch_run(base / "good", {"lr": 0.1}, {"acc": 0.5}, [1.0])
    torch_run(base / "bad", {"lr": 0.2}, {"acc": 0.6}, [1.0])
    stamp = next(p for p in (base / "bad").iterdir() if p.is_dir())
    hparams_file = next(stamp.iterdir())
    data = hparams_file.read_bytes()
    hparams_file.write_bytes(data[: len(data) // 2])  # truncated mid-record: waits
    (base / "garbage" / "events.out.tfevents.1.h.2.3").parent.mkdir()
    (base / "garbage" / "events.out.tfevents.1.h.2.3").write_bytes(os.urandom(300))
    result = filter_summary_lineage(str(base), {"sorted_name": "summary_dir"})
    assert _dirs(result) == ["./bad", "./garbage", "./good"]
    assert _lineage(result, "./good")["user_defined"] == {"lr": 0.1}
    assert _lineage(result, "./garbage")["user_defined"] == {}
    bad = _lineage(result, "./bad")
    assert bad["metric"] == {}  # the metric scalars were in the lost half
