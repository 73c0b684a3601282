"""Names and numbers from the model side: network (backbone rule), loss function, optimizer,
learning rate. (The loss of a step's outputs is ``trainledger.run.loss_value``.)"""

from __future__ import annotations

from typing import Any

from trainledger.lineage.records import shortest_float32
from trainledger.values import scalar_of

__all__ = [
    "unwrap_module",
    "network_name",
    "loss_function_name",
    "optimizer_name",
    "initial_learning_rate",
]

_BACKBONE_ATTRS = ("_backbone", "backbone")
_LOSS_ATTRS = ("_loss_fn", "loss_fn", "_loss", "criterion")


def unwrap_module(module: Any) -> Any:
    """The user's module inside DataParallel/DistributedDataParallel/torch.compile wrappers."""
    for _ in range(16):
        inner = None
        name = type(module).__name__
        if name in ("DataParallel", "DistributedDataParallel", "FullyShardedDataParallel"):
            inner = getattr(module, "module", None)
        elif name == "OptimizedModule":
            inner = getattr(module, "_orig_mod", None)
        if inner is None:
            return module
        module = inner
    return module


def network_name(network: Any) -> str | None:
    """The network's class name, or its backbone's when it wraps one.

    The backbone rule (MindInsight's): a loss/training wrapper keeps the user's network as
    ``_backbone`` (or ``backbone``); the first module in the tree, outermost first, holding a
    module under that name names the network. Parallel and compile wrappers are looked
    through. A network without a backbone is named by its own class.
    """
    if network is None:
        return None
    network = unwrap_module(network)
    modules = getattr(network, "modules", None)
    if callable(modules):
        try:
            for module in modules():
                for attr in _BACKBONE_ATTRS:
                    backbone = getattr(module, attr, None)
                    if backbone is not None and callable(getattr(backbone, "modules", None)):
                        return type(unwrap_module(backbone)).__name__
        except (TypeError, RuntimeError):
            pass
    return type(network).__name__


def _is_loss_module(module: Any) -> bool:
    """A torch loss (a ``_Loss`` subclass, as MindSpore's cells) or a module named ``*Loss``."""
    cls = type(module)
    return any(c.__name__ == "_Loss" for c in cls.__mro__) or cls.__name__.endswith("Loss")


def find_loss_fn(network: Any) -> Any:
    """The loss function held somewhere in ``network``'s module tree, outermost first.

    First a module attribute named like a loss (``_loss_fn``, ``loss_fn``, ``_loss``,
    ``criterion``: a wrapper's own reference, even to a plain function), then the first
    submodule that is a loss, as MindInsight searched ``cells_and_names()`` for a ``_Loss``.
    """
    network = unwrap_module(network)
    modules = [network]
    if callable(getattr(network, "modules", None)):
        try:
            modules = list(network.modules())
        except (TypeError, RuntimeError):
            pass
    for module in modules:
        for attr in _LOSS_ATTRS:
            found = getattr(module, attr, None)
            if found is not None:
                return found
    return next((m for m in modules[1:] if _is_loss_module(m)), None)


def loss_function_name(loss_fn: Any, network: Any = None) -> str | None:
    """The loss function's class (or function) name; searched in the network if not given."""
    if loss_fn is None and network is not None:
        loss_fn = find_loss_fn(network)
    if loss_fn is None:
        return None
    func = getattr(loss_fn, "func", None)  # functools.partial
    if func is not None and callable(func):
        loss_fn = func
    if isinstance(loss_fn, type):
        return loss_fn.__name__
    name = getattr(loss_fn, "__name__", None)
    if isinstance(name, str) and not hasattr(loss_fn, "forward"):
        return name
    return type(loss_fn).__name__


def optimizer_name(optimizer: Any) -> str | None:
    """The optimizer's class name (None when there is no optimizer)."""
    if optimizer is None:
        return None
    inner = getattr(optimizer, "optimizer", None)  # e.g. a LR scheduler passed by mistake
    if inner is not None and not hasattr(optimizer, "param_groups"):
        optimizer = inner
    return type(optimizer).__name__


def _first_group(optimizer: Any) -> dict[str, Any] | None:
    groups = getattr(optimizer, "param_groups", None)
    if isinstance(groups, (list, tuple)) and groups and isinstance(groups[0], dict):
        return groups[0]
    return None


def config_number(value: Any) -> float | None:
    """A configured number as the user wrote it: ``scalar_of``, and a float32 tensor (a
    tensor learning rate) read as the shortest decimal that is the same float32, so
    ``torch.tensor(0.1)`` is 0.1 and not 0.10000000149011612."""
    number = scalar_of(value)
    if number is not None and str(getattr(value, "dtype", "")) in ("torch.float32", "float32"):
        return shortest_float32(number)
    return number


def initial_learning_rate(optimizer: Any, scheduler: Any = None) -> float | None:
    """The learning rate the run started with: the scheduler's base lr, else the first param
    group's ``initial_lr`` (set by torch schedulers), else its current ``lr``."""
    base = getattr(scheduler, "base_lrs", None)
    if isinstance(base, (list, tuple)) and base:
        return config_number(base[0])
    group = _first_group(optimizer)
    if group is None:
        return None
    return config_number(group.get("initial_lr", group.get("lr")))
