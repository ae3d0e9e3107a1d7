"""Mixture schedules: the phases an epoch reads, each with its own weights (docs/iteration.md
and docs/tokens.md, "Schedules")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class _PhaseFields(NamedTuple):
    length: int
    weights: list[float]


class Phase(_PhaseFields):
    """One phase of a schedule: ``length`` global positions read with ``weights``, one per
    cache in the dataset's order. The length counts samples (all ranks together) for
    :class:`datasetrt.Loader` and :class:`datasetrt.torch.StreamingDataset`, tokens for
    :class:`datasetrt.TokenDataset` and the token datasets; ``Phase(samples=N, weights=...)``
    and ``Phase(tokens=N, weights=...)`` say which.

    ``Loader(dataset, schedule=[Phase(300_000, [0.5, 0.5]), Phase(100_000, [0.8, 0.2])])``
    reads the phases one after another; the epoch is their lengths summed. Each cache's own
    order runs on across phases, so a phase change never restarts a pass over a cache. Any
    ``(length, weights)`` pair is accepted where a Phase is."""

    __slots__ = ()

    def __new__(
        cls,
        length: int | None = None,
        weights: Sequence[float] | None = None,
        *,
        samples: int | None = None,
        tokens: int | None = None,
    ) -> Phase:
        lengths = [n for n in (length, samples, tokens) if n is not None]
        if len(lengths) != 1:
            raise TypeError("a Phase takes one length: length, samples= or tokens=")
        if weights is None:
            raise TypeError("a Phase takes weights, one per cache")
        return super().__new__(cls, int(lengths[0]), [float(w) for w in weights])
