"""SummaryCollector driven by hand: arguments, frequency rules, every collect_specified_data key."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import torch

from tests.callbacks.summary_helpers import drive, steps_of, tags_of, tiny_net
from trainledger.callbacks.summary_collector import SummaryCollector
from trainledger.callbacks.summary_options import (
    DEFAULT_SPECIFIED_DATA,
    process_custom_lineage_data,
    process_specified_data,
    tensor_collect_steps,
)
from trainledger.run.callback import CallbackParams, RunContext
from trainledger.summary.graph_def import parse_graph_def
from trainledger.summary.reader import iter_events, read_scalars


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"summary_dir": 3}, TypeError, "summary_dir"),
        ({"collect_freq": 0}, ValueError, "collect_freq"),
        ({"collect_freq": True}, TypeError, "collect_freq"),
        ({"collect_freq": "10"}, TypeError, "collect_freq"),
        ({"num_process": 0}, ValueError, "num_process"),
        ({"collect_tensor_freq": -2}, ValueError, "collect_tensor_freq"),
        ({"max_file_size": 0}, ValueError, "max_file_size"),
        ({"keep_default_action": "yes"}, TypeError, "keep_default_action"),
        ({"collect_specified_data": ["collect_metric"]}, TypeError, "collect_specified_data"),
        ({"collect_specified_data": {"nope": True}}, ValueError, "nope"),
        ({"collect_specified_data": {"collect_metric": 1}}, TypeError, "collect_metric"),
        ({"collect_specified_data": {"collect_graph": None}}, TypeError, "collect_graph"),
        ({"collect_specified_data": {"histogram_regular": 5}}, TypeError, "histogram_regular"),
        ({"collect_specified_data": {"histogram_regular": "("}}, ValueError, "histogram_regular"),
        ({"collect_specified_data": {"collect_landscape": 3}}, TypeError, "collect_landscape"),
        (
            {"collect_specified_data": {"collect_landscape": {"landscape_size": 2}}},
            ValueError,
            "landscape_size",
        ),
        ({"collect_specified_data": {"collect_landscape": {"unit": "day"}}}, ValueError, "unit"),
        (
            {"collect_specified_data": {"collect_landscape": {"intervals": [[1, 2]]}}},
            ValueError,
            "intervals",
        ),
        (
            {"collect_specified_data": {"collect_landscape": {"intervals": [[1, 2, "3"]]}}},
            TypeError,
            "intervals",
        ),
        (
            {"collect_specified_data": {"collect_landscape": {"create_landscape": {"x": True}}}},
            ValueError,
            "create_landscape",
        ),
        ({"collect_specified_data": {"collect_landscape": {"color": 1}}}, ValueError, "color"),
        ({"custom_lineage_data": {"a": [1]}}, TypeError, "'a'"),
        ({"custom_lineage_data": {1: 2}}, TypeError, "custom_lineage_data"),
        ({"custom_lineage_data": {"flag": True}}, TypeError, "flag"),
        ({"custom_lineage_data": "x"}, TypeError, "custom_lineage_data"),
        ({"export_options": {"tensor_format": "csv"}}, ValueError, "tensor_format"),
    ],
)
def test_bad_arguments_are_rejected_at_construction(tmp_path, kwargs, exc, match):
    kwargs = {"summary_dir": str(tmp_path), **kwargs}
    with pytest.raises(exc, match=match):
        SummaryCollector(**kwargs)


def test_valid_landscape_is_accepted(tmp_path):
    landscape = {
        "landscape_size": 3,
        "unit": "epoch",
        "num_samples": 8,
        "create_landscape": {"train": False},
        "intervals": [[1, 2, 3]],
    }
    c = SummaryCollector(tmp_path, collect_specified_data={"collect_landscape": landscape})
    assert c.collect_specified_data["collect_landscape"] == landscape
    assert SummaryCollector(tmp_path, collect_specified_data={"collect_landscape": None})


def test_keep_default_action():
    assert process_specified_data(None, True) == DEFAULT_SPECIFIED_DATA
    assert process_specified_data(None, False) == {}
    merged = process_specified_data({"collect_metric": False}, True)
    assert merged == {**DEFAULT_SPECIFIED_DATA, "collect_metric": False}
    assert process_specified_data({"collect_metric": False}, False) == {"collect_metric": False}


def test_custom_lineage_data_merged_over_hyper_config():
    env = {"MINDINSIGHT_HYPER_CONFIG": json.dumps({"custom_lineage_data": {"a": 1, "b": "x"}})}
    assert process_custom_lineage_data({"b": "mine", "c": 2.5}, env) == {
        "a": 1,
        "b": "mine",
        "c": 2.5,
    }
    assert process_custom_lineage_data(None, {}) == {}


@pytest.mark.parametrize(
    "raw",
    ["not json", json.dumps([1]), json.dumps({"custom_lineage_data": {"a": [1]}}), "x" * 100_001],
)
def test_malformed_hyper_config_is_ignored(raw, caplog):
    assert process_custom_lineage_data({"k": 1}, {"MINDINSIGHT_HYPER_CONFIG": raw}) == {"k": 1}


def test_hyper_config_read_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "MINDINSIGHT_HYPER_CONFIG", json.dumps({"custom_lineage_data": {"lr_tag": "a"}})
    )
    assert SummaryCollector(tmp_path).custom_lineage_data == {"lr_tag": "a"}


@pytest.mark.parametrize(
    "total,freq,tensor_freq,expected",
    [
        (600, 10, None, list(range(0, 600, 31))[:20]),
        (20, 10, None, [0, 10, 20]),
        (100, 1, None, list(range(0, 100, 5))),
        (10, 1, None, list(range(0, 11))),
        (30, 1, None, list(range(0, 21))),  # tensor_freq 1: the first 21 values
        (100, 7, 30, [0, 30, 60, 90]),
    ],
)
def test_tensor_collect_steps_table(total, freq, tensor_freq, expected):
    assert list(tensor_collect_steps(total, freq, tensor_freq)) == expected


def test_tensor_collect_steps_unknown_length():
    assert tensor_collect_steps(None, 10, None) is None


def test_first_step_then_every_collect_freq(tmp_path):
    drive(SummaryCollector(tmp_path, collect_freq=5), epochs=3, batch_num=7)
    assert steps_of(tmp_path, "loss/auto") == [1, 5, 10, 15, 20]
    assert steps_of(tmp_path, "learning_rate/auto") == [1, 5, 10, 15, 20]


def test_sink_mode_unit_is_the_epoch(tmp_path):
    drive(SummaryCollector(tmp_path, collect_freq=2), epochs=6, sink=True, sink_size=4)
    assert steps_of(tmp_path, "loss/auto") == [4, 8, 16, 24]


def test_never_twice_for_the_same_step(tmp_path):
    c = SummaryCollector(tmp_path, collect_freq=1)
    params = CallbackParams(
        network=tiny_net(),
        optimizer=None,
        epoch_num=1,
        batch_num=3,
        cur_epoch_num=1,
        cur_step_num=1,
        net_outputs=torch.tensor(0.5),
        list_callback=[c],
        mode="train",
        dataset_sink_mode=False,
    )
    rc = RunContext(params)
    with c:
        c.on_train_begin(rc)
        c.on_train_step_end(rc)
        c.on_train_step_end(rc)
        params.cur_step_num = 2
        c.on_train_step_end(rc)
        c.on_train_step_end(rc)
        c.on_train_end(rc)
    assert steps_of(tmp_path, "loss/auto") == [1, 2]


def test_metric_is_mean_of_first_output_and_lr_from_optimizer(tmp_path):
    drive(
        SummaryCollector(tmp_path, collect_freq=1),
        epochs=1,
        batch_num=2,
        outputs=lambda step: (torch.tensor([1.0, 3.0 * step]), torch.zeros(2)),
    )
    scalars = read_scalars(tmp_path)
    assert scalars["loss/auto"][2].tolist() == [2.0, 3.5]
    np.testing.assert_allclose(scalars["learning_rate/auto"][2], [0.05, 0.05])


def test_metric_switched_off(tmp_path):
    drive(
        SummaryCollector(tmp_path, collect_freq=1, collect_specified_data={"collect_metric": False})
    )
    assert not {"loss/auto", "learning_rate/auto"} & tags_of(tmp_path)


def test_unparsable_loss_is_skipped_with_a_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="trainledger.summary"):
        drive(SummaryCollector(tmp_path, collect_freq=1), outputs=lambda step: None)
    assert "loss/auto" not in tags_of(tmp_path)
    assert "learning_rate/auto" in tags_of(tmp_path)
    assert any("no loss" in r.getMessage() for r in caplog.records)


def test_graph_is_a_graphdef_written_once(tmp_path):
    drive(SummaryCollector(tmp_path, collect_freq=1), net=tiny_net())
    graphs = [e.graph_def for e in iter_events(tmp_path) if e.HasField("graph_def")]
    assert len(graphs) == 1
    names = {node.name for node in parse_graph_def(graphs[0])}
    assert {"Sequential/Linear[0]/linear", "Sequential/ReLU[1]/relu"} <= names


def test_graph_switched_off(tmp_path):
    drive(SummaryCollector(tmp_path, collect_specified_data={"collect_graph": False}))
    assert not any(e.HasField("graph_def") for e in iter_events(tmp_path))


def test_input_images_are_collected(tmp_path):
    images = torch.rand(4, 3, 6, 6)
    drive(SummaryCollector(tmp_path, collect_freq=5), batch=(images, torch.zeros(4)))
    assert steps_of(tmp_path, "input_data/auto") == [1, 5, 10]
    image = next(
        v.image
        for e in iter_events(tmp_path)
        for v in e.summary.value
        if v.tag == "input_data/auto"
    )
    assert (image.height, image.width, image.colorspace) == (14, 14, 3)  # a 2x2 grid


def test_non_image_input_disables_input_collection(tmp_path, caplog):
    c = SummaryCollector(tmp_path, collect_freq=1)
    with caplog.at_level(logging.WARNING, logger="trainledger.summary"):
        drive(c)  # MLP batches: (3, 4) features
    assert "input_data/auto" not in tags_of(tmp_path)
    assert c.collect_specified_data["collect_input_data"] is False
    assert sum("image batches" in r.getMessage() for r in caplog.records) == 1


def test_input_data_switched_off(tmp_path):
    drive(
        SummaryCollector(tmp_path, collect_specified_data={"collect_input_data": False}),
        batch=(torch.rand(2, 1, 4, 4),),
    )
    assert "input_data/auto" not in tags_of(tmp_path)


def test_histograms_default_to_the_first_five_parameters(tmp_path):
    net = torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(4)])  # 8 parameters
    drive(SummaryCollector(tmp_path, collect_freq=5), net=net)
    hist_tags = {t for t in tags_of(tmp_path) if t.endswith("/auto") and t[0].isdigit()}
    assert hist_tags == {
        "0.weight/auto",
        "0.bias/auto",
        "1.weight/auto",
        "1.bias/auto",
        "2.weight/auto",
    }
    assert steps_of(tmp_path, "0.weight/auto") == [1, 5, 10]


def test_histogram_regular_selects_by_regex(tmp_path):
    drive(SummaryCollector(tmp_path, collect_specified_data={"histogram_regular": r"^2\."}))
    assert {t for t in tags_of(tmp_path) if t[0].isdigit()} == {"2.weight/auto", "2.bias/auto"}


def test_no_histograms_without_the_key(tmp_path):
    drive(
        SummaryCollector(
            tmp_path, collect_specified_data={"collect_metric": True}, keep_default_action=False
        )
    )
    assert tags_of(tmp_path) == {"loss/auto", "learning_rate/auto"}


def test_tensor_frequency_rule_default_caps_at_20(tmp_path):
    c = SummaryCollector(tmp_path, collect_freq=1)
    drive(
        c,
        epochs=4,
        batch_num=25,
        on_step=lambda s: c.add_value("tensor", "act", torch.full((2,), float(s))),
    )
    tensor_steps = steps_of(tmp_path, "act")
    assert tensor_steps == [1, *range(5, 100, 5)] and len(tensor_steps) == 20
    assert steps_of(tmp_path, "loss/auto") == list(range(1, 101))
    # the value written at a step is the one staged during that step
    values = {
        e.step: np.frombuffer(v.tensor.tensor_content, "<f4")[0]
        for e in iter_events(tmp_path)
        for v in e.summary.value
        if v.tag == "act"
    }
    assert all(values[s] == s for s in tensor_steps)


def test_collect_tensor_freq(tmp_path):
    c = SummaryCollector(tmp_path, collect_freq=7, collect_tensor_freq=30)
    drive(c, epochs=4, batch_num=25, on_step=lambda s: c.add_value("tensor", "act", torch.zeros(2)))
    assert steps_of(tmp_path, "act") == [1, 30, 60, 90]
    assert steps_of(tmp_path, "loss/auto") == [1, *range(7, 101, 7)]


def test_tensor_rule_small_run_follows_collect_freq(tmp_path):
    c = SummaryCollector(tmp_path, collect_freq=10)
    drive(c, epochs=2, batch_num=10, on_step=lambda s: c.add_value("tensor", "act", torch.zeros(1)))
    assert steps_of(tmp_path, "act") == [1, 10, 20]


def test_rollover_keeps_all_data(tmp_path):
    drive(SummaryCollector(tmp_path, collect_freq=1, max_file_size=400), epochs=3, batch_num=10)
    assert len(list(tmp_path.glob("*tfevents*"))) > 2
    assert steps_of(tmp_path, "loss/auto") == list(range(1, 31))


def test_export_tensors_as_npy(tmp_path):
    c = SummaryCollector(tmp_path, collect_freq=5, export_options={"tensor_format": "npy"})
    drive(
        c,
        epochs=1,
        batch_num=5,
        on_step=lambda s: c.add_value("tensor", "act/x", torch.ones(3) * s),
    )
    (export_dir,) = tmp_path.glob("export_*")
    names = sorted(p.name for p in (export_dir / "tensor").iterdir())
    assert names == ["act%2Fx_1.npy", "act%2Fx_5.npy"]
    assert np.load(export_dir / "tensor" / "act%2Fx_5.npy").tolist() == [5.0, 5.0, 5.0]


def test_more_than_one_collector_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="one SummaryCollector"):
        drive(SummaryCollector(tmp_path / "a"), extra=[SummaryCollector(tmp_path / "b")])


def test_record_is_closed_after_the_run(tmp_path):
    c = SummaryCollector(tmp_path)
    drive(c)
    assert c.summary_record is None


def _lineage(run_dir):
    from trainledger.lineage.reader import read_record

    return read_record(run_dir)


def test_lineage_switches_write_through_the_lineage_writer(tmp_path):
    drive(SummaryCollector(tmp_path, custom_lineage_data={"team": "a", "trial": 3}), epochs=2)
    record = _lineage(tmp_path)
    assert record is not None
    assert record.hyper_parameters["optimizer"] == "SGD"
    assert record.hyper_parameters["epoch"] == 2
    assert record.user_defined == {"team": "a", "trial": 3}
    assert record.status == "finished"
    assert record.dataset_graph  # the train dataset graph
    assert list(tmp_path.glob("*_lineage"))
    assert not {"train_lineage", "custom_lineage_data"} & tags_of(tmp_path)


def test_train_lineage_off_keeps_dataset_graph_and_custom_data(tmp_path):
    drive(
        SummaryCollector(
            tmp_path,
            custom_lineage_data={"team": "a"},
            collect_specified_data={"collect_train_lineage": False},
        )
    )
    record = _lineage(tmp_path)
    assert record.hyper_parameters == {} and record.run == {}
    assert record.dataset_graph and record.user_defined == {"team": "a"}


def test_dataset_graph_off(tmp_path):
    drive(SummaryCollector(tmp_path, collect_specified_data={"collect_dataset_graph": False}))
    record = _lineage(tmp_path)
    assert record.hyper_parameters["optimizer"] == "SGD" and not record.dataset_graph


def test_no_lineage_when_switched_off(tmp_path):
    drive(
        SummaryCollector(
            tmp_path, collect_specified_data={"collect_metric": True}, keep_default_action=False
        )
    )
    assert _lineage(tmp_path) is None


def test_learning_rate_follows_a_scheduler(tmp_path):
    net = tiny_net()
    opt = torch.optim.SGD(net.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    c = SummaryCollector(
        tmp_path,
        collect_freq=1,
        keep_default_action=False,
        collect_specified_data={"collect_metric": True},
    )
    params = CallbackParams(
        network=net,
        optimizer=opt,
        epoch_num=1,
        batch_num=4,
        cur_epoch_num=1,
        cur_step_num=0,
        net_outputs=torch.tensor(0.5),
        list_callback=[c],
        mode="train",
        dataset_sink_mode=False,
    )
    rc = RunContext(params)
    with c:
        c.on_train_begin(rc)
        for step in range(1, 5):
            params.cur_step_num = step
            c.on_train_step_end(rc)
            opt.step()
            sched.step()
        c.on_train_end(rc)
    assert read_scalars(tmp_path)["learning_rate/auto"][2].tolist() == [1.0, 0.5, 0.25, 0.125]


def test_metric_only_fast_path_keeps_order_with_staged_values(tmp_path):
    """Metric-only collection buffers loss/lr rows; staged values and tensor steps take the
    general path, and every point lands in step order (TensorBoard purges out-of-order ones)."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    c = SummaryCollector(
        tmp_path,
        collect_freq=2,
        keep_default_action=False,
        collect_specified_data={"collect_metric": True},
    )

    def stage(step):
        if step % 7 == 0:
            c.add_value("scalar", "user/x", float(step))
        c.add_value("tensor", "act", torch.zeros(1))

    drive(c, epochs=3, batch_num=20, on_step=stage)
    expected = [1, *range(2, 61, 2)]
    assert steps_of(tmp_path, "loss/auto") == expected
    assert steps_of(tmp_path, "learning_rate/auto") == expected
    # staged at 7, 14, ..., 56: written at the next regular step; the one staged at 21 (a
    # tensor-only step) is discarded with that step, as MindSpore's plugin filter does
    assert steps_of(tmp_path, "user/x") == [8, 14, 28, 36, 42, 50, 56]
    # 60 steps, collect_freq 2: 31 regular steps > 20, so tensors every 60 // 19 = 3 steps
    assert steps_of(tmp_path, "act") == [1, *range(3, 58, 3)]
    events = [e.step for e in iter_events(tmp_path) if e.summary.value]
    assert events == sorted(events)
    acc = ea.EventAccumulator(str(tmp_path), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss/auto")] == expected


class _SelfStepping(torch.nn.Module):
    """A network that takes its own optimisation step (MindSpore's TrainOneStepCell) and
    returns the loss; with ``static`` it returns one buffer that it rewrites every step, as a
    CUDA-graph replay does. With ``scale`` the loss is returned as an integer tensor (the
    loss times ``scale``), which the collector cannot read as a float at once, so it takes
    the deferred path that device losses take."""

    def __init__(self, static: bool, scale: int | None = None) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.fc.parameters(), lr=0.01)
        self.static = static
        self.scale = scale
        dtype = torch.float32 if scale is None else torch.int64
        self.register_buffer("out", torch.zeros((), dtype=dtype))
        self.seen: list[float] = []

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.optimizer.zero_grad()
        loss = ((self.fc(x).squeeze(1) - y) ** 2).mean()
        loss.backward()
        self.optimizer.step()
        out = loss.detach() if self.scale is None else (loss.detach() * self.scale).long()
        self.seen.append(float(out.item()))
        if not self.static:
            return out
        self.out.copy_(out)
        return self.out


