"""CheckpointConfig: validation, MindSpore's precedence and defaults, getters."""

from __future__ import annotations

import pytest
import torch

from trainledger.checkpoint.config import CheckpointConfig

POLICY = (
    "save_checkpoint_steps",
    "save_checkpoint_seconds",
    "keep_checkpoint_max",
    "keep_checkpoint_per_n_minutes",
)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, (1, 0, 5, 0)),
        ({"save_checkpoint_steps": 10}, (10, 0, 5, 0)),
        # MindSpore: only seconds passed -> the default steps=1 wins (a warning says so)
        ({"save_checkpoint_seconds": 60}, (1, 0, 5, 0)),
        # both passed explicitly -> documented precedence: steps over seconds
        ({"save_checkpoint_steps": 3, "save_checkpoint_seconds": 60}, (3, 0, 5, 0)),
        ({"save_checkpoint_steps": 0, "save_checkpoint_seconds": 60}, (0, 60, 5, 0)),
        ({"save_checkpoint_steps": None, "save_checkpoint_seconds": 60}, (0, 60, 5, 0)),
        # MindSpore: only per-minutes passed -> the default max=5 wins
        ({"keep_checkpoint_per_n_minutes": 2}, (1, 0, 5, 0)),
        ({"keep_checkpoint_max": 3, "keep_checkpoint_per_n_minutes": 2}, (1, 0, 3, 0)),
        ({"keep_checkpoint_max": 0, "keep_checkpoint_per_n_minutes": 2}, (1, 0, 0, 2)),
        ({"keep_checkpoint_max": None}, (1, 0, 1, 0)),  # MindSpore keeps 1
        ({"keep_checkpoint_max": 0, "keep_checkpoint_per_n_minutes": 0}, (1, 0, 1, 0)),
        ({"save_checkpoint_steps": 0}, (0, 0, 5, 0)),
    ],
)
def test_precedence(kwargs: dict, expected: tuple) -> None:
    cfg = CheckpointConfig(**kwargs)
    assert tuple(cfg.get_checkpoint_policy()[k] for k in POLICY) == expected
    assert tuple(getattr(cfg, k) for k in POLICY) == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {
            "save_checkpoint_steps": 0,
            "save_checkpoint_seconds": 0,
            "keep_checkpoint_max": 0,
            "keep_checkpoint_per_n_minutes": 0,
        },
        {
            "save_checkpoint_steps": None,
            "save_checkpoint_seconds": None,
            "keep_checkpoint_max": None,
            "keep_checkpoint_per_n_minutes": None,
        },
    ],
)
def test_all_zero_is_value_error(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="at least one positive"):
        CheckpointConfig(**kwargs)


@pytest.mark.parametrize("name", POLICY + ("keep_best_max",))
@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), (1.5, TypeError), ("3", TypeError), (True, TypeError)]
)
def test_non_negative_ints(name: str, value: object, error: type) -> None:
    kwargs = {name: value}
    if name == "keep_best_max":
        kwargs["monitor"] = "loss"
    with pytest.raises(error, match=f"{name} expected a non-negative int.*received: "):
        CheckpointConfig(**kwargs)


def test_append_info_rules() -> None:
    cfg = CheckpointConfig(
        append_info=["epoch_num", "step_num", {"lr": 0.1, "tag": "a", "ok": True, "n": 3}]
    )
    assert cfg.append_info[:2] == ["epoch_num", "step_num"]
    with pytest.raises(TypeError, match=r"append_info\['bad'\].*list"):
        CheckpointConfig(append_info=[{"bad": [1, 2]}])
    with pytest.raises(TypeError, match="received: 3"):
        CheckpointConfig(append_info=["epoch_num", 3])
    with pytest.raises(ValueError, match="'epoch_num' or 'step_num'"):
        CheckpointConfig(append_info=["epochs"])
    with pytest.raises(ValueError, match="at most one dict"):
        CheckpointConfig(append_info=[{"a": 1}, {"b": 2}])
    with pytest.raises(TypeError, match="expected a list"):
        CheckpointConfig(append_info="epoch_num")  # type: ignore[arg-type]


def test_encryption_rules() -> None:
    for n in (16, 24, 32):
        assert CheckpointConfig(enc_key=b"k" * n).enc_key == b"k" * n
    with pytest.raises(ValueError, match="16, 24 or 32.*length 15"):
        CheckpointConfig(enc_key=b"k" * 15)
    with pytest.raises(TypeError, match="bytes"):
        CheckpointConfig(enc_key="k" * 16)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="AES-GCM"):
        CheckpointConfig(enc_key=b"k" * 16, enc_mode="AES-ECB")
    with pytest.raises(ValueError, match="AES-GCM"):
        CheckpointConfig(enc_mode="DES")
    assert CheckpointConfig(enc_key=b"k" * 16, enc_mode="AES-CBC").enc_mode == "AES-CBC"


def test_key_is_not_echoed() -> None:
    with pytest.raises(ValueError) as info:
        CheckpointConfig(enc_key=b"SECRETKEYSECRET")
    assert "SECRET" not in str(info.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(False, False), (True, "thread"), ("thread", "thread"), ("process", "process")],
)
def test_async_save(value: object, expected: object) -> None:
    assert CheckpointConfig(async_save=value).async_save == expected  # type: ignore[arg-type]


def test_other_validation() -> None:
    with pytest.raises(ValueError, match="async_save"):
        CheckpointConfig(async_save="fork")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="saved_network expected a torch.nn.Module"):
        CheckpointConfig(saved_network={"w": 1})
    net = torch.nn.Linear(2, 2)
    assert CheckpointConfig(saved_network=net).saved_network is net
    with pytest.raises(ValueError, match="format"):
        CheckpointConfig(format="ckpt")
    with pytest.raises(TypeError, match="exception_save"):
        CheckpointConfig(exception_save=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="crc_check"):
        CheckpointConfig(crc_check="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="integrated_save"):
        CheckpointConfig(integrated_save=None)  # type: ignore[arg-type]


def test_best_n_rules() -> None:
    assert CheckpointConfig(monitor="acc", mode="max").keep_best_max == 1
    cfg = CheckpointConfig(monitor="loss", keep_best_max=3)
    assert (cfg.monitor, cfg.mode, cfg.keep_best_max) == ("loss", "min", 3)
    with pytest.raises(ValueError, match="expected a monitor"):
        CheckpointConfig(keep_best_max=2)
    with pytest.raises(ValueError, match="mode expected 'min' or 'max'"):
        CheckpointConfig(monitor="acc", mode="best")
    with pytest.raises(TypeError, match="monitor"):
        CheckpointConfig(monitor=3)  # type: ignore[arg-type]
    assert "encrypted=False" in repr(CheckpointConfig())
