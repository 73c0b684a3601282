"""A device that is not the CPU, on a machine without one: tensors that report ``meta`` as
their device while computing on real CPU data underneath, and a count of the host reads made
of them.

Why: CI has no GPU, yet the guarantee that our callbacks never read a device value between
records must hold there too. Code that asks ``tensor.is_cpu`` takes its device branch for these
tensors, and every read that would wait for a GPU (``item()``, ``tolist()``, a blocking copy
to the CPU) goes through ``__torch_dispatch__``, where it is counted.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_map

DEVICE = torch.device("meta")
_READ_OPS = {torch.ops.aten._local_scalar_dense.default}
_COPY_OPS = {torch.ops.aten._to_copy.default, torch.ops.aten.copy_.default}


class HostReads:
    """Reads of device values, each with the phase it happened in (set by the test)."""

    def __init__(self) -> None:
        self.phase: Any = None
        self.reads: list[tuple[Any, str]] = []

    def add(self, what: str) -> None:
        self.reads.append((self.phase, what))


READS = HostReads()


class FakeDeviceTensor(torch.Tensor):
    """A CPU tensor (``elem``) that reports ``DEVICE``."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor, requires_grad: bool = False) -> FakeDeviceTensor:
        out = torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls,
            elem.shape,
            strides=elem.stride(),
            dtype=elem.dtype,
            device=DEVICE,
            requires_grad=requires_grad,
        )
        out.elem = elem
        return out  # type: ignore[no-any-return]

    def __repr__(self) -> str:  # the wrapped values, without a host read being counted
        return f"FakeDeviceTensor({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in _READ_OPS:
            READS.add(str(func))
        to_host = False
        if func in _COPY_OPS:
            if func is torch.ops.aten.copy_.default:
                dst = args[0]
                to_host = not isinstance(dst, FakeDeviceTensor) and dst.device.type == "cpu"
                if to_host and not kwargs.get("non_blocking", len(args) > 2 and args[2]):
                    READS.add("blocking copy to the host")
            else:
                target = kwargs.get("device")
                to_host = target is not None and torch.device(target).type == "cpu"
                if to_host and not kwargs.get("non_blocking"):
                    READS.add("blocking copy to the host")
                if target is not None and torch.device(target) == DEVICE:
                    kwargs["device"] = torch.device("cpu")
                    to_host = False
        unwrapped = tree_map(lambda t: t.elem if isinstance(t, FakeDeviceTensor) else t, args)
        kw = tree_map(lambda t: t.elem if isinstance(t, FakeDeviceTensor) else t, kwargs)
        out = func(*unwrapped, **kw)
        if to_host or func in _READ_OPS:
            return out
        if func is torch.ops.aten.copy_.default and not isinstance(args[0], FakeDeviceTensor):
            return args[0]
        return tree_map(
            lambda t: cls(t) if isinstance(t, torch.Tensor) and t.device.type == "cpu" else t, out
        )


def on_device(value: Any) -> Any:
    """``value`` (a tensor or a nest of them) on the fake device."""
    return tree_map(lambda t: FakeDeviceTensor(t) if isinstance(t, torch.Tensor) else t, value)


def move_module(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` with its parameters and buffers on the fake device (in place)."""
    for sub in module.modules():
        for name, param in list(sub.named_parameters(recurse=False)):
            setattr(sub, name, torch.nn.Parameter(FakeDeviceTensor(param.detach().clone())))
        for name, buf in list(sub.named_buffers(recurse=False)):
            if buf is not None:
                setattr(sub, name, FakeDeviceTensor(buf.clone()))
    return module
