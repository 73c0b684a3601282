"""SummaryCollector inside Model.train, Model.eval and Model.fit."""

from __future__ import annotations

import pytest
import torch
from tensorboard.backend.event_processing import event_accumulator as ea

from tests.callbacks.summary_helpers import steps_of, tags_of
from trainledger.callbacks.summary_collector import SummaryCollector
from trainledger.errors import CallbackError
from trainledger.lineage.reader import read_record
from trainledger.run.model import Model
from trainledger.summary.reader import read_scalars


def _data(n: int = 40, batch: int = 8, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=gen)
    y = (x[:, 0] > 0).long()
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


def _model() -> Model:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return Model(net, torch.nn.CrossEntropyLoss(), opt, metrics={"accuracy", "loss"})


def test_train_writes_curves_histograms_graph_and_lineage(tmp_path):
    collector = SummaryCollector(tmp_path, collect_freq=2)
    _model().train(3, _data(), callbacks=[collector])  # 5 steps per epoch
    assert steps_of(tmp_path, "loss/auto") == [1, 2, 4, 6, 8, 10, 12, 14]
    assert steps_of(tmp_path, "learning_rate/auto") == [1, 2, 4, 6, 8, 10, 12, 14]
    assert {"0.weight/auto", "0.bias/auto", "2.weight/auto", "2.bias/auto"} <= tags_of(tmp_path)
    assert collector.summary_record is None  # closed by the host's context exit
    record = read_record(tmp_path)
    assert record.hyper_parameters["epoch"] == 3 and record.status == "finished"
    # TensorBoard reads the collector's files
    acc = ea.EventAccumulator(str(tmp_path), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss/auto")] == [1, 2, 4, 6, 8, 10, 12, 14]
    assert acc.Scalars("learning_rate/auto")[0].value == pytest.approx(0.1)
    nodes = {node.name: node for node in acc.Graph().node}  # the Graphs tab's data
    assert nodes["Sequential/Linear[0]/linear"].input == [
        "input/input.0",
        "Sequential/Linear[0]/weight",
        "Sequential/Linear[0]/bias",
    ]


def test_sink_mode_in_model(tmp_path):
    collector = SummaryCollector(tmp_path, collect_freq=2)
    _model().train(4, _data(), callbacks=[collector], dataset_sink_mode=True, sink_size=3)
    assert steps_of(tmp_path, "loss/auto") == [3, 6, 12]  # sink epochs 1, 2, 4


def test_loss_is_the_step_loss(tmp_path):
    losses = []

    class Spy(SummaryCollector):
        def on_train_step_end(self, run_context):
            losses.append(float(run_context.original_args().net_outputs.detach()))
            super().on_train_step_end(run_context)

    _model().train(1, _data(), callbacks=[Spy(tmp_path, collect_freq=1)])
    values = read_scalars(tmp_path)["loss/auto"][2]
    assert values.tolist() == pytest.approx(losses, rel=1e-6)


def test_eval_writes_eval_lineage(tmp_path):
    model = _model()
    results = model.eval(_data(seed=1), callbacks=[SummaryCollector(tmp_path)])
    record = read_record(tmp_path)
    assert record is not None
    assert record.metric["accuracy"] == pytest.approx(results["accuracy"])
    assert read_scalars(tmp_path) == {}  # no training curve in a pure evaluation


def test_fit_writes_eval_metrics_as_scalars(tmp_path):
    collector = SummaryCollector(tmp_path, collect_freq=5)
    _model().fit(2, _data(), valid_dataset=_data(seed=1), callbacks=[collector])
    scalars = read_scalars(tmp_path)
    assert scalars["eval/accuracy"][0].tolist() == [5, 10]
    assert scalars["loss/auto"][0].tolist() == [1, 5, 10]
    record = read_record(tmp_path)
    assert record.hyper_parameters["epoch"] == 2 and "accuracy" in record.metric


def test_two_collectors_in_one_list(tmp_path):
    with pytest.raises(CallbackError) as info:
        _model().train(
            1,
            _data(),
            callbacks=[SummaryCollector(tmp_path / "a"), SummaryCollector(tmp_path / "b")],
        )
    assert isinstance(info.value.__cause__, ValueError)
    assert "one SummaryCollector" in str(info.value)


def test_collector_can_be_reused_for_a_second_run(tmp_path):
    collector = SummaryCollector(tmp_path, collect_freq=100)
    model = _model()
    model.train(1, _data(), callbacks=[collector])
    model.train(1, _data(), callbacks=[collector])
    # per run: its scalar file and its TensorBoard HParams session file
    assert len(list(tmp_path.glob("*tfevents*"))) == 4
    assert steps_of(tmp_path, "loss/auto") == [1, 1]  # each run collects its first step
