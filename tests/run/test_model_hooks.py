"""Hook order and cb_params of Model.train / eval / fit."""

from __future__ import annotations

import torch

from trainledger.run.callback import Callback, RunContext
from trainledger.run.model import Model

from .helpers import OldStyle, Recorder, make_data, make_net

TRAIN_FIELDS = (
    "train_network",
    "network",
    "optimizer",
    "loss_fn",
    "epoch_num",
    "cur_epoch_num",
    "cur_step_num",
    "batch_num",
    "net_outputs",
    "train_dataset",
    "train_dataset_element",
    "list_callback",
    "parallel_mode",
    "device_number",
    "rank",
    "mode",
    "dataset_sink_mode",
    "sink_size",
    "initial_epoch",
    "last_save_ckpt_step",
    "latest_ckpt_file",
    "exception",
    "stop_reason",
)


def _model(metrics: object = None) -> Model:
    net = make_net()
    return Model(
        net,
        torch.nn.CrossEntropyLoss(),
        torch.optim.SGD(net.parameters(), lr=0.1),
        metrics=metrics,
    )


def _train_order(epochs: int, steps: int) -> list[str]:
    out = ["on_train_begin"]
    for _ in range(epochs):
        out.append("on_train_epoch_begin")
        out += ["on_train_step_begin", "on_train_step_end"] * steps
        out.append("on_train_epoch_end")
    return out + ["on_train_end"]


def _eval_order(steps: int) -> list[str]:
    return (
        ["on_eval_begin", "on_eval_epoch_begin"]
        + ["on_eval_step_begin", "on_eval_step_end"] * steps
        + ["on_eval_epoch_end", "on_eval_end"]
    )


def test_train_hook_order_new_names() -> None:
    rec = Recorder()
    _model().train(2, make_data(n=24), callbacks=[rec])
    assert rec.events == _train_order(2, 3)


def test_train_hook_order_old_names() -> None:
    old = OldStyle()
    _model().train(2, make_data(n=16), callbacks=old)
    expected = [e.replace("on_train_", "") for e in _train_order(2, 2)]
    expected = ["begin" if e == "begin" else e for e in expected]
    assert old.events == expected


def test_eval_hook_order_and_results() -> None:
    rec = Recorder(fields=("mode", "cur_step_num", "batch_num", "metrics"))
    old = OldStyle()
    model = _model(metrics={"accuracy", "loss"})
    result = model.eval(make_data(n=24), callbacks=[rec, old])
    assert rec.events == _eval_order(3)
    assert old.events == []  # eval hooks never fall back to the old train names
    assert set(result) == {"accuracy", "loss"}
    assert rec.params[-1]["metrics"] == result
    assert rec.params[-1]["mode"] == "eval"
    assert rec.params[3]["cur_step_num"] == 1  # on_eval_step_end of the first step


def test_fit_hook_order_eval_before_epoch_end() -> None:
    rec = Recorder(fields=("mode", "eval_results", "cur_step_num", "batch_num"))
    old = OldStyle()
    model = _model(metrics={"acc"})
    model.fit(2, make_data(n=16), make_data(n=24, seed=1), callbacks=[rec, old])
    epoch = (
        ["on_train_epoch_begin"]
        + ["on_train_step_begin", "on_train_step_end"] * 2
        + _eval_order(3)
        + ["on_train_epoch_end"]
    )
    assert rec.events == ["on_train_begin", *epoch, *epoch, "on_train_end"]
    # old-style callback sees only training
    assert old.events.count("step_end") == 4
    ends = [p for e, p in zip(rec.events, rec.params, strict=True) if e == "on_train_epoch_end"]
    assert all(set(p["eval_results"]) == {"acc"} for p in ends)
    # training fields restored after the evaluation
    assert [p["cur_step_num"] for p in ends] == [2, 4]
    assert all(p["mode"] == "train" and p["batch_num"] == 2 for p in ends)


def test_fit_valid_frequency() -> None:
    rec = Recorder(fields=("eval_results",))
    _model(metrics={"acc"}).fit(4, make_data(n=8), make_data(n=8), valid_frequency=2, callbacks=rec)
    ends = [
        p["eval_results"]
        for e, p in zip(rec.events, rec.params, strict=True)
        if e == "on_train_epoch_end"
    ]
    assert [bool(r) for r in ends] == [False, True, False, True]
    rec = Recorder()
    _model(metrics={"acc"}).fit(
        3, make_data(n=8), make_data(n=8), valid_frequency=[3], callbacks=rec
    )
    assert rec.events.count("on_eval_begin") == 1


