"""The numerical core of ``SummaryLandscape``: directions and batched loss evaluation.

* ``pca_plane``: PCA of a weight trajectory ``w_1..w_n`` (the last is the final weights): the
  two principal directions of the differences ``w_i - w_n`` (unit vectors, signs as
  scikit-learn's PCA sets them), the trajectory projected on them, ``(w_i - w_n) . d``, and
  the share of the trajectory's variance each direction explains (scikit-learn's
  ``explained_variance_ratio_``: how much of the path the plane shows).
* ``random_plane``: two Gaussian directions, filter-normalised (Li et al., 2018): each filter
  (row along the first dimension) of a weight gets the norm of the same filter of the final
  weights; 1-D parameters (biases, normalisation scales) get no direction, as in their code.
* ``LossGrid``: the mean loss over fixed batches at many points ``w + a*d1 + b*d2`` at once:
  ``torch.func.functional_call`` under ``torch.vmap``, points in chunks sized so that one
  chunk's weights and activations stay under ``memory_bytes``. A network vmap cannot run is
  evaluated point by point instead (the same numbers, slower).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
from torch.func import functional_call

from trainledger.run import extract_loss, split_batch

__all__ = ["LossGrid", "filter_normalise", "pca_plane", "random_plane", "DEFAULT_MEMORY_BYTES"]

logger = logging.getLogger("trainledger.landscape")

Params = dict[str, torch.Tensor]
DEFAULT_MEMORY_BYTES = 256 * 1024**2  # per chunk of grid points, per device


def _flat(params: Params) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).double() for p in params.values()])


def _unflat(vector: torch.Tensor, like: Params) -> Params:
    out, start = {}, 0
    for name, p in like.items():
        out[name] = vector[start : start + p.numel()].reshape(p.shape).to(p.dtype)
        start += p.numel()
    return out


def pca_plane(trajectory: list[Params]) -> tuple[Params, Params, torch.Tensor, list[float]]:
    """``(d1, d2, coords, ratios)``: the two principal directions of the trajectory (as
    parameter dicts), its ``(n, 2)`` coordinates on them (the final weights at ``(0, 0)``) and
    the fraction of the variance of the differences each direction explains."""
    points = torch.stack([_flat(p) for p in trajectory])
    diffs = points[:-1] - points[-1]
    centred = diffs - diffs.mean(dim=0)
    _, singular, vt = torch.linalg.svd(centred, full_matrices=False)
    comps = vt[:2]
    if comps.shape[0] < 2:  # (n - 1 = 1 difference cannot happen: intervals have >= 3 points)
        raise ValueError("a train landscape expected at least 3 weight snapshots")
    signs = torch.sign(comps[torch.arange(2), comps.abs().argmax(dim=1)])
    comps = comps * signs[:, None]  # scikit-learn's convention (svd_flip on the components)
    coords = (points - points[-1]) @ comps.T
    energy = singular.square()
    total = float(energy.sum())
    ratios = [float(e) / total if total > 0 else 0.0 for e in energy[:2]]
    like = trajectory[-1]
    return _unflat(comps[0], like), _unflat(comps[1], like), coords, ratios


def filter_normalise(direction: Params, weights: Params) -> Params:
    """Each filter of ``direction`` rescaled to the norm of the same filter of ``weights``;
    1-D entries zeroed (Li et al., 2018, "Visualizing the Loss Landscape of Neural Nets")."""
    out = {}
    for name, w in weights.items():
        d = direction[name].detach().clone()
        if w.dim() <= 1:
            d.zero_()
        else:
            w_norm = w.detach().reshape(w.shape[0], -1).norm(dim=1)
            d_norm = d.reshape(d.shape[0], -1).norm(dim=1)
            scale = w_norm / (d_norm + 1e-10)
            d *= scale.reshape(-1, *([1] * (d.dim() - 1)))
        out[name] = d
    return out


def random_plane(weights: Params, generator: torch.Generator) -> tuple[Params, Params]:
    """Two filter-normalised Gaussian directions around ``weights``."""
    d1 = {n: torch.randn(w.shape, generator=generator, dtype=w.dtype) for n, w in weights.items()}
    d2 = {n: torch.randn(w.shape, generator=generator, dtype=w.dtype) for n, w in weights.items()}
    return filter_normalise(d1, weights), filter_normalise(d2, weights)


class LossGrid:
    """Mean loss of ``network`` over ``batches`` at points of a plane through ``base``.

    ``loss_fn(predictions, label)`` as in ``Model``; None when the network returns its loss.
    The loss of a batch is the mean of what the loss function returns; the loss of a point is
    the mean over the batches (as the ``Loss`` metric averages batch losses).
    """

    def __init__(
        self,
        network: torch.nn.Module,
        loss_fn: Any,
        batches: list[Any],
        buffers: Params,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
    ) -> None:
        self.network = network
        self.loss_fn = loss_fn
        self.batches = batches
        self.buffers = buffers
        self.memory_bytes = memory_bytes
        self.vmapped = True

    def _loss(self, params: Params, batch: Any) -> torch.Tensor:
        state = {**self.buffers, **params}
        if self.loss_fn is not None:
            args, kwargs, label = split_batch(batch)
            out = functional_call(self.network, state, args, kwargs)
            loss = self.loss_fn(out, label)
        elif isinstance(batch, dict):
            loss = extract_loss(functional_call(self.network, state, (), batch))[0]
        else:
            args = tuple(batch) if isinstance(batch, (tuple, list)) else (batch,)
            loss = extract_loss(functional_call(self.network, state, args))[0]
        return loss.float().mean()

    def chunk_size(self, base: Params) -> int:
        """Points per chunk: one point's weights plus its activations on the largest batch
        (counted with forward hooks on one real forward pass), times 3 for temporaries."""
        counted = [0]

        def count(module: torch.nn.Module, args: Any, output: Any) -> None:
            if isinstance(output, torch.Tensor):
                counted[0] += output.numel()

        handles = [m.register_forward_hook(count) for m in self.network.modules()]
        try:
            self._loss(base, self.batches[0])
        finally:
            for handle in handles:
                handle.remove()
        per_point = 4 * 3 * (sum(p.numel() for p in base.values()) + counted[0])
        return max(1, min(4096, self.memory_bytes // max(per_point, 1)))

    def _points(self, base: Params, d1: Params, d2: Params, coords: torch.Tensor) -> Params:
        a, b = coords[:, 0], coords[:, 1]
        out = {}
        for name, w in base.items():
            shape = (-1,) + (1,) * w.dim()
            out[name] = w + a.reshape(shape).to(w) * d1[name] + b.reshape(shape).to(w) * d2[name]
        return out

    def losses(
        self,
        base: Params,
        d1: Params,
        d2: Params,
        coords: torch.Tensor,
        advance: Callable[[int], None] = lambda n: None,
    ) -> torch.Tensor:
        """The loss at each ``coords[k] = (a, b)``: ``base + a * d1 + b * d2``."""
        training = self.network.training
        self.network.eval()  # running statistics, no dropout: a point has one loss
        try:
            with torch.no_grad():
                chunk = self.chunk_size(base)
                out = []
                for start in range(0, len(coords), chunk):
                    part = coords[start : start + chunk]
                    out.append(self._chunk(base, d1, d2, part))
                    advance(len(part))
                return torch.cat(out)
        finally:
            self.network.train(training)

    def _chunk(self, base: Params, d1: Params, d2: Params, coords: torch.Tensor) -> torch.Tensor:
        params = self._points(base, d1, d2, coords)
        device = next(iter(base.values())).device
        total = torch.zeros(len(coords), dtype=torch.float64, device=device)
        for batch in self.batches:
            if self.vmapped:
                try:
                    batched = torch.vmap(self._loss, in_dims=(0, None), randomness="same")
                    total += batched(params, batch).double()
                    continue
                except Exception as exc:  # an op vmap cannot batch: point by point from now on
                    logger.info("loss landscape: vmap failed (%s); evaluating point by point", exc)
                    self.vmapped = False
                    total.zero_()
                    return self._chunk(base, d1, d2, coords)
            for k in range(len(coords)):
                total[k] += self._loss({n: p[k] for n, p in params.items()}, batch).double()
        return total / len(self.batches)