@pytest.mark.parametrize("scale", [None, 1000], ids=["float-now", "int-deferred"])
@pytest.mark.parametrize("static", [False, True])
def test_loss_of_every_step_is_exact(tmp_path, static, scale):
    """A CPU float loss is read at once. Any other loss (on a device, or not a float) is kept
    and read with its batch of rows; a loss written into one buffer every step is detected
    (same storage as the step before) and read at once."""
    from trainledger.run.model import Model

    gen = torch.Generator().manual_seed(0)
    data = [(torch.randn(8, 4, generator=gen), torch.randn(8, generator=gen)) for _ in range(40)]
    net = _SelfStepping(static, scale)
    collector = SummaryCollector(
        tmp_path,
        collect_freq=1,
        keep_default_action=False,
        collect_specified_data={"collect_metric": True},
    )
    Model(net).train(2, data, callbacks=[collector])
    assert len(net.seen) == 80
    assert len(set(net.seen)) > 40  # the losses differ, so a mislabelled step would show
    steps, _, values = read_scalars(tmp_path)["loss/auto"]
    assert steps.tolist() == list(range(1, 81))
    np.testing.assert_array_equal(values, np.asarray(net.seen, dtype=np.float32))


class _ShapedLoss(torch.nn.Module):
    """Steps itself and returns its loss as ``size`` numbers (the loss, twice it, ...; the
    collector writes their mean), or as a scalar at the first step when ``scalar_first``."""

    steps_itself = True

    def __init__(self, size: int, scalar_first: bool) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.fc.parameters(), lr=0.01)
        self.size = size
        self.scalar_first = scalar_first
        self.seen: list[float] = []

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.optimizer.zero_grad()
        loss = ((self.fc(x).squeeze(1) - y) ** 2).mean()
        loss.backward()
        self.optimizer.step()
        if self.scalar_first and not self.seen:
            out = loss.detach()
        else:
            out = torch.stack([loss * (i + 1) for i in range(self.size)]).detach()
        self.seen.append(float(out.mean()))
        return out


