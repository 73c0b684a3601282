"""Directions and batched losses of the loss landscape, against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.decomposition import PCA

from trainledger.callbacks.landscape_math import LossGrid, filter_normalise, pca_plane, random_plane


def _trajectory(n: int = 7, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    start = {"w": torch.randn(5, 3, generator=gen), "b": torch.randn(5, generator=gen)}
    drift = {k: torch.randn(v.shape, generator=gen) for k, v in start.items()}
    out = []
    for i in range(n):  # a curved path with noise: more than one direction of change
        t = i / (n - 1)
        out.append(
            {
                k: v + t * drift[k] + (t**2) * torch.randn(v.shape, generator=gen) * 0.3
                for k, v in start.items()
            }
        )
    return out


def test_pca_directions_and_projections_match_scikit_learn():
    trajectory = _trajectory()
    d1, d2, coords, ratios = pca_plane(trajectory)
    flat = np.stack(
        [np.concatenate([p[k].numpy().ravel() for k in ("w", "b")]) for p in trajectory]
    )
    diffs = flat[:-1] - flat[-1]
    pca = PCA(n_components=2).fit(diffs.astype(np.float64))
    ours = np.stack([np.concatenate([d[k].numpy().ravel() for k in ("w", "b")]) for d in (d1, d2)])
    for mine, theirs in zip(ours, pca.components_, strict=True):
        sign = np.sign(mine @ theirs)
        np.testing.assert_allclose(mine, sign * theirs, atol=1e-5)
    # the path: every snapshot projected on the plane through the final weights
    expected = pca.transform(diffs) + pca.mean_ @ pca.components_.T
    signs = np.sign(np.sum(ours * pca.components_, axis=1))
    np.testing.assert_allclose(coords.numpy()[:-1], expected * signs, atol=1e-4)
    assert coords[-1].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(ratios, pca.explained_variance_ratio_, rtol=1e-6)
    assert 0 < ratios[1] <= ratios[0] and sum(ratios) < 1  # this path has more than 2 directions


def test_filter_normalisation():
    gen = torch.Generator().manual_seed(3)
    weights = {
        "conv": torch.randn(4, 3, 2, 2, generator=gen),
        "fc": torch.randn(6, 5, generator=gen),
        "bias": torch.randn(6, generator=gen),
    }
    direction = {k: torch.randn(v.shape, generator=gen) * 7 for k, v in weights.items()}
    out = filter_normalise(direction, weights)
    for name in ("conv", "fc"):
        w, d = weights[name], out[name]
        np.testing.assert_allclose(
            d.reshape(len(d), -1).norm(dim=1), w.reshape(len(w), -1).norm(dim=1), rtol=1e-5
        )
        # only rescaled: each filter keeps its direction
        cos = torch.nn.functional.cosine_similarity(
            d.reshape(len(d), -1), direction[name].reshape(len(d), -1)
        )
        np.testing.assert_allclose(cos, 1.0, rtol=1e-5)
    assert torch.count_nonzero(out["bias"]) == 0
    d1, d2 = random_plane(weights, torch.Generator().manual_seed(0))
    assert not torch.equal(d1["fc"], d2["fc"])


def _grid() -> tuple[LossGrid, dict[str, torch.Tensor], torch.nn.Module]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(40, 4, generator=gen)
    y = torch.randint(0, 3, (40,), generator=gen)
    batches = [(x[:16], y[:16]), (x[16:32], y[16:32]), (x[32:], y[32:])]
    base = {k: v.detach().clone() for k, v in net.named_parameters()}
    return LossGrid(net, torch.nn.CrossEntropyLoss(), batches, {}), base, net


def test_batched_losses_equal_one_forward_per_point():
    grid, base, net = _grid()
    d1, d2 = random_plane(base, torch.Generator().manual_seed(2))
    coords = torch.tensor([[0.0, 0.0], [0.5, -0.25], [-1.0, 1.0], [0.3, 0.9]])
    got = grid.losses(base, d1, d2, coords)
    for (a, b), loss in zip(coords.tolist(), got.tolist(), strict=True):
        with torch.no_grad():
            for name, p in net.named_parameters():
                p.copy_(base[name] + a * d1[name] + b * d2[name])
            expected = np.mean(
                [float(torch.nn.functional.cross_entropy(net(x), y)) for x, y in grid.batches]
            )
        assert loss == pytest.approx(expected, rel=1e-5)


def test_small_memory_budget_chunks_the_points_with_the_same_result():
    grid, base, _ = _grid()
    d1, d2 = random_plane(base, torch.Generator().manual_seed(2))
    coords = torch.rand(50, 2) * 2 - 1
    full = grid.losses(base, d1, d2, coords)
    grid.memory_bytes = 1  # one point per chunk
    assert grid.chunk_size(base) == 1
    seen = []
    chunked = grid.losses(base, d1, d2, coords, seen.append)
    assert seen == [1] * 50
    torch.testing.assert_close(full, chunked)
    grid.vmapped = False  # the point-by-point fallback gives the same numbers
    torch.testing.assert_close(full, grid.losses(base, d1, d2, coords))


def test_a_network_vmap_cannot_batch_falls_back_to_point_by_point():
    class ItemNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.fc.weight.sum().item() > 1e9:  # data-dependent control flow
                raise AssertionError
            return self.fc(x)

    net = ItemNet()
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
    base = {k: v.detach().clone() for k, v in net.named_parameters()}
    grid = LossGrid(net, torch.nn.CrossEntropyLoss(), [(x, y)], {})
    d1, d2 = random_plane(base, torch.Generator().manual_seed(0))
    losses = grid.losses(base, d1, d2, torch.zeros(3, 2))
    assert not grid.vmapped
    with torch.no_grad():
        expected = float(torch.nn.functional.cross_entropy(net(x), y))
    assert losses.tolist() == pytest.approx([expected] * 3, rel=1e-6)
