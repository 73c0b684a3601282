"""ModelCheckpoint driven by a tiny hand-written loop that calls the hooks like Model does."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from trainledger.callbacks.checkpoint import ModelCheckpoint
from trainledger.checkpoint import checkpoint_info, latest_checkpoint, load_checkpoint
from trainledger.checkpoint.config import CheckpointConfig
from trainledger.errors import CheckpointWriteError
from trainledger.run.callback import Callback, CallbackParams, RunContext
from trainledger.storage import TEMP_MARKER


class Recorder(Callback):
    """Keeps a copy of the weights after every step, to compare with saved files."""

    def __init__(self) -> None:
        self.states: dict[int, dict[str, torch.Tensor]] = {}

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        self.states[cb.cur_step_num] = {k: v.clone() for k, v in cb.network.state_dict().items()}


def make_net() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2)
    return net, torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)


def drive(
    callbacks: list[Callback],
    epochs: int,
    batch_num: int = 5,
    initial_epoch: int = 0,
    net: Any = None,
    fail_at: int | None = None,
    evaluate: Callable[[int], dict[str, float]] | None = None,
    error: type[BaseException] = KeyboardInterrupt,
) -> CallbackParams:
    if net is None:
        net, opt = make_net()
    else:
        net, opt = net
    cb = CallbackParams(
        network=net,
        train_network=net,
        optimizer=opt,
        epoch_num=epochs,
        cur_epoch_num=initial_epoch,
        cur_step_num=initial_epoch * batch_num,
        batch_num=batch_num,
        initial_epoch=initial_epoch,
        latest_ckpt_file=None,
        last_save_ckpt_step=0,
        net_outputs=None,
        exception=None,
    )
    rc = RunContext(cb)
    x = torch.randn(4, 3)
    for c in callbacks:
        c.on_train_begin(rc)
    try:
        for ep in range(initial_epoch, epochs):
            cb.cur_epoch_num = ep + 1
            if evaluate is not None:
                cb.eval_results = {}
            for _ in range(batch_num):
                cb.cur_step_num += 1
                opt.zero_grad()
                loss = net(x).pow(2).mean()
                loss.backward()
                opt.step()
                cb.net_outputs = loss.detach()
                if fail_at == cb.cur_step_num:
                    raise error("boom")
                for c in callbacks:
                    c.on_train_step_end(rc)
            if evaluate is not None:
                cb.eval_results = evaluate(ep + 1)
            for c in callbacks:
                c.on_train_epoch_end(rc)
    except BaseException as exc:
        cb.exception = exc
        raise
    finally:
        for c in callbacks:
            c.on_train_end(rc)
    return cb


def files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_construction_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="without '/'"):
        ModelCheckpoint("a/b", tmp_path)
    with pytest.raises(TypeError, match="config expected a CheckpointConfig"):
        ModelCheckpoint("a", tmp_path, config={"save_checkpoint_steps": 1})  # type: ignore
    with pytest.raises(TypeError, match="prefix"):
        ModelCheckpoint(3, tmp_path)  # type: ignore[arg-type]


def test_default_directory_is_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cb = ModelCheckpoint("d")
    assert cb.directory == tmp_path
    assert cb.latest_ckpt_file_name is None


def test_names_final_save_and_cb_params(tmp_path: Path) -> None:
    rec = Recorder()
    mc = ModelCheckpoint(
        "net", tmp_path / "new", CheckpointConfig(save_checkpoint_steps=3, keep_checkpoint_max=10)
    )
    cb = drive([rec, mc], epochs=2)
    # steps 3, 6, 9 and the final step 10 (epoch 2, step 5)
    assert files(tmp_path / "new") == [
        "net-1_3.ckpt",
        "net-2_1.ckpt",
        "net-2_4.ckpt",
        "net-2_5.ckpt",
    ]
    final = str(tmp_path / "new" / "net-2_5.ckpt")
    assert mc.latest_ckpt_file_name == cb.latest_ckpt_file == final
    assert os.path.isabs(cb.latest_ckpt_file) and cb.last_save_ckpt_step == 10
    for name, step in (("net-1_3.ckpt", 3), ("net-2_4.ckpt", 9), ("net-2_5.ckpt", 10)):
        loaded = load_checkpoint(tmp_path / "new" / name)
        assert all(torch.equal(loaded[k], v) for k, v in rec.states[step].items())
        info = checkpoint_info(tmp_path / "new" / name)
        assert info["step"] == step and info["batch_num"] == 5


def test_no_duplicate_final_save(tmp_path: Path) -> None:
    drive([ModelCheckpoint("n", tmp_path, CheckpointConfig(save_checkpoint_steps=5))], epochs=2)
    assert files(tmp_path) == ["n-1_5.ckpt", "n-2_5.ckpt"]


def test_suffix_for_new_runs(tmp_path: Path) -> None:
    cfg = CheckpointConfig(save_checkpoint_steps=5)
    prefixes = []
    for _ in range(3):
        mc = ModelCheckpoint("net", tmp_path, cfg)
        drive([mc], epochs=1)
        prefixes.append(mc.prefix)
    assert prefixes == ["net", "net_1", "net_2"]
    assert files(tmp_path) == ["net-1_5.ckpt", "net_1-1_5.ckpt", "net_2-1_5.ckpt"]


def test_keep_max_and_optimizer_saved(tmp_path: Path) -> None:
    drive([ModelCheckpoint("k", tmp_path, CheckpointConfig(keep_checkpoint_max=2))], epochs=2)
    assert files(tmp_path) == ["k-2_4.ckpt", "k-2_5.ckpt"]
    net, opt = make_net()
    load_checkpoint(tmp_path / "k-2_5.ckpt", net=net, optimizer=opt, strict_load=True)
    assert opt.state_dict()["state"][0]["momentum_buffer"].shape == (2, 3)


def test_resume_keeps_prefix_retention_and_origin(tmp_path: Path) -> None:
    cfg = CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=3)
    drive([ModelCheckpoint("r", tmp_path, cfg)], epochs=2)
    assert files(tmp_path) == ["r-2_1.ckpt", "r-2_3.ckpt", "r-2_5.ckpt"]
    origin = latest_checkpoint(tmp_path, "r")
    assert origin == str(tmp_path / "r-2_5.ckpt")
    net, opt = make_net()
    load_checkpoint(origin, net=net, optimizer=opt)
    mc = ModelCheckpoint("r", tmp_path, cfg)
    drive([mc], epochs=4, initial_epoch=2, net=(net, opt))
    assert mc.prefix == "r"  # no _N suffix on resume
    # 3 files as an uninterrupted run would keep; the origin is never deleted
    assert files(tmp_path) == ["r-2_5.ckpt", "r-4_3.ckpt", "r-4_5.ckpt"]
    assert checkpoint_info(tmp_path / "r-4_5.ckpt")["step"] == 20


def test_resume_from_argument(tmp_path: Path) -> None:
    cfg = CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=2)
    drive([ModelCheckpoint("a", tmp_path, cfg)], epochs=1)
    mc = ModelCheckpoint("a", tmp_path, cfg, resume_from=tmp_path / "a-1_4.ckpt")
    drive([mc], epochs=1)
    assert files(tmp_path) == ["a-1_4.ckpt", "a-1_5.ckpt"]


def test_sweeps_stale_temp_files(tmp_path: Path) -> None:
    stale = tmp_path / f"s-1_1.ckpt{TEMP_MARKER}999999-dead"
    stale.write_bytes(b"half")
    (tmp_path / "s-1_1.ckpt").write_bytes(b"other run")  # another run's file: untouched
    drive([ModelCheckpoint("s", tmp_path, CheckpointConfig(save_checkpoint_steps=5))], epochs=1)
    assert not stale.exists()
    assert files(tmp_path) == ["s-1_1.ckpt", "s_1-1_5.ckpt"]


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_exception_save_writes_breakpoint(tmp_path: Path, error: type[BaseException]) -> None:
    rec = Recorder()
    cfg = CheckpointConfig(save_checkpoint_steps=3, exception_save=True, async_save="thread")
    with pytest.raises(error):
        drive([rec, ModelCheckpoint("e", tmp_path, cfg)], epochs=3, fail_at=7, error=error)
    assert files(tmp_path) == ["e-1_3.ckpt", "e-2_1.ckpt", "e-2_2_breakpoint.ckpt"]
    loaded = load_checkpoint(tmp_path / "e-2_2_breakpoint.ckpt")
    assert loaded["weight"].shape == (2, 3)
    assert not torch.equal(loaded["weight"], rec.states[6]["weight"])  # state at step 7


def test_no_exception_save_no_final_save(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        drive(
            [ModelCheckpoint("e", tmp_path, CheckpointConfig(save_checkpoint_steps=3))],
            epochs=3,
            fail_at=7,
            error=RuntimeError,
        )
    assert files(tmp_path) == ["e-1_3.ckpt", "e-2_1.ckpt"]


def test_breakpoint_never_deleted(tmp_path: Path) -> None:
    cfg = CheckpointConfig(keep_checkpoint_max=1, exception_save=True)
    with pytest.raises(RuntimeError):
        drive([ModelCheckpoint("b", tmp_path, cfg)], epochs=2, fail_at=3, error=RuntimeError)
    mc = ModelCheckpoint("b", tmp_path, cfg, resume_from=tmp_path / "b-1_3_breakpoint.ckpt")
    drive([mc], epochs=1)
    assert files(tmp_path) == ["b-1_3_breakpoint.ckpt", "b-1_5.ckpt"]


class PublishedFilesExist(Callback):
    """cb_params.latest_ckpt_file must only ever name a complete file."""

    def __init__(self) -> None:
        self.checked = 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        latest = run_context.original_args().latest_ckpt_file
        if latest is not None:
            load_checkpoint(latest, crc_check=True)
            self.checked += 1


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_async_modes_write_the_snapshot(tmp_path: Path, mode: str) -> None:
    rec = Recorder()
    published = PublishedFilesExist()
    mc = ModelCheckpoint(
        "a",
        tmp_path,
        CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=3, async_save=mode),
    )
    cb = drive([rec, mc, published], epochs=2)
    assert published.checked > 0
    assert files(tmp_path) == ["a-2_1.ckpt", "a-2_3.ckpt", "a-2_5.ckpt"]
    for name, step in (("a-2_1.ckpt", 6), ("a-2_3.ckpt", 8), ("a-2_5.ckpt", 10)):
        loaded = load_checkpoint(tmp_path / name, crc_check=True)
        assert all(torch.equal(loaded[k], v) for k, v in rec.states[step].items())
    assert cb.latest_ckpt_file == str(tmp_path / "a-2_5.ckpt")


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_async_failure_is_raised(tmp_path: Path, mode: str) -> None:
    (tmp_path / "f-1_2.ckpt").mkdir(parents=True)  # rename over a directory fails
    cfg = CheckpointConfig(save_checkpoint_steps=2, async_save=mode)
    mc = ModelCheckpoint("f", tmp_path, cfg, resume_from=tmp_path / "none.ckpt")
    with pytest.raises(CheckpointWriteError, match="f-1_2.ckpt"):
        drive([mc], epochs=1)  # raised at the next save (step 4)
    mc2 = ModelCheckpoint(
        "f",
        tmp_path,
        CheckpointConfig(save_checkpoint_steps=5, async_save=mode),
        resume_from=tmp_path / "none.ckpt",
    )
    (tmp_path / "f-1_5.ckpt").mkdir()
    with pytest.raises(CheckpointWriteError, match="f-1_5.ckpt"):
        drive([mc2], epochs=1)  # the last save fails: raised at train end


def test_best_n_by_eval_metric(tmp_path: Path) -> None:
    accuracy = {1: 0.5, 2: 0.9, 3: 0.6, 4: 0.95, 5: 0.4}
    cfg = CheckpointConfig(
        save_checkpoint_steps=5, keep_checkpoint_max=1, monitor="acc", mode="max", keep_best_max=2
    )
    drive(
        [ModelCheckpoint("b", tmp_path, cfg)], epochs=5, evaluate=lambda ep: {"acc": accuracy[ep]}
    )
    assert files(tmp_path) == ["b-2_5.ckpt", "b-4_5.ckpt", "b-5_5.ckpt"]
    assert checkpoint_info(tmp_path / "b-4_5.ckpt")["monitor"] == {
        "name": "acc",
        "mode": "max",
        "value": 0.95,
    }


def test_best_n_saves_at_epoch_end_when_steps_miss_it(tmp_path: Path) -> None:
    accuracy = {1: 0.5, 2: 0.9, 3: 0.6}
    cfg = CheckpointConfig(
        save_checkpoint_steps=100, keep_checkpoint_max=1, monitor="acc", mode="max", keep_best_max=1
    )
    drive(
        [ModelCheckpoint("b", tmp_path, cfg)], epochs=3, evaluate=lambda ep: {"acc": accuracy[ep]}
    )
    # epoch 1 and 2 enter the top-1 and are saved; epoch 3 does not; the final save is kept
    assert files(tmp_path) == ["b-2_5.ckpt", "b-3_5.ckpt"]


def test_best_n_by_loss_survives_resume(tmp_path: Path) -> None:
    cfg = CheckpointConfig(
        save_checkpoint_steps=1, keep_checkpoint_max=2, monitor="loss", keep_best_max=1
    )
    drive([ModelCheckpoint("l", tmp_path, cfg)], epochs=1)
    first = files(tmp_path)
    best = min(first, key=lambda n: checkpoint_info(tmp_path / n)["monitor"]["value"])
    net, opt = make_net()
    with torch.no_grad():
        net.weight.fill_(10.0)  # much worse loss from now on
    drive([ModelCheckpoint("l", tmp_path, cfg)], epochs=2, initial_epoch=1, net=(net, opt))
    assert best in files(tmp_path)


def test_append_info_and_saved_network(tmp_path: Path) -> None:
    other = torch.nn.Linear(1, 1)
    cfg = CheckpointConfig(
        save_checkpoint_steps=5,
        saved_network=other,
        append_info=["epoch_num", "step_num", {"lr": 0.1, "run": "x"}],
    )
    drive([ModelCheckpoint("x", tmp_path, cfg)], epochs=2)
    out = load_checkpoint(tmp_path / "x-2_5.ckpt")
    assert out["epoch_num"] == 2 and out["step_num"] == 10 and out["lr"] == 0.1
    assert out["run"] == "x" and out["weight"].shape == (1, 1)


def test_encrypted_model_checkpoint(tmp_path: Path) -> None:
    cfg = CheckpointConfig(save_checkpoint_steps=5, enc_key=b"0" * 32, enc_mode="AES-CBC")
    drive([ModelCheckpoint("c", tmp_path, cfg)], epochs=1)
    out = load_checkpoint(tmp_path / "c-1_5.ckpt", dec_key=b"0" * 32, dec_mode="AES-CBC")
    assert out["weight"].shape == (2, 3)


def test_seconds_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trainledger.callbacks.checkpoint as module

    clock = iter(range(0, 10_000, 25))  # every time.time() call advances 25 s
    monkeypatch.setattr(module.time, "time", lambda: float(next(clock)))
    cfg = CheckpointConfig(
        save_checkpoint_steps=0, save_checkpoint_seconds=60, keep_checkpoint_max=100
    )
    drive([ModelCheckpoint("t", tmp_path, cfg)], epochs=1, batch_num=10)
    saved = files(tmp_path)
    assert saved == ["t-1_10.ckpt", "t-1_3.ckpt", "t-1_6.ckpt", "t-1_9.ckpt"]


def test_resume_continues_the_suffixed_run(tmp_path: Path) -> None:
    cfg = CheckpointConfig(save_checkpoint_steps=5, keep_checkpoint_max=2)
    drive([ModelCheckpoint("s", tmp_path, cfg)], epochs=1)
    second = ModelCheckpoint("s", tmp_path, cfg)
    drive([second], epochs=2)
    assert second.prefix == "s_1"
    resumed = ModelCheckpoint("s", tmp_path, cfg)
    drive([resumed], epochs=3, initial_epoch=2)
    assert resumed.prefix == "s_1"
    assert files(tmp_path) == ["s-1_5.ckpt", "s_1-2_5.ckpt", "s_1-3_5.ckpt"]