@pytest.mark.parametrize("size", [1, 2])
@pytest.mark.parametrize("scalar_first", [False, True])
def test_loss_that_is_not_a_scalar_tensor_is_collected_at_every_step(tmp_path, size, scalar_first):
    """A loss of shape (n,) takes the general path, which writes its mean (MindSpore's rule)
    at every step, also when the first step's loss was a scalar (the per-step path then
    finds it cannot read the loss and falls back)."""
    from trainledger.run.model import Model

    gen = torch.Generator().manual_seed(1)
    data = [(torch.randn(8, 4, generator=gen), torch.randn(8, generator=gen)) for _ in range(30)]
    net = _ShapedLoss(size, scalar_first)
    collector = SummaryCollector(
        tmp_path,
        collect_freq=1,
        keep_default_action=False,
        collect_specified_data={"collect_metric": True},
    )
    Model(net).train(1, data, callbacks=[collector])
    steps, _, values = read_scalars(tmp_path)["loss/auto"]
    assert steps.tolist() == list(range(1, 31))
    np.testing.assert_allclose(values, np.asarray(net.seen, dtype=np.float32), rtol=1e-6)
    assert read_scalars(tmp_path)["learning_rate/auto"][0].tolist() == list(range(1, 31))


def test_read_deferred_reads_tensors_of_any_dtype_and_keeps_other_columns():
    from trainledger.callbacks.collected_values import read_deferred

    assert read_deferred([], 2) == []
    rows = [
        (1, 10.0, torch.tensor(0.5), 0.1),
        (2, 11.0, torch.tensor(0.25, dtype=torch.bfloat16), 0.1),
        (3, 12.0, 0.125, 0.2),  # already read (a reused loss buffer)
        (4, 13.0, torch.tensor(float("nan")), 0.2),
    ]
    out = read_deferred(rows, 2)
    assert [r[:2] + r[3:] for r in out] == [r[:2] + r[3:] for r in rows]
    assert out[0][2] == 0.5 and out[1][2] == 0.25 and out[2][2] == 0.125
    assert np.isnan(out[3][2])
    assert all(type(r[2]) is float for r in out)
    same = [(i, 1.0, torch.tensor(float(i)), 0.1) for i in range(1, 300)]  # the one-call path
    assert [r[2] for r in read_deferred(same, 2)] == [float(i) for i in range(1, 300)]