def test_train_cb_params_fields() -> None:
    seen: dict[str, object] = {}

    class Grab(Callback):
        def on_train_step_end(self, run_context: RunContext) -> None:
            seen.update(run_context.original_args())

    data = make_data(n=24)
    model = _model()
    grab = Grab()
    model.train(2, data, callbacks=[grab])
    assert set(TRAIN_FIELDS) <= set(seen)
    assert seen["train_network"] is model.train_network
    assert seen["network"] is model.train_network
    assert isinstance(seen["optimizer"], torch.optim.SGD)
    assert isinstance(seen["loss_fn"], torch.nn.CrossEntropyLoss)
    assert seen["epoch_num"] == 2 and seen["cur_epoch_num"] == 2
    assert seen["cur_step_num"] == 6 and seen["batch_num"] == 3
    out = seen["net_outputs"]
    assert isinstance(out, torch.Tensor) and out.ndim == 0  # the loss
    assert seen["train_dataset"] is data
    assert isinstance(seen["train_dataset_element"], tuple)
    assert seen["list_callback"] == [grab]
    assert seen["parallel_mode"] == "stand_alone" and seen["device_number"] == 1
    assert seen["rank"] == 0
    assert seen["mode"] == "train"
    assert seen["dataset_sink_mode"] is False and seen["sink_size"] == -1
    assert seen["initial_epoch"] == 0
    assert seen["last_save_ckpt_step"] == 0 and seen["latest_ckpt_file"] is None
    assert seen["exception"] is None


def test_eval_cb_params_fields() -> None:
    seen: dict[str, object] = {}

    class Grab(Callback):
        def on_eval_end(self, run_context: RunContext) -> None:
            seen.update(run_context.original_args())

    data = make_data(n=16)
    model = _model(metrics={"loss"})
    model.eval(data, callbacks=Grab())
    assert seen["eval_network"] is model.eval_network
    assert seen["network"] is model.train_network
    assert seen["valid_dataset"] is data
    assert seen["batch_num"] == 2 and seen["cur_step_num"] == 2
    assert seen["mode"] == "eval"
    assert isinstance(seen["list_callback"], list)
    loss, y_pred, label = seen["net_outputs"]  # type: ignore[misc]
    assert loss.ndim == 0 and y_pred.shape == (8, 2) and label.shape == (8,)
    assert set(seen["metrics"]) == {"loss"}  # type: ignore[arg-type]


def test_initial_epoch_counts_from_resume_point() -> None:
    rec = Recorder(fields=("cur_epoch_num", "cur_step_num"))
    _model().train(3, make_data(n=16), callbacks=rec, initial_epoch=1)
    steps = [p for e, p in zip(rec.events, rec.params, strict=True) if e == "on_train_step_end"]
    assert [p["cur_step_num"] for p in steps] == [3, 4, 5, 6]
    assert [p["cur_epoch_num"] for p in steps] == [2, 2, 3, 3]


def test_request_stop_after_current_step_end_hooks_run() -> None:
    class StopAt(Recorder):
        def on_train_step_end(self, run_context: RunContext) -> None:
            super().on_train_step_end(run_context)
            if run_context.original_args().cur_step_num == 2:
                run_context.request_stop()

    rec = StopAt(fields=("stop_reason",))
    _model().train(5, make_data(n=24), callbacks=rec)
    assert rec.events == [
        "on_train_begin",
        "on_train_epoch_begin",
        "on_train_step_begin",
        "on_train_step_end",
        "on_train_step_begin",
        "on_train_step_end",
        "on_train_epoch_end",
        "on_train_end",
    ]
    assert rec.params[-1]["stop_reason"] == "requested"
    assert rec.params[-2]["stop_reason"] is None


def test_stop_reason_completed() -> None:
    rec = Recorder(fields=("stop_reason", "exception"))
    _model().train(1, make_data(n=8), callbacks=rec)
    assert rec.params[-1] == {"stop_reason": "completed", "exception": None}


