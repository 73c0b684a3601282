"""``save_checkpoint``, ``load_checkpoint``, ``load_param_into_net``, ``latest_checkpoint``.

MindSpore's names and arguments, for PyTorch modules and state dicts, on the safetensors
container of ``format.py``. Nothing is ever pickled or unpickled: an optimizer's state travels
as tensors plus a JSON tree (see ``torch_adapter.py``). torch is imported inside the functions
that handle torch objects, so ``latest_checkpoint`` and ``checkpoint_info`` work without it.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainledger.checkpoint.async_save import SyncSaver, ThreadSaver
from trainledger.checkpoint.config import check_append_values
from trainledger.checkpoint.crypto import check_key
from trainledger.checkpoint.digests import Digests, header_digests, note_loaded
from trainledger.checkpoint.exit_wait import drain_at_exit
from trainledger.checkpoint.format import is_checkpoint_path, read_container, read_info
from trainledger.checkpoint.references import check_filter_prefix, resolve_reference
from trainledger.errors import CheckpointFormatError, CheckpointLoadError, CheckpointWriteError
from trainledger.storage import (
    before_executors_stop,
    is_object_url,
    parse_checkpoint_name,
    readable_file,
    scan_dir,
)

__all__ = [
    "Checkpoint",
    "build_payload",
    "checkpoint_info",
    "latest_checkpoint",
    "load_checkpoint",
    "load_param_into_net",
    "read_checkpoint",
    "save_checkpoint",
    "wait_async_save",
]

_log = logging.getLogger(__name__)


def check_append_dict(append_dict: Any) -> dict[str, Any]:
    """``append_dict`` must map str -> int/float/bool/str (it is stored as JSON)."""
    if append_dict is None:
        return {}
    if not isinstance(append_dict, Mapping):
        raise TypeError(f"append_dict expected a dict, received: {type(append_dict).__name__}")
    return check_append_values(append_dict, "append_dict", "append_dict keys")


def build_payload(
    save_obj: Any,
    optimizer: Any = None,
    append_dict: Any = None,
    info: Mapping[str, Any] | None = None,
) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """(named tensors, header info) for a network/state dict plus an optional optimizer."""
    from trainledger.checkpoint.torch_adapter import collect_tensors, optimizer_payload

    named = collect_tensors(save_obj)
    header: dict[str, Any] = {
        "created": time.time(),
        **(info or {}),
        "append_info": check_append_dict(append_dict),
    }
    if optimizer is not None:
        tree, opt_tensors = optimizer_payload(optimizer)
        named.extend(opt_tensors)
        header["optimizer"] = tree
    return named, header


_ASYNC_LOCK = threading.Lock()
_ASYNC: Any = None


def wait_async_save() -> None:
    """Wait for the last ``save_checkpoint(..., async_save=True)``; raise its error if it failed."""
    with _ASYNC_LOCK:
        if _ASYNC is not None:
            _ASYNC.wait()


def _drain_at_exit() -> None:
    """Run while the helper threads of the write still take work (``before_executors_stop``)."""
    drain_at_exit(_ASYNC, wait_async_save)


def _make_parent(path: Path) -> None:
    """Create ``path``'s directory; a file in the way is named in a ``CheckpointWriteError``
    (``mkdir`` alone says ``FileExistsError`` about the directory it could not make)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        blocker = next(
            (p for p in (path.parent, *path.parent.parents) if p.exists() and not p.is_dir()),
            path.parent,
        )
        raise CheckpointWriteError(
            f"cannot save {str(path)!r}: expected {str(blocker)!r} to be a directory, found a file"
        ) from exc


def save_checkpoint(
    save_obj: Any,
    ckpt_file_name: str | os.PathLike[str],
    integrated_save: bool = True,
    async_save: bool = False,
    append_dict: Mapping[str, Any] | None = None,
    enc_key: bytes | None = None,
    enc_mode: str = "AES-GCM",
    *,
    optimizer: Any = None,
    info: Mapping[str, Any] | None = None,
) -> None:
    """Save a Module, a state dict or a list of ``{"name", "data"}`` dicts, atomically.

    ``ckpt_file_name`` gets ``.ckpt`` appended when it has no suffix (MindSpore's rule).
    ``async_save=True`` copies the tensors and writes on a background thread; the call after it
    (or ``wait_async_save()``, or interpreter exit) waits and raises a failure. At exit a
    first Ctrl-C says which file it waits for; a second one, or SIGTERM, abandons the write
    (no temp file left) and names the checkpoint not written (``exit_wait``).
    ``optimizer`` also stores its state (tensors as tensors, the rest as JSON); ``info`` adds
    fields to the JSON header. ``integrated_save`` is accepted for compatibility.
    """
    global _ASYNC
    path = Path(ckpt_file_name)
    if not path.suffix:
        path = path.with_name(path.name + ".ckpt")
    if enc_key is not None:
        check_key(enc_key, enc_mode)
    named, header = build_payload(save_obj, optimizer, append_dict, info)
    _make_parent(path)
    if not async_save:
        SyncSaver().save(path, named, header, enc_key, enc_mode)
        return
    with _ASYNC_LOCK:
        if _ASYNC is None:
            _ASYNC = ThreadSaver("trainledger-save-checkpoint", reuse_buffers=False)
            before_executors_stop(_drain_at_exit)
        _ASYNC.wait()
        _ASYNC.save(path, named, header, enc_key, enc_mode)


