"""A loss landscape as a contour picture (numpy only), so plain TensorBoard shows something.

The grid is resampled bilinearly, coloured on a perceptual blue-green-yellow ramp (low loss
dark, as in viridis), with dark iso-lines between equal-loss bands and the training path
drawn in red from its first point to the final weights (a white dot).
"""

from __future__ import annotations

import numpy as np

__all__ = ["render_contour"]

# anchor colours of a viridis-like ramp (low -> high)
_RAMP = np.array(
    [
        [68, 1, 84],
        [59, 82, 139],
        [33, 145, 140],
        [94, 201, 98],
        [253, 231, 37],
    ],
    dtype=np.float64,
)
_LEVELS = 14


def _resample(z: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resampling of ``z`` (rows = y, columns = x) to ``size`` x ``size``."""
    rows = np.linspace(0, z.shape[0] - 1, size)
    cols = np.linspace(0, z.shape[1] - 1, size)
    r0 = np.minimum(np.floor(rows).astype(int), z.shape[0] - 2)
    c0 = np.minimum(np.floor(cols).astype(int), z.shape[1] - 2)
    fr = (rows - r0)[:, None]
    fc = (cols - c0)[None, :]
    top = z[r0][:, c0] * (1 - fc) + z[r0][:, c0 + 1] * fc
    bottom = z[r0 + 1][:, c0] * (1 - fc) + z[r0 + 1][:, c0 + 1] * fc
    return np.asarray(top * (1 - fr) + bottom * fr)


def _colour(t: np.ndarray) -> np.ndarray:
    pos = np.clip(t, 0.0, 1.0) * (len(_RAMP) - 1)
    low = np.minimum(np.floor(pos).astype(int), len(_RAMP) - 2)
    frac = (pos - low)[..., None]
    return np.asarray(_RAMP[low] * (1 - frac) + _RAMP[low + 1] * frac)


def _draw_line(img: np.ndarray, p0: tuple[float, float], p1: tuple[float, float]) -> None:
    steps = int(max(abs(p1[0] - p0[0]), abs(p1[1] - p0[1]), 1)) * 2
    for t in np.linspace(0.0, 1.0, steps + 1):
        r = int(round(p0[0] + (p1[0] - p0[0]) * t))
        c = int(round(p0[1] + (p1[1] - p0[1]) * t))
        img[max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2] = (230, 40, 40)


def render_contour(
    x: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
    path: tuple[np.ndarray, np.ndarray] | None = None,
    size: int = 320,
) -> np.ndarray:
    """An ``size`` x ``size`` RGB (HWC uint8) picture of the loss grid ``z[i, j]`` at
    ``(x[j], y[i])``; y grows upwards. ``path`` is ``(xs, ys)`` in the same coordinates."""
    z = np.asarray(z, dtype=np.float64)
    finite = np.isfinite(z)
    if not finite.any():
        return np.zeros((size, size, 3), dtype=np.uint8)
    # losses span orders of magnitude away from the minimum: colour their logarithm
    shifted = np.log1p(np.where(finite, z, np.nanmax(z[finite])) - z[finite].min())
    grid = _resample(shifted[::-1], size)  # row 0 is the top: the largest y
    span = float(grid.max() - grid.min()) or 1.0
    t = (grid - grid.min()) / span
    img = _colour(t)
    band = np.minimum((t * _LEVELS).astype(int), _LEVELS - 1)
    edge = np.zeros_like(band, dtype=bool)
    edge[:, 1:] |= band[:, 1:] != band[:, :-1]
    edge[1:, :] |= band[1:, :] != band[:-1, :]
    img[edge] *= 0.35
    out = img.astype(np.uint8)
    if path is not None and len(path[0]) > 0:
        xs, ys = (np.asarray(v, dtype=np.float64) for v in path)
        x_span = float(x[-1] - x[0]) or 1.0
        y_span = float(y[-1] - y[0]) or 1.0
        cols = (xs - x[0]) / x_span * (size - 1)
        rows = (1.0 - (ys - y[0]) / y_span) * (size - 1)
        points = list(zip(rows.tolist(), cols.tolist(), strict=True))
        for p0, p1 in zip(points, points[1:], strict=False):
            _draw_line(out, p0, p1)
        r, c = (int(round(v)) for v in points[-1])
        out[max(r - 3, 0) : r + 4, max(c - 3, 0) : c + 4] = (255, 255, 255)
    return out