@pytest.mark.parametrize("limit", ["rows", "age"])
def test_per_step_rows_reach_the_file_during_the_epoch(tmp_path, monkeypatch, limit):
    """Buffered loss/lr rows are handed to the writer when the buffer is full or old, not
    only at epoch end, so a live reader sees the curve grow while the epoch runs."""
    import time

    from trainledger.callbacks import summary_rows as module
    from trainledger.run.callback import Callback
    from trainledger.run.model import Model

    if limit == "rows":
        monkeypatch.setattr(module, "ROWS_PER_BATCH", 8)
    else:
        monkeypatch.setattr(module, "MAX_AGE", 0.05)
    seen: dict[int, list[int]] = {}
    # step 1 is written by the general path; then batches of 8 rows (2..9, 10..17), or the
    # rows buffered before the pause, flushed at step 13 (a slow machine may flush more)
    expected = list(range(1, 18)) if limit == "rows" else list(range(1, 14))

    class Reader(Callback):
        def on_train_step_end(self, run_context):
            step = run_context.original_args().cur_step_num
            if limit == "age" and step == 12:
                time.sleep(0.06)  # the rows buffered since step 2 are now old
            if step == 20:
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:  # the writer thread is asynchronous
                    scalars = read_scalars(tmp_path)
                    seen[step] = scalars["loss/auto"][0].tolist() if scalars else []
                    if len(seen[step]) >= len(expected):  # each batch is its own write
                        break
                    time.sleep(0.01)

    net = tiny_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(0)
    data = [(torch.randn(4, 4, generator=gen), torch.randn(4, 2, generator=gen)) for _ in range(30)]
    collector = SummaryCollector(
        tmp_path,
        collect_freq=1,
        keep_default_action=False,
        collect_specified_data={"collect_metric": True},
    )
    Model(net, torch.nn.MSELoss(), opt).train(1, data, callbacks=[collector, Reader()])
    assert seen[20][: len(expected)] == expected
    assert seen[20] == list(range(1, len(seen[20]) + 1))
    assert read_scalars(tmp_path)["loss/auto"][0].tolist() == list(range(1, 31))


