"""A DeepFM-style click-through-rate model with hashed feature embeddings.

Why hashing: in online recommendation the id space is unbounded (new users and items appear
all the time), so a fixed embedding table indexed by raw ids cannot exist. The hashing trick
maps any int64 id into ``num_buckets`` rows; collisions are rare enough to be noise and the
model's memory stays fixed forever.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["DeepFM", "HashedEmbedding"]

# A large odd multiplier (from splitmix64) spreads consecutive ids over the table. int64
# overflow wraps in torch, which is what a multiplicative hash wants.
_MULT = -7046029254386353131  # 0x9E3779B97F4A7C15 as a signed int64


class HashedEmbedding(nn.Module):
    """Embeds unbounded int64 ids of ``num_fields`` fields into one table of ``num_buckets``.

    Each field gets its own salt so that id 7 of "user" and id 7 of "item" land on different
    rows. Input ``(batch, num_fields)`` int64, output ``(batch, num_fields, dim)``.
    """

    def __init__(self, num_fields: int, num_buckets: int, dim: int) -> None:
        super().__init__()
        if num_buckets < 2:
            raise ValueError(f"num_buckets expected an int >= 2, received: {num_buckets!r}")
        self.num_buckets = num_buckets
        self.table = nn.Embedding(num_buckets, dim)
        nn.init.normal_(self.table.weight, std=0.01)
        salts = torch.arange(1, num_fields + 1, dtype=torch.int64) * 0x2545F4914F6CDD1D
        self.register_buffer("salts", salts, persistent=False)

    def bucket(self, ids: torch.Tensor) -> torch.Tensor:
        """The table row of each id (deterministic across processes and runs)."""
        salts: torch.Tensor = self.salts  # type: ignore[assignment]
        h = (ids.to(torch.int64) + salts) * _MULT
        h = h ^ (h >> 29)
        return torch.remainder(h, self.num_buckets)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(self.bucket(ids))  # type: ignore[no-any-return]


class DeepFM(nn.Module):
    """Wide (first order) + FM (pairwise interactions) + deep MLP over hashed embeddings.

    ``forward(ids, dense)`` -> one logit per row; train with ``BCEWithLogitsLoss``.
    """

    def __init__(
        self,
        num_fields: int,
        num_dense: int,
        num_buckets: int = 2**16,
        dim: int = 8,
        hidden: tuple[int, ...] = (64, 32),
    ) -> None:
        super().__init__()
        self.embed = HashedEmbedding(num_fields, num_buckets, dim)
        self.wide = HashedEmbedding(num_fields, num_buckets, 1)
        self.dense_linear = nn.Linear(num_dense, 1)
        layers: list[nn.Module] = []
        width = num_fields * dim + num_dense
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, 1))
        self.deep = nn.Sequential(*layers)

    def forward(self, ids: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        emb = self.embed(ids)  # (B, F, D)
        wide = self.wide(ids).sum(dim=(1, 2)) + self.dense_linear(dense).squeeze(-1)
        summed = emb.sum(dim=1)
        fm = 0.5 * (summed.pow(2) - emb.pow(2).sum(dim=1)).sum(dim=1)
        deep = self.deep(torch.cat([emb.flatten(1), dense], dim=1)).squeeze(-1)
        return wide + fm + deep  # type: ignore[no-any-return]