@dataclass
class Checkpoint:
    """A loaded checkpoint: network tensors, optimizer state, and the JSON header."""

    tensors: dict[str, Any]
    optimizer_state: dict[str, Any] | None
    info: dict[str, Any] = field(default_factory=dict)
    digests: Digests | None = None  # each tensor's, from the header (None: not there)

    @property
    def append_info(self) -> dict[str, Any]:
        return dict(self.info.get("append_info") or {})


def read_checkpoint(
    ckpt_file_name: str | os.PathLike[str],
    dec_key: bytes | None = None,
    dec_mode: str = "AES-GCM",
    crc_check: bool | None = None,
    *,
    device: Any = None,
) -> Checkpoint:
    """Read every part of a checkpoint (no network needed); damage is a
    ``CheckpointFormatError`` (see ``load_checkpoint`` for ``crc_check``).

    ``device`` (a CUDA device) reads the tensor bytes of a plain file straight to it, chunk
    by chunk through small pinned buffers, each copied while the next is read
    (``torch_adapter.DeviceTarget``, for ``load_checkpoint(device=)``); other devices, and
    encrypted or MindSpore files, are read to the host.

    A MindSpore protobuf ``.ckpt`` is recognised by its first bytes and read by
    ``mindspore_ckpt`` (tensors only; its string values become ``append_info``).
    An ``s3://`` URL is read through the download cache; one naming no object is an
    ``ObjectNotFoundError`` (a ``FileNotFoundError``) naming it.
    """
    import torch

    ckpt_file_name = _local_file(ckpt_file_name)

    from trainledger.checkpoint.torch_adapter import (
        OPTIM_PREFIX,
        DeviceTarget,
        container_tensors,
        decode_tree,
    )

    if _is_mindspore(ckpt_file_name):
        from trainledger.checkpoint.mindspore_ckpt import read_mindspore_checkpoint

        values = read_mindspore_checkpoint(ckpt_file_name, dec_key, crc_check is True)
        plain = {k: v for k, v in values.items() if not isinstance(v, torch.Tensor)}
        tensors = {k: v for k, v in values.items() if isinstance(v, torch.Tensor)}
        return Checkpoint(tensors, None, {"format": "mindspore", "append_info": plain})

    def allocate(n: int) -> Any:  # uninitialised memory: no zero-fill pass before the read
        return torch.empty(n, dtype=torch.uint8).numpy()

    target = functools.partial(DeviceTarget, device) if _is_cuda(device) else None
    check = crc_check is not False
    container = read_container(ckpt_file_name, dec_key, dec_mode, check, allocate, target)
    all_tensors = container_tensors(container)
    tensors = {k: v for k, v in all_tensors.items() if not k.startswith(OPTIM_PREFIX)}
    opt = None
    if container.info.get("optimizer") is not None:
        # private copies: views would keep the whole file buffer alive inside the optimizer
        opt_tensors = {k: v.clone() for k, v in all_tensors.items() if k.startswith(OPTIM_PREFIX)}
        try:
            opt = decode_tree(container.info["optimizer"], opt_tensors)
        except (KeyError, TypeError, ValueError, IndexError, RecursionError) as exc:
            raise CheckpointFormatError(
                f"{ckpt_file_name}: the optimizer state in the header is malformed ({exc!r})"
            ) from exc
    digests = header_digests(container.info, container.entries)
    return Checkpoint(tensors, opt, container.info, digests)


