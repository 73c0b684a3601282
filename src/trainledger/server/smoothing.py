"""TensorBoard's debiased exponential smoothing of scalar series, over the full-resolution data.

Why on the server (issue 51 item 8): an exponential moving average weighs points, not steps,
so the same weight smooths a series more or less depending on how many of its points reach
the browser; and a chart that smooths what it drew restarts the average at a zoom's left
edge (a rising curve turns flat). Smoothing every point as written, then downsampling the
result, gives the same smoothed value at a step whatever the zoom or the downsampling.

The rule is TensorBoard's: ``last = last * w + (1 - w) * value``, divided by ``1 - w ** n``
after ``n`` finite values (the debiasing); a NaN or infinite value is left as it is and
skipped by the average; a constant series is returned as it is (the debiased average's
rounding would otherwise draw a zig-zag the axis zooms into). Pure functions over arrays.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["smooth", "smooth_sessions"]

#: How far a chunk's powers of the weight may grow (e ** 100 ~ 1e43): the vectorised
#: average multiplies values by ``w ** -k`` within a chunk, and must neither overflow nor
#: lose the older values' digits.
_LOG_RANGE = 100.0


def _ema(values: np.ndarray, weight: float) -> np.ndarray:
    """The debiased EMA of finite ``values``, in chunks so the powers stay in range: within a
    chunk, ``y[k] = w ** (k + 1) * carry + (1 - w) * w ** k * cumsum(x[j] * w ** -j)[k]``."""
    n = len(values)
    out = np.empty(n, dtype=np.float64)
    chunk = max(1, int(_LOG_RANGE / -math.log(weight)))
    carry = 0.0
    for start in range(0, n, chunk):
        seg = values[start : start + chunk]
        k = np.arange(len(seg), dtype=np.float64)
        down = weight**k
        sums = np.cumsum(seg / down) * (1.0 - weight)
        ys = down * (weight * carry + sums)
        out[start : start + len(seg)] = ys
        carry = float(ys[-1])
    return out / -np.expm1(np.arange(1, n + 1, dtype=np.float64) * math.log(weight))


def smooth(values: np.ndarray, weight: float) -> np.ndarray:
    """``values`` smoothed with ``weight`` in [0, 1) (0: as they are); NaN and infinities
    stay where they are and are skipped by the average, as TensorBoard skips them."""
    values = np.asarray(values, dtype=np.float64)
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"weight expected in [0, 1), received: {weight!r}")
    finite = np.isfinite(values)
    kept = values[finite]
    if weight == 0.0 or not len(kept) or np.all(kept == kept[0]):
        return values.copy()
    out = values.copy()
    out[finite] = _ema(kept, weight)
    return out


def smooth_sessions(values: np.ndarray, sessions: np.ndarray, weight: float) -> np.ndarray:
    """``values`` smoothed with each run of consecutive points of one session on its own:
    drawn apart, a resumed session's average starts afresh rather than carrying the
    previous session's last value into it."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return values.copy()
    cuts = np.flatnonzero(np.diff(np.asarray(sessions)) != 0) + 1
    bounds = [0, *cuts.tolist(), len(values)]
    return np.concatenate(
        [smooth(values[a:b], weight) for a, b in zip(bounds, bounds[1:], strict=False)]
    )
