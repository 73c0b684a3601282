"""Bad input to Model gets errors naming what was expected and what was received."""

from __future__ import annotations

import pytest
import torch

from trainledger.errors import DatasetError
from trainledger.run.model import Model

from .helpers import make_data, make_net


def _model(**kw: object) -> Model:
    net = make_net()
    return Model(net, torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("epoch", [0, -1, 1.5, True])
def test_epoch_below_one(epoch: object) -> None:
    with pytest.raises(ValueError, match=r"epoch expected an int >= 1, received"):
        _model().train(epoch, make_data())  # type: ignore[arg-type]


def test_initial_epoch_must_be_below_epoch() -> None:
    with pytest.raises(ValueError, match="initial_epoch expected a value below epoch"):
        _model().train(2, make_data(), initial_epoch=2)


def test_sink_size_zero() -> None:
    with pytest.raises(ValueError, match="sink_size expected -1 or a positive int"):
        _model().train(1, make_data(), dataset_sink_mode=True, sink_size=0)


@pytest.mark.parametrize("dataset", [3, None, "abc"])
def test_dataset_not_iterable(dataset: object) -> None:
    with pytest.raises(DatasetError, match="train_dataset expected a re-iterable of batches"):
        _model().train(1, dataset)  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # DatasetError is a TypeError
        _model().train(1, dataset)  # type: ignore[arg-type]


def test_generator_for_several_epochs() -> None:
    gen = (b for b in make_data())
    with pytest.raises(DatasetError, match="one-shot iterator"):
        _model().train(2, gen)
    _model().train(1, (b for b in make_data()))  # one pass is fine


def test_empty_dataset() -> None:
    with pytest.raises(DatasetError, match="yielded no batches"):
        _model().train(1, [])


def test_batch_shape_the_network_cannot_take() -> None:
    data = [(torch.randn(8, 5), torch.zeros(8, dtype=torch.long))]
    with pytest.raises(
        DatasetError, match=r"could not take the batch tuple\[Tensor\(shape=\(8, 5\)"
    ):
        _model().train(1, data)


def test_label_shape_the_loss_cannot_take() -> None:
    data = [(torch.randn(8, 4), torch.zeros(3, dtype=torch.long))]
    with pytest.raises(DatasetError, match="shape=\\(3,\\)") as info:
        _model().train(1, data)
    assert isinstance(info.value.__cause__, (ValueError, RuntimeError))


def test_batch_without_label() -> None:
    with pytest.raises(DatasetError, match=r"\(inputs\.\.\., label\).*received: Tensor"):
        _model().train(1, [torch.randn(8, 4)])
    with pytest.raises(DatasetError, match="label under one of"):
        _model().train(1, [{"x": torch.randn(8, 4)}])


def test_no_optimizer() -> None:
    net = make_net()
    with pytest.raises(ValueError, match="expected an optimizer.*received: optimizer=None"):
        Model(net, torch.nn.CrossEntropyLoss()).train(1, make_data())
    with pytest.raises(ValueError, match="expected an optimizer"):
        Model(net).train(1, make_data())


def test_unknown_metric_name() -> None:
    with pytest.raises(ValueError, match="unknown metric name 'acuracy'; expected one of"):
        _model(metrics={"acuracy"})


def test_eval_without_metrics() -> None:
    with pytest.raises(ValueError, match=r"Model.eval expected metrics"):
        _model().eval(make_data())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"network": "net"}, "network expected a torch.nn.Module, received: str"),
        ({"optimizer": 0.1}, "optimizer expected a torch.optim.Optimizer, received: float"),
        ({"loss_fn": 3}, "loss_fn expected a callable, received: int"),
        ({"amp_level": "O7"}, "amp_level expected one of"),
        ({"boost_level": "fast"}, "boost_level expected one of"),
        ({"eval_indexes": [0, 1, 2]}, "eval_indexes expected an eval_network"),
        ({"metrics": 5}, "metrics expected a dict"),
        ({"metrics": {"a": 1}}, r"metrics\['a'\] expected a trainledger.metrics.Metric"),
    ],
)
def test_constructor_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"network": make_net()}
    args.update(kwargs)
    with pytest.raises((TypeError, ValueError), match=message):
        Model(**args)  # type: ignore[arg-type]


def test_loss_metric_without_loss_fn() -> None:
    net = make_net()
    with pytest.raises(ValueError, match="metric 'loss' expected a loss"):
        Model(net, metrics={"loss"}).eval(make_data())


def test_fit_bad_valid_frequency() -> None:
    with pytest.raises(ValueError, match="valid_frequency expected"):
        _model(metrics={"acc"}).fit(2, make_data(), make_data(), valid_frequency=0)
