"""The loss of a step's outputs: the one rule every callback, the summary and the host use.

MindSpore's rule, which its users expect: the outputs are the loss itself (a tensor or a
number), or a tuple/list whose first element is the loss; a non-scalar loss is averaged. A
dict's ``"loss"`` and an object's ``loss`` attribute (Hugging Face model outputs) count too,
for networks that compute their own loss. Tensors are read through their methods (``item``,
``detach``), so the rule works for any device and dtype.
"""

from __future__ import annotations

from typing import Any

from trainledger.errors import DatasetError
from trainledger.run.batches import describe

__all__ = ["extract_loss", "loss_of", "loss_value"]


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