def test_cpu_loss_whose_dtype_changes_mid_run_is_still_written(tmp_path):
    """The per-step path reads a CPU loss as a number when the first step's loss was a
    float; a later integer or float64 loss is written as its value, not dropped."""
    from trainledger.run.model import Model

    class Changing(torch.nn.Module):
        steps_itself = True

        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 1)
            self.optimizer = torch.optim.SGD(self.fc.parameters(), lr=0.01)
            self.calls = 0

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            dtype = [torch.float32, torch.int64, torch.float64][(self.calls - 1) % 3]
            return torch.tensor(self.calls * 2, dtype=dtype)

    data = [(torch.zeros(2, 4), torch.zeros(2)) for _ in range(12)]
    collector = SummaryCollector(
        tmp_path,
        collect_freq=1,
        keep_default_action=False,
        collect_specified_data={"collect_metric": True},
    )
    Model(Changing()).train(1, data, callbacks=[collector])
    steps, _, values = read_scalars(tmp_path)["loss/auto"]
    assert steps.tolist() == list(range(1, 13))
    assert values.tolist() == [2.0 * s for s in range(1, 13)]


def test_device_stats_are_recorded_with_each_collection(tmp_path, monkeypatch):
    """``collect_device_stats``: the allocator's counters (run.device_memory, read on the
    host) as ``device/<stat>`` scalars at every record; here the CUDA counters are replaced by
    a counter of calls, so the values say which record read them."""
    from trainledger.callbacks import collected_values
    from trainledger.run.model import Model

    calls: list[str] = []

    def memory(device):
        calls.append(device.type)
        n = float(len(calls))
        return {"memory_allocated_mib": n, "memory_reserved_mib": 2 * n}

    monkeypatch.setattr(collected_values, "device_memory", memory)
    net = tiny_net()
    data = [(torch.randn(4, 4), torch.randn(4, 2)) for _ in range(6)]
    collector = SummaryCollector(
        tmp_path,
        collect_freq=2,
        keep_default_action=False,
        collect_specified_data={"collect_metric": True, "collect_device_stats": True},
    )
    Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1)).train(
        1, data, callbacks=[collector]
    )
    scalars = read_scalars(tmp_path)
    assert scalars["device/memory_allocated_mib"][0].tolist() == [1, 2, 4, 6]
    assert scalars["device/memory_allocated_mib"][2].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert scalars["device/memory_reserved_mib"][2].tolist() == [2.0, 4.0, 6.0, 8.0]
    assert len(scalars["loss/auto"][0]) == 4  # the general path serves every record