def _local_file(path: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """``path``, or for an ``s3://`` URL its copy in the download cache (``storage``)."""
    return readable_file(path, "checkpoint") if is_object_url(path) else path


def _is_mindspore(path: str | os.PathLike[str]) -> bool:
    from trainledger.checkpoint.mindspore_ckpt import is_mindspore_checkpoint

    with open(path, "rb") as fh:
        return is_mindspore_checkpoint(fh.read(16))


def load_checkpoint(
    ckpt_file_name: str | os.PathLike[str],
    net: Any = None,
    strict_load: bool = False,
    filter_prefix: str | Sequence[str] | None = None,
    dec_key: bytes | None = None,
    dec_mode: str = "AES-GCM",
    choice_func: Callable[[str], bool] | None = None,
    crc_check: bool | None = None,
    *,
    optimizer: Any = None,
    name_map: Mapping[str, str] | None = None,
    device: Any = None,
    base: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Load a checkpoint -> ``{name: tensor}`` plus its append_info values (plain Python values).

    With ``base`` (a base directory or ``s3://`` URL), ``ckpt_file_name`` is a named model's
    reference, ``NAME@ALIAS`` or ``NAME/VERSION``, and the checkpoint it names in the base's
    registry (``TRAINLEDGER_INDEX_URL``'s, else beside the runs) is loaded (docs/models.md).

    ``device`` (``"cuda"``, ``"cuda:1"``, a ``torch.device``) puts the tensors there (after
    their checksums are verified on the host); MindSpore's ``load_checkpoint`` has no such
    argument (its tensors follow the context's device).

    Reads trainledger's container and MindSpore's protobuf ``.ckpt`` alike (MindSpore's names
    kept). Parameters whose name starts with a ``filter_prefix`` are dropped; with
    ``choice_func``, only names for which it returns True are kept. With ``net``, the result is
    loaded into it (``load_param_into_net``, renaming through ``name_map``); with
    ``optimizer``, the stored optimizer state is restored.

    Unlike MindSpore (``crc_check=False`` by default), every checksum a file holds is
    verified by default (``crc_check=None``): for our container the crc32c of the header and
    of the tensor bytes (at memory speed, in the threads that read the file), for a MindSpore
    file its CRC trailer when it has one. A damaged file must never load as different
    weights: any damage raises ``CheckpointFormatError``. ``crc_check=True`` also requires a
    checksum (a MindSpore file saved without one is refused); ``crc_check=False`` skips the
    tensor checksums (our header is still verified). ``ckpt_file_name`` may be an ``s3://``
    URL (``read_checkpoint``).
    """
    if base is not None:
        ckpt_file_name = resolve_reference(ckpt_file_name, base)
    prefixes = check_filter_prefix(filter_prefix)
    if choice_func is not None and not callable(choice_func):
        raise TypeError(f"choice_func expected a callable, received: {type(choice_func).__name__}")
    ckpt = read_checkpoint(ckpt_file_name, dec_key, dec_mode, crc_check, device=device)

    def keep(name: str) -> bool:
        if prefixes and name.startswith(prefixes):
            return False
        return choice_func is None or bool(choice_func(name))

    params: dict[str, Any] = {k: v for k, v in ckpt.tensors.items() if keep(k)}
    note_loaded(os.fspath(ckpt_file_name), ckpt.digests, params)
    if device is not None:
        params = _to_device(params, device)
    params.update({k: v for k, v in ckpt.append_info.items() if keep(k) and k not in params})
    if net is not None:
        load_param_into_net(net, params, strict_load, name_map=name_map)
    if optimizer is not None:
        if ckpt.optimizer_state is None:
            raise CheckpointLoadError(f"{ckpt_file_name} holds no optimizer state")
        optimizer.load_state_dict(ckpt.optimizer_state)
    return params


def _is_cuda(device: Any) -> bool:
    """Whether ``device`` names a CUDA device (``"cuda"``, ``"cuda:1"``, a torch.device)."""
    import torch  # only where a device was asked for (checkpoint/ loads torch lazily)

    return device is not None and torch.device(device).type == "cuda"


def _to_device(params: dict[str, Any], device: Any) -> dict[str, Any]:
    """Tensors on ``device``: those already there (read straight to a GPU, see
    ``read_checkpoint``) as they are; host ones (an encrypted or MindSpore file) pinned and
    copied without blocking, all at once, then the device is waited for (a pageable copy is
    several times slower)."""
    import torch

    target = torch.device(device)
    if target.type != "cuda":
        return {k: v.to(target) for k, v in params.items()}
    if target.index is None:
        target = torch.device("cuda", torch.cuda.current_device())
    moved = {
        k: v if v.device == target else v.pin_memory().to(target, non_blocking=True)
        for k, v in params.items()
    }
    torch.cuda.synchronize(target)
    return moved


def load_param_into_net(
    net: Any,
    parameter_dict: Mapping[str, Any],
    strict_load: bool = False,
    *,
    name_map: Mapping[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """Copy matching tensors into ``net``; returns ``(param_not_load, ckpt_not_load)``.

    ``name_map`` renames checkpoint names to the net's (``{"conv.gamma": "bn.weight"}``), for
    checkpoints written by another framework such as MindSpore; unmapped names are kept.
    Non-strict: names missing on either side and shape mismatches are skipped (and returned).
    Strict: any of those is a ``CheckpointLoadError`` listing the names and shapes.
    """
    import torch

    from trainledger.checkpoint.torch_adapter import uncompiled

    if name_map is not None:
        if not isinstance(name_map, Mapping):
            raise TypeError(f"name_map expected a dict, received: {type(name_map).__name__}")
        parameter_dict = {name_map.get(k, k): v for k, v in parameter_dict.items()}

    if not isinstance(net, torch.nn.Module):
        raise TypeError(f"net expected a torch.nn.Module, received: {type(net).__name__}")
    net = uncompiled(net)  # a torch.compile'd network loads the names of the plain one
    if not isinstance(parameter_dict, Mapping):
        raise TypeError(
            f"parameter_dict expected a dict, received: {type(parameter_dict).__name__}"
        )
    target = net.state_dict()
    matched: dict[str, Any] = {}
    param_not_load: list[str] = []
    mismatched: list[str] = []
    for name, current in target.items():
        value = parameter_dict.get(name)
        if not isinstance(value, torch.Tensor):
            param_not_load.append(name)
        elif tuple(value.shape) != tuple(current.shape):
            mismatched.append(
                f"{name}: net {tuple(current.shape)} vs checkpoint {tuple(value.shape)}"
            )
            param_not_load.append(name)
        else:
            matched[name] = value
    ckpt_not_load = [
        n for n, v in parameter_dict.items() if isinstance(v, torch.Tensor) and n not in matched
    ]
    if strict_load and (param_not_load or ckpt_not_load):
        unexpected = [n for n in ckpt_not_load if n not in target]
        missing = [n for n in param_not_load if n not in parameter_dict]
        lines = []
        if missing:
            lines.append(
                "missing in checkpoint: "
                + ", ".join(f"{n} {tuple(target[n].shape)}" for n in missing)
            )
        if unexpected:
            lines.append(
                "not in net: "
                + ", ".join(f"{n} {tuple(parameter_dict[n].shape)}" for n in unexpected)
            )
        if mismatched:
            lines.append("shape mismatch: " + "; ".join(mismatched))
        raise CheckpointLoadError(
            "strict load expected the checkpoint to match the net "
            "exactly, received:\n  " + "\n  ".join(lines)
        )
    if mismatched:
        _log.warning("not loaded (shape mismatch): %s", "; ".join(mismatched))
    net.load_state_dict(matched, strict=False)
    return param_not_load, ckpt_not_load


def checkpoint_info(
    ckpt_file_name: str | os.PathLike[str], dec_key: bytes | None = None, dec_mode: str = "AES-GCM"
) -> dict[str, Any]:
    """The JSON header of a checkpoint (epoch, step, append_info...); ``s3://`` URLs too."""
    return read_info(_local_file(ckpt_file_name), dec_key, dec_mode)


def latest_checkpoint(directory: str | os.PathLike[str], prefix: str | None = None) -> str | None:
    """Absolute path of the newest complete checkpoint in ``directory``, or None.

    With ``prefix``, only ``<prefix>-<epoch>_<step>[_breakpoint].ckpt`` files count and the
    newest is the highest (epoch, step) (a normal file wins over a breakpoint of the same step).
    Without, any ``*.ckpt`` counts and the newest is by modification time. Temp files of an
    interrupted write are never returned.
    """
    candidates: list[tuple[tuple[Any, ...], Path]] = []
    for entry in scan_dir(directory):
        path = Path(entry.path)
        if not entry.is_file() or not is_checkpoint_path(path) or path.suffix != ".ckpt":
            continue
        parsed = parse_checkpoint_name(entry.name)
        if prefix is not None:
            if parsed is None or parsed.family != prefix:
                continue
            key: tuple[Any, ...] = (
                parsed.epoch,
                parsed.step,
                not parsed.breakpoint,
                entry.stat().st_mtime_ns,
            )
        else:
            order = (parsed.epoch, parsed.step) if parsed else (0, 0)
            key = (entry.stat().st_mtime_ns, *order)
        candidates.append((key, path))
    if not candidates:
        return None
    return str(max(candidates, key=lambda c: c[0])[1].absolute())
