"""ModelCheckpoint inside the real Model: fit with best-N, exception_save, and a resume that
continues exactly where an uninterrupted run would be."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainledger import Callback, Model, ModelCheckpoint
from trainledger.checkpoint import checkpoint_info, latest_checkpoint, load_checkpoint
from trainledger.checkpoint.config import CheckpointConfig


def data(n: int = 6) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    return [
        (torch.randn(8, 4, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(n)
    ]


def fresh() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    return net, torch.optim.Adam(net.parameters(), lr=0.01)


def files(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_resume_recipe_matches_uninterrupted_run(tmp_path: Path) -> None:
    cfg = CheckpointConfig(save_checkpoint_steps=6, keep_checkpoint_max=2)
    net_a, opt_a = fresh()
    Model(net_a, torch.nn.CrossEntropyLoss(), opt_a).train(
        4, data(), callbacks=[ModelCheckpoint("a", tmp_path / "a", cfg)]
    )

    net_b, opt_b = fresh()
    Model(net_b, torch.nn.CrossEntropyLoss(), opt_b).train(
        2, data(), callbacks=[ModelCheckpoint("b", tmp_path / "b", cfg)]
    )
    # the documented recipe
    last = latest_checkpoint(tmp_path / "b", prefix="b")
    assert last is not None
    net_c, opt_c = fresh()
    load_checkpoint(last, net=net_c, optimizer=opt_c, strict_load=True)
    initial_epoch = checkpoint_info(last)["epoch"]
    mc = ModelCheckpoint("b", tmp_path / "b", cfg)
    Model(net_c, torch.nn.CrossEntropyLoss(), opt_c).train(
        4, data(), callbacks=[mc], initial_epoch=initial_epoch
    )

    assert mc.prefix == "b"
    for (k, va), vc in zip(net_a.state_dict().items(), net_c.state_dict().values(), strict=True):
        assert torch.allclose(va, vc, atol=1e-6), k
    assert files(tmp_path / "a") == ["a-3_6.ckpt", "a-4_6.ckpt"]
    # same number of files as uninterrupted; the resume origin (b-2_6) is kept
    assert files(tmp_path / "b") == ["b-2_6.ckpt", "b-4_6.ckpt"]
    assert checkpoint_info(tmp_path / "b" / "b-4_6.ckpt")["step"] == 24


def test_fit_keeps_best_by_eval_metric(tmp_path: Path) -> None:
    net, opt = fresh()
    cfg = CheckpointConfig(
        save_checkpoint_steps=3, keep_checkpoint_max=1, monitor="loss", mode="min", keep_best_max=2
    )
    Model(net, torch.nn.CrossEntropyLoss(), opt, metrics={"loss"}).fit(
        4, data(), data(2), callbacks=[ModelCheckpoint("f", tmp_path, cfg)]
    )
    names = files(tmp_path)
    scored = {n: checkpoint_info(tmp_path / n).get("monitor") for n in names}
    assert "f-4_6.ckpt" in names  # newest rolling
    epoch_end = [n for n in names if n.endswith("_6.ckpt")]
    assert all(scored[n] is not None for n in epoch_end)
    assert len(names) <= 3


def test_cb_params_kept_current_for_lineage(tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []

    class Reader(Callback):
        def on_train_end(self, run_context) -> None:  # type: ignore[no-untyped-def]
            cb = run_context.original_args()
            seen.append((cb.latest_ckpt_file, cb.last_save_ckpt_step))

    net, opt = fresh()
    Model(net, torch.nn.CrossEntropyLoss(), opt).train(
        2,
        data(),
        callbacks=[
            ModelCheckpoint(
                "p", tmp_path, CheckpointConfig(save_checkpoint_steps=5, async_save="thread")
            ),
            Reader(),
        ],
    )
    assert seen == [(str(tmp_path / "p-2_6.ckpt"), 12)]
    assert Path(seen[0][0]).stat().st_size > 0


def test_exception_save_in_model(tmp_path: Path) -> None:
    class Boom(Callback):
        def on_train_step_end(self, run_context) -> None:  # type: ignore[no-untyped-def]
            if run_context.original_args().cur_step_num == 8:
                raise RuntimeError("boom")

    net, opt = fresh()
    cfg = CheckpointConfig(save_checkpoint_steps=5, exception_save=True)
    with pytest.raises(Exception, match="boom"):
        Model(net, torch.nn.CrossEntropyLoss(), opt).train(
            3, data(), callbacks=[ModelCheckpoint("x", tmp_path, cfg), Boom()]
        )
    assert files(tmp_path) == ["x-1_5.ckpt", "x-2_2_breakpoint.ckpt"]
    assert load_checkpoint(tmp_path / "x-2_2_breakpoint.ckpt")["0.weight"].shape == (8, 4)
