"""The computational graph SummaryCollector captures from the first batch."""

from __future__ import annotations

import logging

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from trainledger.callbacks.graph_capture import capture_graph
from trainledger.callbacks.summary_collector import SummaryCollector
from trainledger.run.model import Model
from trainledger.summary.graph_def import parse_graph_def
from trainledger.summary.reader import iter_events


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.drop(torch.relu(self.bn(self.fc(x))))  # a residual add


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Linear(4, 8)
        self.block = Block()
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(self.stem(x)))


def _data(n: int = 32, batch: int = 8) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=gen)
    y = (x[:, 0] > 0).long()
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


def test_tensorboard_reads_the_graph_with_module_scopes_and_data_flow(tmp_path):
    torch.manual_seed(0)
    net = Net()
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    model.train(1, _data(), callbacks=[SummaryCollector(tmp_path, collect_freq=1)])
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    nodes = {node.name: node for node in acc.Graph().node}
    fc = nodes["Net/Block[block]/Linear[fc]/linear"]
    assert fc.input == [
        "Net/Linear[stem]/linear",
        "Net/Block[block]/Linear[fc]/weight",
        "Net/Block[block]/Linear[fc]/bias",
    ]
    shapes = fc.attr["_output_shapes"].list.shape
    assert [d.size for d in shapes[0].dim] == [8, 8]  # batch 8, 8 features: the edge's shape
    bn, drop = "Net/Block[block]/BatchNorm1d[bn]", "Net/Block[block]/Dropout[drop]"
    assert {f"{bn}/batch_norm", f"{drop}/dropout", f"{bn}/running_mean"} <= set(nodes)
    block_ops = [n for n in nodes.values() if n.name.rpartition("/")[0] == "Net/Block[block]"]
    add = [n for n in block_ops if n.op == "add"]
    assert len(add) == 1 and "Net/Linear[stem]/linear" in add[0].input  # the residual edge
    assert nodes["output/output.0"].input == ["Net/Linear[head]/linear"]


def test_capture_changes_no_weights_buffers_gradients_or_rng():
    torch.manual_seed(1)
    net = Net().train()
    x, y = _data()[0]
    torch.nn.functional.cross_entropy(net(x), y).backward()  # gradients as after a step
    before = {k: v.clone() for k, v in net.state_dict().items()}
    grads = {k: p.grad.clone() for k, p in net.named_parameters()}
    rng = torch.get_rng_state()
    graph = capture_graph(net, (x, y), with_loss_fn=True)
    assert graph is not None and len(parse_graph_def(graph)) > 10
    after = net.state_dict()
    assert before.keys() == after.keys()
    for key, value in before.items():  # weights and BatchNorm statistics, num_batches_tracked
        assert torch.equal(value, after[key]), key
    for key, p in net.named_parameters():
        assert torch.equal(grads[key], p.grad), key
    assert torch.equal(rng, torch.get_rng_state())
    assert net.training


class NeedsGrad(torch.nn.Module):
    """A network that cannot be captured: it refuses to run without autograd."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            raise RuntimeError("this network needs autograd")
        return self.fc(x)


def test_uncapturable_network_warns_and_the_run_goes_on(tmp_path, caplog):
    net = NeedsGrad()
    model = Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    with caplog.at_level(logging.WARNING, logger="trainledger.summary"):
        model.train(2, _data(), callbacks=[SummaryCollector(tmp_path, collect_freq=1)])
    assert any("could not be captured" in r.getMessage() for r in caplog.records)
    events = list(iter_events(tmp_path))
    assert not any(e.HasField("graph_def") for e in events)
    loss_steps = [e.step for e in events for v in e.summary.value if v.tag == "loss/auto"]
    assert loss_steps == list(range(1, 9))


def test_self_stepping_network_is_not_run(caplog):
    class Steps(torch.nn.Module):
        steps_itself = True

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise AssertionError("must not be called")

    with caplog.at_level(logging.WARNING, logger="trainledger.summary"):
        assert capture_graph(Steps(), torch.zeros(2, 4), with_loss_fn=False) is None
    assert "steps its own optimizer" in caplog.text


@pytest.mark.parametrize("batch", [{"x": torch.zeros(2, 4)}, [torch.zeros(2, 4)]])
def test_networks_without_loss_fn_take_the_whole_batch(batch):
    class Kw(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x).mean()

    nodes = {n.name: n for n in parse_graph_def(capture_graph(Kw(), batch, False) or b"")}
    assert nodes["Kw/Linear[fc]/linear"].input[0] == "input/input.0"
    assert nodes["output/output.0"].input == ["Kw/mean"]
