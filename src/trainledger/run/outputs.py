"""The loss of a step's outputs: the one rule every callback, the summary and the host use.

MindSpore's rule, which its users expect: the outputs are the loss itself (a tensor or a
number), or a tuple/list whose first element is the loss; a non-scalar loss is averaged. A
dict's ``"loss"`` and an object's ``loss`` attribute (Hugging Face model outputs) count too,
for networks that compute their own loss. Tensors are read through their methods (``item``,
``detach``), so the rule works for any device and dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainledger.errors import DatasetError
from trainledger.run.batches import describe
from trainledger.values import scalar_of

__all__ = ["extract_loss", "loss_of", "loss_value", "monitored_value"]


def loss_of(outputs: Any) -> Any:
    """The loss element of ``outputs`` (tensor, number...), or None when they hold none.

    Only one level is looked into: ``((loss, x), y)`` has no loss, as in MindSpore.
    """
    if isinstance(outputs, (tuple, list)):
        return outputs[0] if outputs else None
    if isinstance(outputs, dict):
        return outputs.get("loss")
    if outputs is None or isinstance(outputs, (bool, str, bytes)):
        return None
    if isinstance(outputs, (int, float)) or hasattr(outputs, "__array__"):
        return outputs  # a number, a tensor, a numpy array or scalar
    return getattr(outputs, "loss", None)


def loss_value(outputs: Any) -> float | None:
    """The loss of ``outputs`` as a float (the mean of a non-scalar loss); None when the
    outputs hold no number (eval outputs, an empty tuple, a bool, a string)."""
    if getattr(outputs, "ndim", None) == 0 and hasattr(outputs, "item"):
        return float(outputs.item())  # the usual case, a scalar loss tensor: one cheap call
    loss = loss_of(outputs)
    if loss is None or isinstance(loss, (bool, str, bytes)):
        return None
    try:
        if hasattr(loss, "detach"):  # torch.Tensor, without importing torch here
            if loss.numel() == 1:
                return float(loss.item())  # .item() handles bfloat16/float16 too
            return float(loss.detach().float().mean())
        if hasattr(loss, "mean") and getattr(loss, "ndim", None):  # numpy arrays
            return float(loss.mean())
        return float(loss)
    except (TypeError, ValueError, RuntimeError):
        return None


def monitored_value(name: str, eval_results: Any, net_outputs: Any) -> float | None:
    """What a monitor (``EarlyStopping``, ``ModelCheckpoint``'s best-N, ...) named ``name``
    reads from a step's ``eval_results`` and ``net_outputs``: the one rule, MindSpore's.

    ``"loss"`` is the training loss (``loss_value``: the first output), even when the
    evaluation also has a ``loss``; any other name is an evaluation result (``eval_x`` also
    finds ``x``), else a value the network returned in a dict under that name. None when
    absent or not one number (``values.scalar_of``).
    """
    if name == "loss":
        return loss_value(net_outputs)
    if isinstance(eval_results, Mapping):
        value = eval_results.get(name)
        if value is None and name.startswith("eval_"):
            value = eval_results.get(name[len("eval_") :])
        if value is not None:
            return scalar_of(value)
    if isinstance(net_outputs, Mapping) and name in net_outputs:
        return scalar_of(net_outputs[name])
    return None


def extract_loss(outputs: Any) -> tuple[Any, Any]:
    """``(loss, net_outputs)`` of a network that returns its loss (training without loss_fn).

    The loss is ``loss_of(outputs)``; net_outputs is the tuple when the network returned a
    tuple/list (as in MindSpore), else the loss itself. Outputs without a loss are an error.
    """
    loss = loss_of(outputs)
    if loss is None:
        raise DatasetError(
            "without loss_fn, the network expected to return its loss (a scalar tensor, a "
            f"tuple with the loss first, or a dict with 'loss'), received: {describe(outputs)}"
        )
    if isinstance(outputs, (tuple, list)):
        return loss, tuple(outputs)
    return loss, loss
