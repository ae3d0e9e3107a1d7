"""Mixture schedules: the phases an epoch reads, each with its own weights (docs/iteration.md,
"Schedules")."""

from __future__ import annotations

from typing import NamedTuple


class Phase(NamedTuple):
    """One phase of a schedule: ``length`` global positions (samples, all ranks together) read
    with ``weights``, one per cache in the dataset's order.

    ``Loader(dataset, schedule=[Phase(300_000, [0.5, 0.5]), Phase(100_000, [0.8, 0.2])])``
    reads the phases one after another; the epoch is their lengths summed. Each cache's own
    order runs on across phases, so a phase change never restarts a pass over a cache. Any
    ``(length, weights)`` pair is accepted where a Phase is."""

    length: int
    weights: list[float]