def test_device_stats_of_a_cpu_network_warn_once_and_write_nothing(tmp_path, caplog):
    from trainledger.run.model import Model

    net = tiny_net()
    data = [(torch.randn(4, 4), torch.randn(4, 2)) for _ in range(4)]
    collector = SummaryCollector(
        tmp_path, collect_freq=1, collect_specified_data={"collect_device_stats": True}
    )
    with caplog.at_level(logging.WARNING, logger="trainledger.summary"):
        Model(net, torch.nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1)).train(
            1, data, callbacks=[collector]
        )
    assert not any(tag.startswith("device/") for tag in read_scalars(tmp_path))
    warned = [r for r in caplog.records if "device stats of CUDA devices only" in r.message]
    assert len(warned) == 1 and "cpu" in warned[0].getMessage()


def test_with_histograms_the_fast_path_serves_the_steps_that_are_not_due(tmp_path, monkeypatch):
    """The defaults (histograms of the first parameters): steps that are not due skip the
    general path, and the summary is the one the general path at every step writes."""
    from trainledger.run import Model

    def train(run: str, general_every_step: bool) -> list[int]:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
        g = torch.Generator().manual_seed(0)
        data = [(torch.randn(5, 4, generator=g), torch.randint(0, 3, (5,), generator=g))] * 23
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        collector = SummaryCollector(tmp_path / run, collect_freq=5, collect_specified_data={
            "collect_landscape": None})  # fmt: skip
        general: list[int] = []
        real = collector._general_step

        def counted(run_context: RunContext) -> None:
            general.append(run_context.original_args().cur_step_num)
            real(run_context)
            if general_every_step:
                collector._fast_context = None

        monkeypatch.setattr(collector, "_general_step", counted)
        Model(net, torch.nn.CrossEntropyLoss(), opt).train(2, data, callbacks=[collector])
        return general

    fast = train("fast", False)
    assert fast == [1, 5, 10, 15, 20, 25, 30, 35, 40, 45]  # the first step and the due ones
    assert train("general", True) == list(range(1, 47))
    ours, theirs = read_scalars(tmp_path / "fast"), read_scalars(tmp_path / "general")
    assert sorted(ours) == sorted(theirs) and "loss/auto" in ours
    for tag, (steps, _, values) in theirs.items():
        assert ours[tag][0].tolist() == steps.tolist() and ours[tag][2].tolist() == values.tolist()
    from trainledger.summary.reader import read_histograms

    mine, others = read_histograms(tmp_path / "fast"), read_histograms(tmp_path / "general")
    assert sorted(mine) == sorted(others) and len(mine) == 4
    for tag, events in others.items():
        assert [(e.step, list(e.counts)) for e in mine[tag]] == [
            (e.step, list(e.counts)) for e in events
        ]
