"""``CheckpointConfig``: when to save, what to keep, and how to write checkpoints.

The save and keep rules are MindSpore's, so a ported config leaves the same files: steps take
precedence over seconds and ``keep_checkpoint_max`` over ``keep_checkpoint_per_n_minutes``,
with MindSpore's defaults (``steps=1``, ``max=5``). So ``save_checkpoint_seconds=60`` alone
still saves every step (pass ``save_checkpoint_steps=0`` to save by time), and
``keep_checkpoint_max=0`` with ``keep_checkpoint_per_n_minutes=0`` keeps one file. Each
argument a rule overrides is named in a logged warning.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from trainledger.checkpoint.crypto import check_key

__all__ = ["CheckpointConfig", "check_append_values"]

_log = logging.getLogger(__name__)


def _non_negative_int(name: str, value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} expected a non-negative int or None, received: {value!r}")
    if value < 0:
        raise ValueError(f"{name} expected a non-negative int or None, received: {value!r}")
    return value


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} expected a bool, received: {value!r}")
    return value


def check_append_values(values: Mapping[Any, Any], name: str, keys_name: str) -> dict[str, Any]:
    """``values`` must map str -> int/float/bool/str (stored in the JSON header); a copy."""
    for key, value in values.items():
        if not isinstance(key, str):
            raise TypeError(f"{keys_name} expected str, received: {key!r}")
        if not isinstance(value, (bool, int, float, str)):
            raise TypeError(
                f"{name}[{key!r}] expected int, float, bool or str, received: "
                f"{type(value).__name__}"
            )
    return dict(values)


def _check_append_info(append_info: Any) -> list[Any]:
    if append_info is None:
        return []
    if not isinstance(append_info, list):
        raise TypeError(f"append_info expected a list, received: {type(append_info).__name__}")
    out: list[Any] = []
    seen_dict = False
    for element in append_info:
        if isinstance(element, str):
            if element not in ("epoch_num", "step_num"):
                raise ValueError(
                    f"append_info strings expected 'epoch_num' or 'step_num', received: {element!r}"
                )
            if element not in out:
                out.append(element)
        elif isinstance(element, dict):
            if seen_dict:
                raise ValueError("append_info expected at most one dict, received: a second dict")
            seen_dict = True
            out.append(check_append_values(element, "append_info", "append_info dict keys"))
        else:
            raise TypeError(
                "append_info elements expected 'epoch_num', 'step_num' or a dict, "
                f"received: {element!r} ({type(element).__name__})"
            )
    return out


def _save_and_keep_rules(
    steps: Any, seconds: Any, keep_max: Any, minutes: Any
) -> tuple[int, int, int, int]:
    """The effective (steps, seconds, keep_max, per_n_minutes): MindSpore's rules, 0 for off.

    Steps over seconds, max over per-minutes; no max and no per-minutes keeps 1 file. A
    warning names each argument a rule overrides.
    """
    steps = _non_negative_int("save_checkpoint_steps", steps)
    seconds = _non_negative_int("save_checkpoint_seconds", seconds)
    keep_max = _non_negative_int("keep_checkpoint_max", keep_max)
    minutes = _non_negative_int("keep_checkpoint_per_n_minutes", minutes)
    if not steps and not seconds and not keep_max and not minutes:
        raise ValueError(
            "save_checkpoint_steps, save_checkpoint_seconds, keep_checkpoint_max and "
            "keep_checkpoint_per_n_minutes expected at least one positive value, received: "
            "all None or 0"
        )
    if steps and seconds:
        _log.warning(
            "CheckpointConfig: save_checkpoint_seconds=%d is ignored, save_checkpoint_steps=%d "
            "takes precedence (as in MindSpore); pass save_checkpoint_steps=0 to save by time",
            seconds,
            steps,
        )
        seconds = 0
    if keep_max and minutes:
        _log.warning(
            "CheckpointConfig: keep_checkpoint_per_n_minutes=%d is ignored, "
            "keep_checkpoint_max=%d takes precedence (as in MindSpore); pass "
            "keep_checkpoint_max=0 to keep by time",
            minutes,
            keep_max,
        )
        minutes = 0
    elif not keep_max and not minutes:
        _log.warning(
            "CheckpointConfig: keep_checkpoint_max=0 with keep_checkpoint_per_n_minutes=0 "
            "keeps the newest checkpoint only (as in MindSpore); pass keep_checkpoint_max=N "
            "to keep N"
        )
        keep_max = 1
    return steps, seconds, keep_max, minutes


def _append_dict(append_info: list[Any]) -> dict[str, Any] | None:
    """MindSpore's ``append_dict``: epoch_num/step_num (0 until saved), then the dict's items."""
    if not append_info:
        return None
    out: dict[str, Any] = {}
    for name in ("epoch_num", "step_num"):
        if name in append_info:
            out[name] = 0
    for element in append_info:
        if isinstance(element, dict):
            out.update(element)
    return out


def _check_async_save(async_save: Any) -> str | bool:
    if async_save is True:
        return "thread"
    if async_save is not False and async_save not in ("thread", "process"):
        raise ValueError(
            f"async_save expected a bool, 'thread' or 'process', received: {async_save!r}"
        )
    return async_save


def _check_saved_network(saved_network: Any) -> Any:
    if saved_network is not None:
        import torch  # only when a network is given: a config alone must not need torch

        if not isinstance(saved_network, torch.nn.Module):
            raise TypeError(
                "saved_network expected a torch.nn.Module or None, received: "
                f"{type(saved_network).__name__}"
            )
    return saved_network


def _check_encryption(enc_key: Any, enc_mode: Any) -> bytes | None:
    """The key as bytes (None: no encryption); the mode is checked either way."""
    if enc_key is not None:
        check_key(enc_key, enc_mode)
        return bytes(enc_key)
    if enc_mode not in ("AES-GCM", "AES-CBC"):
        raise ValueError(f"enc_mode expected 'AES-GCM' or 'AES-CBC', received: {enc_mode!r}")
    return None


def _check_best(monitor: Any, mode: Any, keep_best_max: Any) -> int:
    """How many best files to keep: ``keep_best_max``, or 1 when only ``monitor`` was given."""
    if monitor is not None and not isinstance(monitor, str):
        raise TypeError(f"monitor expected a str or None, received: {monitor!r}")
    if mode not in ("min", "max"):
        raise ValueError(f"mode expected 'min' or 'max', received: {mode!r}")
    best = _non_negative_int("keep_best_max", keep_best_max)
    if best and monitor is None:
        raise ValueError("keep_best_max > 0 expected a monitor, received: monitor=None")
    if monitor is not None and not best:
        best = 1
    return best


class CheckpointConfig:
    """Configuration of ``ModelCheckpoint``.

    Args (MindSpore's names, defaults and precedence; see the module docstring):
        save_checkpoint_steps: save every N global steps (0/None: off). Default 1.
        save_checkpoint_seconds: save when N seconds passed since the last save; used only
            when steps are off (``save_checkpoint_steps=0``).
        keep_checkpoint_max: keep the newest N rolling checkpoints. Default 5; 0/None with no
            ``keep_checkpoint_per_n_minutes`` keeps 1, as MindSpore.
        keep_checkpoint_per_n_minutes: keep one checkpoint per N-minute window; used only
            when ``keep_checkpoint_max`` is 0/None.
        integrated_save: under torch.distributed, True: rank 0 writes one full-state file
            (an FSDP state is gathered first); False: every rank writes its shard of a sharded
            checkpoint directory (docs/distributed.md). Alone, a state is always whole.
        async_save: False, True/"thread" (a named background thread) or "process" (a spawned
            writer process); training waits only for a memory copy.
        saved_network: a ``torch.nn.Module`` to save instead of the trained network.
        append_info: "epoch_num", "step_num" and at most one dict of str -> int/float/bool/str
            stored with every checkpoint.
        enc_key, enc_mode: encrypt with AES-GCM (chunked, authenticated) or AES-CBC +
            HMAC-SHA256; the key is 16, 24 or 32 bytes.
        exception_save: on an exception (Ctrl-C included) write
            ``<prefix>-<epoch>_<step>_breakpoint.ckpt`` before the error propagates.
        crc_check: verify each checkpoint's crc32c when ModelCheckpoint adopts files on resume
            (a crc32c is always written).
        format: "safetensors" (the only container).
        monitor, mode, keep_best_max: also keep the best N checkpoints by ``monitor``, read
            as ``EarlyStopping`` reads it (``run.monitored_value``, MindSpore's rule): "loss"
            is the training loss (the first output), any other name a key of
            ``eval_results`` ("eval_x" also finds "x"), else of a dict ``net_outputs``;
            "min" or "max". A best file is never removed by the other rules.
            ``monitor`` without ``keep_best_max`` keeps the best one.
    """

    def __init__(
        self,
        save_checkpoint_steps: int | None = 1,
        save_checkpoint_seconds: int | None = 0,
        keep_checkpoint_max: int | None = 5,
        keep_checkpoint_per_n_minutes: int | None = 0,
        integrated_save: bool = True,
        async_save: bool | str = False,
        saved_network: Any = None,
        append_info: list[Any] | None = None,
        enc_key: bytes | None = None,
        enc_mode: str = "AES-GCM",
        exception_save: bool = False,
        crc_check: bool = False,
        format: str = "safetensors",
        monitor: str | None = None,
        mode: str = "min",
        keep_best_max: int = 0,
    ) -> None:
        (
            self._save_checkpoint_steps,
            self._save_checkpoint_seconds,
            self._keep_checkpoint_max,
            self._keep_checkpoint_per_n_minutes,
        ) = _save_and_keep_rules(
            save_checkpoint_steps,
            save_checkpoint_seconds,
            keep_checkpoint_max,
            keep_checkpoint_per_n_minutes,
        )
        self._integrated_save = _check_bool("integrated_save", integrated_save)
        self._async_save = _check_async_save(async_save)
        self._saved_network = _check_saved_network(saved_network)
        self._append_info = _check_append_info(append_info)
        self._enc_key = _check_encryption(enc_key, enc_mode)
        self._enc_mode = enc_mode
        self._exception_save = _check_bool("exception_save", exception_save)
        self._crc_check = _check_bool("crc_check", crc_check)
        if format != "safetensors":
            raise ValueError(f"format expected 'safetensors', received: {format!r}")
        self._format = format
        self._keep_best_max = _check_best(monitor, mode, keep_best_max)
        self._monitor = monitor
        self._mode = mode

    def __repr__(self) -> str:
        return (
            f"CheckpointConfig(steps={self._save_checkpoint_steps}, "
            f"seconds={self._save_checkpoint_seconds}, max={self._keep_checkpoint_max}, "
            f"per_n_minutes={self._keep_checkpoint_per_n_minutes}, "
            f"async_save={self._async_save!r}, "
            f"encrypted={self._enc_key is not None}, monitor={self._monitor!r})"
        )

    save_checkpoint_steps = property(
        lambda self: self._save_checkpoint_steps, doc="Save every N steps (0: off)."
    )
    save_checkpoint_seconds = property(
        lambda self: self._save_checkpoint_seconds, doc="Save every N seconds (0: off)."
    )
    keep_checkpoint_max = property(
        lambda self: self._keep_checkpoint_max, doc="Newest rolling checkpoints kept (0: no limit)."
    )
    keep_checkpoint_per_n_minutes = property(
        lambda self: self._keep_checkpoint_per_n_minutes,
        doc="Keep one checkpoint per N minutes (0: off).",
    )
    integrated_save = property(lambda self: self._integrated_save)
    async_save = property(lambda self: self._async_save, doc="False, 'thread' or 'process'.")
    saved_network = property(lambda self: self._saved_network)
    append_info = property(lambda self: list(self._append_info))
    append_dict = property(
        lambda self: _append_dict(self._append_info),
        doc="MindSpore's view of ``append_info``: the extra entries saved in each checkpoint "
        "(``epoch_num``/``step_num`` show 0 until a save fills them), or None.",
    )
    enc_key = property(lambda self: self._enc_key)
    enc_mode = property(lambda self: self._enc_mode)
    exception_save = property(lambda self: self._exception_save)
    crc_check = property(lambda self: self._crc_check)
    format = property(lambda self: self._format)
    monitor = property(lambda self: self._monitor)
    mode = property(lambda self: self._mode)
    keep_best_max = property(lambda self: self._keep_best_max)

    def get_checkpoint_policy(self) -> dict[str, Any]:
        """The effective save/keep rules after precedence (0 where MindSpore says None for a
        rule that is off), and ``saved_network``."""
        return {
            "save_checkpoint_steps": self._save_checkpoint_steps,
            "save_checkpoint_seconds": self._save_checkpoint_seconds,
            "keep_checkpoint_max": self._keep_checkpoint_max,
            "keep_checkpoint_per_n_minutes": self._keep_checkpoint_per_n_minutes,
            "saved_network": self._saved_network,
        }
