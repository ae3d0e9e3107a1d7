"""``datasetrt.TokenDataset``: one rank's batches of training rows cut from token caches.

All the work is the Rust token stream's (``datasetrt::token_stream``, docs/tokens.md); this
module keeps the settings, the progress through the epoch and the state.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ._native import Dataset, TokenBatch, _TokenPlan
from ._schedule import Phase

__all__ = ["TokenDataset", "token_plan_args", "token_schedule", "token_weights"]

# The remote options a token stream forwards to the caches it opens (None: the Dataset
# default), as `datasetrt.Dataset` takes them.
_REMOTE_OPTIONS = (
    "validate_cache",
    "cache_dir",
    "cache_limit",
    "fetch",
    "prefetch_shards",
    "read_while_downloading",
    "attempts",
    "first_backoff",
    "wait_for_room",
    "cache_access",
)


def token_plan_args(
    paths: Sequence[str | os.PathLike[str]] | Dataset, remote: Mapping[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """The locations and remote options of a token stream: those of ``paths`` when it is a
    :class:`datasetrt.Dataset` (an option given explicitly wins), else ``paths`` as given."""
    options = dict(remote)
    if isinstance(paths, Dataset):
        for name in _REMOTE_OPTIONS:
            given = options.get(name)
            default = {"validate_cache": False, "fetch": "whole", "cache_access": "private"}.get(
                name
            )
            if given is None or given == default:
                options[name] = getattr(paths, name)
        return list(paths.paths), options
    if isinstance(paths, (str, os.PathLike)):
        raise TypeError("a token stream takes a list of paths or URLs, not one")
    return [os.fspath(p) for p in paths], options


def token_weights(
    weights: Sequence[float] | Mapping[str, float] | None,
) -> list[float] | dict[str, float] | None:
    """``weights`` as the native plan takes them: a list (one per cache, in order) or a dict
    (a share per source name)."""
    if weights is None:
        return None
    if isinstance(weights, Mapping):
        return {str(name): float(share) for name, share in weights.items()}
    return [float(w) for w in weights]


def token_schedule(
    schedule: Sequence[tuple[int, Sequence[float]]] | None,
) -> list[Phase] | None:
    """``schedule`` as the native plan takes it: phases of ``(tokens, weights)``."""
    if schedule is None:
        return None
    return [Phase(int(tokens), [float(w) for w in weights]) for tokens, weights in schedule]


class TokenDataset:
    """One rank's batches of an epoch of training rows cut from token caches (docs/tokens.md).

    ``TokenDataset(paths, *, seq_len, mode="concat", bos_id=None, eos_id=None, pad_id=0,
    long_docs="split", weights=None, tokens_per_epoch=None, schedule=None, replacement=False,
    seed=0, epoch=0, shuffle="local", rank=0, world_size=1, ranks_per_node=1, policy="pad",
    ids_dtype="int64", state=None, batch_size=8, window_shards=4, window_block=256,
    packing_bins=256, workers=2, prefetch=2, validate_cache=False, cache_dir=None,
    cache_limit=None, fetch="whole", prefetch_shards=None, read_while_downloading=None,
    attempts=None, first_backoff=None, wait_for_room=None, cache_access=None)``

    - ``paths``: token cache directories and/or object-store URLs, or a
      :class:`datasetrt.Dataset` (whose locations and options are used).
    - ``mode``: ``"concat"`` (documents joined, cut into windows of ``seq_len + 1`` tokens,
      each starting at the last token of the one before), ``"first_fit"`` or ``"best_fit"``
      (documents packed whole into bins of ``seq_len``; ``long_docs`` says what happens to one
      longer: ``"split"``, ``"truncate"`` or ``"refuse"``).
    - ``bos_id`` / ``eos_id``: a boundary token added to each document of a cache whose
      documents do not carry it (none are added where they all do; a cache where some do is
      refused with :class:`datasetrt.TokenStreamError`).
    - ``weights``: shares of the epoch's *tokens*, one per cache in order, or a mapping from
      source name (each manifest's ``source``) to share, ``{"code": 0.3, "web": 0.7}``;
      ``tokens_per_epoch`` the budget
      (default: all the caches' tokens); ``replacement`` draws whole shard runs with
      replacement.
    - ``schedule``: weights that change along the epoch, ``[Phase(tokens, weights), ...]``
      (:class:`datasetrt.Phase`, ``Phase(tokens=30_000_000, weights=[0.5, 0.5])``): the epoch is
      the phases in order, each ``tokens`` of the epoch mixed at its ``weights`` (one per cache
      in order), on every rank at the same global token; a document counts in the phase in
      which it begins and each cache's order runs on across phases (docs/tokens.md,
      "Schedules"). Replaces ``weights`` and ``tokens_per_epoch``.
    - ``rank``, ``world_size``, ``ranks_per_node``, ``policy``, ``seed``, ``epoch``,
      ``shuffle``, ``window_shards``: as for :class:`datasetrt.Loader`; every rank yields the
      same number of batches. ``window_block`` rows are permuted together on top of the
      document order; ``packing_bins`` bins are kept open when packing.
    - ``ids_dtype``: ``"int64"`` (what ``cross_entropy`` and Hugging Face models take as they
      are) or ``"int32"`` for ``input_ids``, ``labels`` and ``position_ids``: half the bytes to
      derive, hand over and copy to a device, for a trainer that widens them there
      (``labels.long()``); a batch holding an id past ``2**31 - 1`` is refused. The rows do
      not depend on it.
    - ``state``: a :meth:`state_dict` to resume from (any topology, any ``workers``).
    - ``workers`` Rust threads read ``prefetch`` batches each ahead (GIL released); the batches
      are the same for any number.

    Iterating yields :class:`datasetrt.TokenBatch` objects of ``batch_size`` rows (the last
    may be shorter): ``batch.arrow()`` holds ``input_ids``, ``labels``, ``position_ids``,
    ``segment_ids``, ``loss_mask``, ``cu_seqlens``, ``documents``, ``padding`` and ``step``;
    ``datasetrt.torch.TokenStreamingDataset`` gives them as tensors.
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]] | Dataset,
        *,
        seq_len: int,
        mode: str = "concat",
        bos_id: int | None = None,
        eos_id: int | None = None,
        pad_id: int = 0,
        long_docs: str = "split",
        weights: Sequence[float] | Mapping[str, float] | None = None,
        tokens_per_epoch: int | None = None,
        schedule: Sequence[tuple[int, Sequence[float]]] | None = None,
        replacement: bool = False,
        seed: int = 0,
        epoch: int = 0,
        shuffle: str = "local",
        rank: int = 0,
        world_size: int = 1,
        ranks_per_node: int = 1,
        policy: str = "pad",
        ids_dtype: str = "int64",
        state: Mapping[str, Any] | None = None,
        batch_size: int = 8,
        window_shards: int = 4,
        window_block: int = 256,
        packing_bins: int = 256,
        workers: int = 2,
        prefetch: int = 2,
        validate_cache: bool = False,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_limit: int | str | None = None,
        fetch: str = "whole",
        prefetch_shards: int | None = None,
        read_while_downloading: bool | None = None,
        attempts: int | None = None,
        first_backoff: float | None = None,
        wait_for_room: float | None = None,
        cache_access: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if workers < 0 or prefetch < 1:
            raise ValueError("workers must be at least 0 and prefetch at least 1")
        self.paths, self._remote = token_plan_args(
            paths,
            {
                "validate_cache": validate_cache,
                "cache_dir": None if cache_dir is None else os.fspath(cache_dir),
                "cache_limit": cache_limit,
                "fetch": fetch,
                "prefetch_shards": prefetch_shards,
                "read_while_downloading": read_while_downloading,
                "attempts": attempts,
                "first_backoff": first_backoff,
                "wait_for_room": wait_for_room,
                "cache_access": cache_access,
            },
        )
        self._stream: dict[str, Any] = {
            "seq_len": seq_len,
            "mode": mode,
            "bos_id": bos_id,
            "eos_id": eos_id,
            "pad_id": pad_id,
            "long_docs": long_docs,
            "weights": token_weights(weights),
            "tokens_per_epoch": tokens_per_epoch,
            "schedule": token_schedule(schedule),
            "replacement": replacement,
            "seed": seed,
            "shuffle": shuffle,
            "window_shards": window_shards,
            "window_block": window_block,
            "packing_bins": packing_bins,
            "rank": rank,
            "world_size": world_size,
            "ranks_per_node": ranks_per_node,
            "policy": policy,
            "ids_dtype": ids_dtype,
        }
        self.epoch = epoch if state is None else int(state["epoch"])
        self.batch_size = batch_size
        self.workers = workers
        self.prefetch = prefetch
        self._plan = self._make_plan(state)
        # Batches of this plan already yielded (by this object, since the plan began).
        self._done = 0
        # The batches of the iteration under way or last run, for stats().
        self._batches: Any = None

    def _make_plan(self, state: Mapping[str, Any] | None) -> _TokenPlan:
        return _TokenPlan(
            self.paths,
            epoch=self.epoch,
            state=None if state is None else dict(state),
            **self._stream,
            **self._remote,
        )

    def __len__(self) -> int:
        """Batches this rank yields in the (rest of the) epoch: the same on every rank."""
        return -(-len(self._plan) // self.batch_size)

    @property
    def rows_per_rank(self) -> int:
        """Rows this rank reads in the (rest of the) epoch."""
        return len(self._plan)

    @property
    def rows(self) -> int:
        """Rows (windows or bins) of the whole epoch."""
        return self._plan.rows

    @property
    def epoch_tokens(self) -> int:
        """Tokens of the epoch's documents, boundary tokens included."""
        return self._plan.epoch_tokens

    @property
    def padding_fraction(self) -> float:
        """The epoch's tokens of padding over the input tokens of all its rows (the last
        partial window, unfilled bins, empty bins evening out node shares)."""
        return self._plan.padding_fraction

    @property
    def source_tokens(self) -> list[int]:
        """Each cache's tokens in the epoch (its budget plus less than one document)."""
        return self._plan.source_tokens

    def report(self) -> dict[str, Any]:
        """What the epoch does on this topology, as ``dsrt plan --seq-len --json`` prints it
        (rows per rank, tokens padded and dropped, per-cache shares, per-node shards)."""
        return self._plan.report()

    def __iter__(self) -> Iterator[TokenBatch]:
        batches = self._plan.batches(
            self.batch_size,
            workers=self.workers,
            prefetch=self.prefetch,
            expand=True,
            first_batch=self._done,
        )
        self._batches = batches
        for batch in batches:
            self._done += 1
            yield batch
        # A finished pass: the next one starts the epoch over.
        self._plan = self._make_plan(None)
        self._done = 0

    def stats(self) -> dict[str, Any]:
        """What the iteration under way (or the last one) has done, as a dict: batches,
        tokens, the consumer's wait and stall share, time to first batch, bytes, downloads,
        each source's share, the reading threads' time per stage (docs/python.md, "Loader
        stats"). Before any iteration, zero counts."""
        if self._batches is None:
            return self._plan.stats()
        return self._batches.stats()

    def state_dict(self) -> dict[str, Any]:
        """The state after the batches yielded so far (``seq_len``, ``mode`` and the sample
        state's keys): resume from it on any topology and with any ``workers``. Ranks in
        lockstep produce equal states."""
        steps = min(self._done * self.batch_size, len(self._plan))
        return self._plan.state_after(steps)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from ``state`` (a :meth:`state_dict` of this or another run with the same
        caches and settings): the next iteration yields exactly what no rank had read."""
        self.epoch = int(state["epoch"])
        self._plan = self._make_plan(state)
        self._done = 0

    def set_epoch(self, epoch: int) -> None:
        """Iterate epoch ``epoch`` from its start next."""
        self.epoch = epoch
        self._plan = self._make_plan(None)
        self._done = 0