def test_sink_mode_step_hooks_once_per_sink_unit() -> None:
    rec = Recorder(fields=("cur_step_num", "batch_num", "cur_epoch_num"))
    data = make_data(n=40)  # 5 batches; sink units of 3 wrap around the dataset
    _model().train(4, data, callbacks=rec, dataset_sink_mode=True, sink_size=3)
    assert rec.events == _train_order(4, 1)
    steps = [p for e, p in zip(rec.events, rec.params, strict=True) if e == "on_train_step_end"]
    assert [p["cur_step_num"] for p in steps] == [3, 6, 9, 12]
    assert all(p["batch_num"] == 3 for p in steps)


def test_sink_mode_full_pass() -> None:
    rec = Recorder(fields=("cur_step_num", "batch_num"))
    _model().train(2, make_data(n=40), callbacks=rec, dataset_sink_mode=True)
    steps = [p for e, p in zip(rec.events, rec.params, strict=True) if e == "on_train_step_end"]
    assert [p["cur_step_num"] for p in steps] == [5, 10]
    assert steps[0]["batch_num"] == 5


def test_eval_sink_mode_one_step_pair() -> None:
    rec = Recorder()
    _model(metrics={"acc"}).eval(make_data(n=40), callbacks=rec, dataset_sink_mode=True)
    assert rec.events == _eval_order(1)


def test_dataset_without_len_learns_batch_num() -> None:
    data = make_data(n=24)

    class NoLen:
        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(data)

    rec = Recorder(fields=("batch_num", "cur_step_num"))
    _model().train(2, NoLen(), callbacks=rec)
    assert rec.params[0]["batch_num"] is None
    assert rec.params[-1] == {"batch_num": 3, "cur_step_num": 6}


def test_dict_batches_and_network_returning_loss() -> None:
    class WithLoss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x: torch.Tensor, label: torch.Tensor) -> tuple[torch.Tensor, ...]:
            logits = self.lin(x)
            return torch.nn.functional.cross_entropy(logits, label), logits

    net = WithLoss()
    rec = Recorder(fields=("net_outputs",))
    data = [{"x": x, "label": y} for x, y in make_data(n=16)]
    Model(net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1)).train(1, data, callbacks=rec)
    outputs = rec.params[-1]["net_outputs"]
    assert isinstance(outputs, tuple) and outputs[0].ndim == 0  # loss first

    # a dict batch with loss_fn: label key is the label, the rest are keyword inputs
    class Kw(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x)

    kw = Kw()
    model = Model(
        kw,
        torch.nn.CrossEntropyLoss(),
        torch.optim.SGD(kw.parameters(), lr=0.1),
        metrics={"accuracy"},
    )
    model.train(1, data)
    assert 0.0 <= model.eval(data)["accuracy"] <= 1.0


def test_numpy_batches_are_converted() -> None:
    data = [(x.numpy(), y.numpy()) for x, y in make_data(n=16)]
    model = _model(metrics={"acc"})
    model.train(1, data)
    assert "acc" in model.eval(data)


def test_self_stepping_network_without_optimizer() -> None:
    class TrainOneStep(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = make_net()
            self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            loss = torch.nn.functional.cross_entropy(self.net(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return loss.detach()

    net = TrainOneStep()
    before = net.net[0].weight.detach().clone()
    rec = Recorder(fields=("optimizer",))
    Model(net).train(1, make_data(n=16), callbacks=rec)
    assert not torch.equal(before, net.net[0].weight)
    assert rec.params[0]["optimizer"] is net.optimizer


def test_training_reduces_loss_and_predict() -> None:
    model = _model(metrics={"loss"})
    data = make_data(n=64)
    before = model.eval(data)["loss"]
    model.train(10, data)
    assert model.eval(data)["loss"] < before
    out = model.predict(data[0][0])
    assert out.shape == (8, 2) and not out.requires_grad
    assert model.predict_network.training  # predict restores the mode


def test_eval_indexes() -> None:
    class EvalNet(torch.nn.Module):
        def __init__(self, net: torch.nn.Module) -> None:
            super().__init__()
            self.net = net

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
            logits = self.net(x)
            return logits, torch.nn.functional.cross_entropy(logits, y), y

    net = make_net()
    model = Model(
        net,
        torch.nn.CrossEntropyLoss(),
        torch.optim.SGD(net.parameters(), lr=0.1),
        metrics={"loss", "accuracy"},
        eval_network=EvalNet(net),
        eval_indexes=[1, 0, 2],
    )
    data = make_data(n=16)
    plain = Model(net, torch.nn.CrossEntropyLoss(), metrics={"loss", "accuracy"}).eval(data)
    assert model.eval(data) == plain
