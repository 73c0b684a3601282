"""The optimizer and scheduler as configured: the rules of ``lineage.analyzers.settings``, the
round trip through a lineage file (MindInsight's schema still reads it), and the query fields
``optimizer/<name>`` and ``scheduler/<name>`` over real runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.lineage.mindinsight_schema import mindinsight_pb2
from trainledger.lineage import TrainValues, train_event
from trainledger.lineage.analyzers import configured, optimizer_settings, scheduler_settings
from trainledger.lineage.reader import parse_lineage_file, read_lineage
from trainledger.query import filter_summary_lineage
from trainledger.storage import frame, read_records


def _net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))


def test_sgd_with_momentum_is_told_apart_from_plain_sgd() -> None:
    plain = optimizer_settings(torch.optim.SGD(_net().parameters(), lr=0.1))
    nesterov = optimizer_settings(
        torch.optim.SGD(_net().parameters(), lr=0.1, momentum=0.9, nesterov=True)
    )
    assert plain["momentum"] == 0 and plain["nesterov"] == "false"
    assert nesterov["momentum"] == 0.9 and nesterov["nesterov"] == "true"
    assert plain["lr"] == nesterov["lr"] == 0.1 and plain["param_groups"] == 1


def test_adam_betas_become_one_field_each_and_kernel_flags_are_left_out() -> None:
    opt = torch.optim.Adam(_net().parameters(), lr=3e-4, betas=(0.8, 0.95), amsgrad=True)
    got = optimizer_settings(opt)
    assert got["betas.0"] == 0.8 and got["betas.1"] == 0.95 and "betas" not in got
    assert got["amsgrad"] == "true" and got["maximize"] == "false"
    assert got["eps"] == 1e-8 and got["weight_decay"] == 0
    for flag in ("foreach", "fused", "capturable", "differentiable", "params"):
        assert flag not in got
    assert set(got) <= {f for f in opt.defaults} | {"betas.0", "betas.1", "param_groups"}


def test_param_groups_record_the_first_and_the_differences() -> None:
    net = _net()
    decay = [p for n, p in net.named_parameters() if n.endswith("weight")]
    no_decay = [p for n, p in net.named_parameters() if n.endswith("bias")]
    opt = torch.optim.AdamW(
        [{"params": decay}, {"params": no_decay, "weight_decay": 0.0, "lr": 1e-3}],
        lr=1e-3,
        weight_decay=0.05,
    )
    got = optimizer_settings(opt)
    assert got["param_groups"] == 2 and got["weight_decay"] == 0.05
    assert got["groups.1.weight_decay"] == 0.0
    assert not any(k.startswith("groups.1.") and k != "groups.1.weight_decay" for k in got)


def test_a_tensor_learning_rate_is_its_float_as_written() -> None:
    got = optimizer_settings(torch.optim.Adam(_net().parameters(), lr=torch.tensor(0.1)))
    assert got["lr"] == 0.1 and isinstance(got["lr"], float)


def test_scheduler_settings_without_progress_or_lambdas() -> None:
    opt = torch.optim.SGD(_net().parameters(), lr=0.1)
    cosine = scheduler_settings(torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=50))
    assert cosine == {"type": "CosineAnnealingLR", "T_max": 50, "eta_min": 0.0}
    step = scheduler_settings(torch.optim.lr_scheduler.MultiStepLR(opt, [3, 7], gamma=0.5))
    assert step["milestones.0"] == 3 and step["milestones.1"] == 7 and step["gamma"] == 0.5
    chain = torch.optim.lr_scheduler.SequentialLR(
        opt,
        [
            torch.optim.lr_scheduler.LinearLR(opt, 0.1, total_iters=5),
            torch.optim.lr_scheduler.CosineAnnealingLR(opt, 90),
        ],
        [5],
    )
    seq = scheduler_settings(chain)
    assert seq["milestones.0"] == 5 and seq["schedulers.0.type"] == "LinearLR"
    assert seq["schedulers.0.start_factor"] == 0.1 and seq["schedulers.1.T_max"] == 90
    warm = scheduler_settings(torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.9**e))
    assert warm == {"type": "LambdaLR"}  # the lambda is no plain value
    plateau = scheduler_settings(torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=3))
    assert plateau["type"] == "ReduceLROnPlateau" and plateau["patience"] == 3
    assert plateau["mode"] == "min" and "best" not in plateau and "last_epoch" not in plateau
    assert scheduler_settings(None) == {}


def test_keys_a_scheduler_adds_to_the_groups_are_not_the_optimizers() -> None:
    opt = torch.optim.SGD(_net().parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    setup = configured(opt, sched)
    assert "max_lr" not in setup.optimizer and "initial_lr" not in setup.optimizer
    assert setup.optimizer["lr"] == pytest.approx(0.04)  # OneCycle's initial_lr: max_lr / 25
    assert setup.scheduler["type"] == "OneCycleLR" and setup.scheduler["total_steps"] == 10


def test_unreadable_objects_give_nothing_and_wrappers_are_unwrapped() -> None:
    assert optimizer_settings(None) == {} and optimizer_settings(object()) == {}
    inner = torch.optim.SGD(_net().parameters(), lr=0.2)

    class Wrapper:  # Accelerate's AcceleratedOptimizer keeps the optimizer as .optimizer
        optimizer = inner

    assert optimizer_settings(Wrapper())["lr"] == 0.2

    class Broken:
        def state_dict(self) -> dict[str, Any]:
            raise RuntimeError("cannot")

    assert scheduler_settings(Broken()) == {"type": "Broken"}


def _write(run: Path, values: TrainValues) -> Path:
    run.mkdir(parents=True)
    path = run / "events.out.events.summary.1795460000.0.host.1_lineage"
    path.write_bytes(frame(train_event(values).SerializeToString()))
    return path


def test_round_trip_and_mindinsight_still_reads_the_train_lineage(tmp_path: Path) -> None:
    settings = {"lr": 0.1, "momentum": 0.9, "nesterov": "true", "param_groups": 1, "big": 2**70}
    path = _write(
        tmp_path / "r",
        TrainValues(
            optimizer="SGD",
            learning_rate=0.1,
            optimizer_settings=settings,
            scheduler_settings={"type": "StepLR", "step_size": 3},
        ),
    )
    lineage = read_lineage(tmp_path / "r")
    assert lineage["optimizer_settings"] == {**settings, "big": float(2**70)}
    assert isinstance(lineage["optimizer_settings"]["param_groups"], int)
    assert lineage["scheduler_settings"] == {"type": "StepLR", "step_size": 3}
    mi = mindinsight_pb2(tmp_path / "mi")
    event = mi.LineageEvent()
    event.ParseFromString(read_records(path)[0][0])  # fields 101/102: unknown to MindInsight
    hp = event.train_lineage.hyper_parameters
    assert hp.optimizer == "SGD" and hp.learning_rate == pytest.approx(0.1)


def test_a_setting_of_another_type_is_refused_with_its_name() -> None:
    with pytest.raises(TypeError, match=r"setting 'betas': expected an int, float or str"):
        train_event(TrainValues(optimizer_settings={"betas": (0.9, 0.99)}))  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="received bool"):
        train_event(TrainValues(optimizer_settings={"nesterov": True}))


def test_a_damaged_setting_costs_only_itself(tmp_path: Path) -> None:
    event = train_event(TrainValues(optimizer="SGD", optimizer_settings={"lr": 0.1}))
    event.train_lineage.hyper_parameters.optimizer_settings.add(name="empty")  # no value
    run = tmp_path / "r"
    run.mkdir()
    path = run / "events.out.events.summary.1795460000.0.host.1_lineage"
    path.write_bytes(frame(event.SerializeToString()))
    parsed = parse_lineage_file(path)
    assert parsed.train is not None and parsed.train["optimizer_settings"] == {"lr": 0.1}
    assert any("optimizer[1]" in w for w in parsed.warnings)


def _train(run: Path, opt_factory: Any, sched_factory: Any = None) -> None:
    from trainledger.integrations import track

    net = _net()
    opt = opt_factory(net)
    with track(run, network=net, optimizer=opt, lr_scheduler=sched_factory and sched_factory(opt)):
        pass


def test_queries_tell_configured_optimizers_apart(tmp_path: Path) -> None:
    _train(tmp_path / "plain", lambda n: torch.optim.SGD(n.parameters(), lr=0.1))
    _train(
        tmp_path / "nesterov",
        lambda n: torch.optim.SGD(n.parameters(), lr=0.1, momentum=0.9, nesterov=True),
        lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10),
    )
    _train(tmp_path / "adam", lambda n: torch.optim.Adam(n.parameters(), betas=(0.9, 0.98)))

    def runs(cond: dict[str, Any]) -> list[str]:
        found = filter_summary_lineage(tmp_path, {**cond, "sorted_name": "summary_dir"})
        return [o["summary_dir"] for o in found["object"]]

    assert runs({"optimizer": {"eq": "SGD"}}) == ["./nesterov", "./plain"]
    assert runs({"optimizer/momentum": {"gt": 0}}) == ["./nesterov"]
    assert runs({"optimizer/nesterov": {"eq": "false"}}) == ["./plain"]
    assert runs({"optimizer/betas.1": {"eq": 0.98}}) == ["./adam"]
    assert runs({"scheduler/type": {"eq": "CosineAnnealingLR"}}) == ["./nesterov"]
    either = [{"scheduler/T_max": {"ge": 10}}, {"optimizer/amsgrad": {"eq": "false"}}]
    assert runs({"or": either}) == ["./adam", "./nesterov"]
    result = filter_summary_lineage(tmp_path, {"sorted_name": "optimizer/lr"})
    assert result["customized"]["optimizer/momentum"] == {
        "label": "optimizer/momentum",
        "required": False,
        "type": "float",  # 0 (an int) and 0.9
    }
    by_run = {o["summary_dir"]: o["model_lineage"] for o in result["object"]}
    assert by_run["./nesterov"]["scheduler_settings"]["T_max"] == 10
    assert "scheduler_settings" not in by_run["./plain"]  # only where recorded
    assert "momentum" not in by_run["./adam"]["optimizer_settings"]
