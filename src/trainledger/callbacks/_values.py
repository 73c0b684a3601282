"""Reading numbers out of cb_params without knowing the network's output type."""

from __future__ import annotations

from typing import Any

__all__ = ["loss_value", "step_in_epoch"]


def loss_value(net_outputs: Any) -> float | None:
    """The loss as a float: a scalar tensor/number, or the first element of a tuple/list.

    None when there is no scalar loss (eval outputs, an empty tuple, a non-scalar tensor).
    """
    if isinstance(net_outputs, (tuple, list)):
        if not net_outputs:
            return None
        net_outputs = net_outputs[0]
    if net_outputs is None:
        return None
    if hasattr(net_outputs, "detach"):  # torch.Tensor, without importing torch here
        value = net_outputs.detach()
        if value.numel() != 1:
            return float(value.float().mean())
        return float(value.item())  # .item() handles bfloat16/float16 too
    try:
        return float(net_outputs)
    except (TypeError, ValueError):
        return None


def step_in_epoch(cb_params: Any, counted: int) -> int:
    """1-based step within the epoch: from the global step when the epoch length is known,
    else the caller's own count (streams, first pass over an unsized dataset)."""
    batch_num = cb_params.get("batch_num")
    cur = cb_params.get("cur_step_num")
    if batch_num and cur:
        return int((cur - 1) % batch_num + 1)
    return counted
