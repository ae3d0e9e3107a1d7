"""PyTorch integration: :class:`StreamingDataset`, an ``IterableDataset`` over DatasetRT caches.

The order of an epoch is decided by DatasetRT (seed, epoch, weights, shuffle), dealt
round-robin to ranks, and within a rank split between ``DataLoader`` worker processes in
units of ``batch_size`` (or single samples) so that the ``DataLoader`` yields exactly the
same sequence whatever ``num_workers`` is. Every rank yields the same number of items
(``policy="pad"`` repeats samples from the start of the epoch to fill the last round,
``"drop"`` drops it), so DDP never waits for a rank that ran out.

Resuming: ``state_dict()`` / ``load_state_dict()`` work with torchdata's
``StatefulDataLoader`` (same ``num_workers``: ``loader.load_state_dict(state)``), and
``StreamingDataset.load_state_dict`` also accepts a whole ``StatefulDataLoader.state_dict()``
taken with any ``num_workers`` (then build a new loader over the dataset with any other
``num_workers``): the epoch continues exactly after the last item the loader returned.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Callable

import numpy
import pyarrow as pa
import torch
import torch.utils.data

from ._native import (
    REMOTE_DEFAULTS,
    ArrowBatch,
    Dataset,
    RankPlan,
    TokenBatch,
    _located_payloads,
    _send_batches_in_slots,
    _TokenPlan,
)
from ._schedule import Phase
from ._tokens import token_plan_args, token_schedule, token_weights
from .metrics import _SUMMED, merge_stats

__all__ = [
    "ColumnarBatch",
    "StreamingDataset",
    "TokenStreamingDataset",
    "TokenTensors",
    "document_attention_mask",
    "rank_and_world_size",
    "ranks_per_node_of",
]

_STATE_TAG = "__datasetrt_streaming__"

# The scalar stats a DataLoader worker of StreamingDataset writes into its row of the shared
# block, in this order, then its per-cache counts; `batches` first, so a row that has never
# been written reads 0 there.
_STATS_SCALARS = ("batches", "elapsed_s", "time_to_first_batch_s", *_SUMMED[1:])
_COUNTS = {"batches", "samples", "tokens", "bytes_read", "bytes_downloaded", "downloads"}
_COUNTS |= {"downloads_in_flight", "shard_cache_hits"}

# Workers of one StreamingDataset whose stats the training process sums (ids beyond are not
# counted).
_MAX_STATS_WORKERS = 64


def _stats_recorder(block: torch.Tensor, plan: RankPlan, info: Any) -> Callable[[], None]:
    """In a DataLoader worker, writes the worker's stats into its row of `block` (after each
    read); elsewhere does nothing."""
    if info is None or info.id >= len(block):
        return lambda: None
    row = block[info.id]

    def record() -> None:
        stats = plan.stats()
        values = [stats[key] for key in _STATS_SCALARS] + stats["source_counts"]
        first = stats["time_to_first_batch_s"]
        values[2] = float("nan") if first is None else first
        row.copy_(torch.tensor(values, dtype=torch.float64))

    return record


def _stats_from_row(row: torch.Tensor) -> dict[str, Any]:
    """A worker's stats dict from its row of the shared block."""
    values = row.tolist()
    stats: dict[str, Any] = {}
    for key, value in zip(_STATS_SCALARS, values):
        stats[key] = int(value) if key in _COUNTS else value
    if stats["time_to_first_batch_s"] != stats["time_to_first_batch_s"]:  # NaN: none yet
        stats["time_to_first_batch_s"] = None
    stats["source_counts"] = [int(v) for v in values[len(_STATS_SCALARS) :]]
    return stats


# Datasets with remote caches a forked worker inherited from its parent and replaced by its
# own (see StreamingDataset._open): never used again, never dropped.
_INHERITED: list[Any] = []


def rank_and_world_size() -> tuple[int, int]:
    """This process's ``(rank, world_size)``: from ``torch.distributed`` when it is
    initialised, else from the ``RANK`` and ``WORLD_SIZE`` environment variables, else
    ``(0, 1)``."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except (ImportError, RuntimeError):
        pass
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return 0, 1


def ranks_per_node_of(world_size: int) -> int:
    """Ranks on each node of this job: torchrun's ``LOCAL_WORLD_SIZE`` when it is set (and
    divides ``world_size``), else 1 (every rank its own node). With ranks numbered node by
    node, as torchrun numbers them, each node then reads its own shards."""
    local = os.environ.get("LOCAL_WORLD_SIZE")
    if local is not None:
        try:
            value = int(local)
        except ValueError:
            raise ValueError(f"LOCAL_WORLD_SIZE={local!r} is not an integer") from None
        if value >= 1 and world_size % value == 0:
            return value
        raise ValueError(
            f"LOCAL_WORLD_SIZE={value} does not divide the world size {world_size}; "
            "pass ranks_per_node="
        )
    return 1


def _sample_dict(sample, copy: bool) -> dict[str, Any]:
    payload = sample.payload
    return {
        "key": sample.key,
        # A worker process pickles its items: a zero-copy view of the mapped shard becomes bytes.
        "payload": bytes(payload) if copy and not isinstance(payload, bytes) else payload,
        "metadata": sample.metadata,
        "padding": sample.padding,
    }


# The defaults of the remote options StreamingDataset forwards to Dataset (None: these), as
# the Rust `RemoteOptions` defines them.
_REMOTE_DEFAULTS: dict[str, Any] = dict(REMOTE_DEFAULTS)


class StreamingDataset(torch.utils.data.IterableDataset):
    """A ``torch.utils.data.IterableDataset`` over DatasetRT caches.

    ``StreamingDataset(paths, *, seed=0, epoch=0, weights=None, samples_per_epoch=None,
    replacement=False, shuffle="local", window_shards=4, policy="pad", batch_size=None,
    transform=None, rank=None, world_size=None, ranks_per_node=None, validate_cache=False,
    read_ahead=256,
    collate="samples", transfer="bytes", cache_dir=None, cache_limit=None, fetch="whole",
    prefetch_shards=None, read_while_downloading=None, attempts=None, first_backoff=None,
    wait_for_room=None, cache_access="private", schedule=None)``

    - ``paths``: cache directories and/or object-store URLs (``s3://bucket/prefix``, ...),
      or a :class:`datasetrt.Dataset`, whose locations and options are used. Each process
      (and each DataLoader worker) opens the caches itself; pickling carries only the
      locations and settings, never an open cache or mapping.
    - ``cache_dir``, ``cache_limit``, ``fetch``, ``prefetch_shards``,
      ``read_while_downloading``, ``attempts``, ``first_backoff``, ``wait_for_room``: how
      remote caches are read, as for :class:`datasetrt.Dataset`. When a Dataset is given,
      an argument left at its default (``None`` for the last five) takes the Dataset's
      value; otherwise ``None`` means the Dataset default (8, True, 5, 0.1, 600.0). They
      are checked at construction and ignored for local caches. Every worker process opens the same
      local cache directory: a shard is downloaded once per node, whichever process reads it
      first, and the others wait for it.
    - ``cache_access``: ``"private"`` (default) or ``"group"``, as for
      :class:`datasetrt.Dataset` (a Dataset given takes its own unless another is given).
    - ``seed``, ``epoch``, ``weights``, ``samples_per_epoch``, ``replacement``, ``shuffle``,
      ``window_shards``, ``policy``, ``schedule``: as for :class:`datasetrt.Loader`.
    - ``rank`` / ``world_size``: default to :func:`rank_and_world_size` at construction.
    - ``ranks_per_node``: ranks on each node (default: :func:`ranks_per_node_of`, torchrun's
      ``LOCAL_WORLD_SIZE``, else 1). Each node reads one contiguous share of the epoch, so
      each shard is read (and downloaded) by one node; its ranks share its local cache.
    - Each item is ``transform(sample)`` (or the sample itself), where ``sample`` is a dict
      with ``key`` (``(cache_id, sample_id)``), ``payload`` (bytes-like: ``bytes`` in
      DataLoader worker processes, a zero-copy ``memoryview`` of the mapped shard in the main
      process for uncompressed caches), ``metadata`` (dict) and ``padding`` (bool). With
      ``batch_size``, items are lists of that many samples (the last one may be shorter); use
      ``DataLoader(..., batch_size=None)`` with it.
    - ``collate="columnar"`` (with ``batch_size``): each item is one :class:`ColumnarBatch`
      (read like a dict of tensors: ``payload``, ``offsets``, ``keys``, ``padding``,
      ``steps``, ``metadata``) instead of a list; ``transform`` then receives the batch. A
      batch crosses from a worker to the training process as a few byte buffers, not as one
      object per sample: the fast path for high sample rates.
    - ``transfer`` (with ``collate="columnar"``): how a batch crosses from a DataLoader
      worker to the training process. ``"bytes"`` (default): its payloads are copied into
      one buffer and pickled through the DataLoader's queue. ``"locations"``: the worker does
      every check a read does (index row, record envelope against metadata.arrow) and sends
      only where each payload lies (shard file, offset, length) with the keys and metadata;
      the receiving process maps each shard file (read-only, no descriptor kept; the most
      recently used ``datasetrt.max_open_shards()`` mappings are kept for reuse) and
      ``batch["payloads"]`` gives zero-copy ``memoryview`` slices of it, each made when
      it is taken (a sequence: index it or iterate it). Payloads stored
      LZ4-compressed are still decoded in the worker and sent as bytes. The items are the
      same in both modes (same keys, metadata, payload bytes and order); ``"locations"``
      moves no payload byte through the queue, so it is the fast path when the training
      process reads ``batch["payloads"]`` (``batch["payload"]`` then concatenates them,
      a copy in the training process). The caches must stay unchanged while iterating (the
      format's rule); a shard file cut shorter than its records raises
      :class:`datasetrt.CorruptCacheError`. Remote caches have no shard files to map (their
      downloaded shards may be evicted from the local cache at any time), so their payloads
      always travel as bytes in the batch, as LZ4 payloads do; a dataset mixing remote and
      local caches sends locations for the local ones' uncompressed payloads only. The
      items are the same either way.
    - ``read_ahead``: samples each worker reads per native call (GIL released).
    """

    def __init__(
        self,
        paths: Sequence[str] | Dataset,
        *,
        seed: int = 0,
        epoch: int = 0,
        weights: Sequence[float] | None = None,
        samples_per_epoch: int | None = None,
        replacement: bool = False,
        shuffle: str = "local",
        window_shards: int = 4,
        policy: str = "pad",
        batch_size: int | None = None,
        # Receives a sample dict, or a ColumnarBatch with collate="columnar".
        transform: Callable[[Any], Any] | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        ranks_per_node: int | None = None,
        validate_cache: bool = False,
        read_ahead: int = 256,
        collate: str = "samples",
        transfer: str = "bytes",
        cache_dir: str | os.PathLike | None = None,
        cache_limit: int | str | None = None,
        fetch: str = "whole",
        prefetch_shards: int | None = None,
        read_while_downloading: bool | None = None,
        attempts: int | None = None,
        first_backoff: float | None = None,
        wait_for_room: float | None = None,
        cache_access: str = "private",
        schedule: Sequence[tuple[int, Sequence[float]]] | None = None,
    ) -> None:
        super().__init__()
        remote: dict[str, Any] = {
            "prefetch_shards": prefetch_shards,
            "read_while_downloading": read_while_downloading,
            "attempts": attempts,
            "first_backoff": first_backoff,
            "wait_for_room": wait_for_room,
        }
        if isinstance(paths, Dataset):
            validate_cache = validate_cache or paths.validate_cache
            cache_dir = paths.cache_dir if cache_dir is None else cache_dir
            cache_limit = paths.cache_limit if cache_limit is None else cache_limit
            fetch = paths.fetch if fetch == "whole" else fetch
            cache_access = paths.cache_access if cache_access == "private" else cache_access
            remote = {k: getattr(paths, k) if v is None else v for k, v in remote.items()}
            paths = paths.paths
        elif isinstance(paths, (str, os.PathLike)):
            raise TypeError("StreamingDataset takes a list of paths or URLs, not one")
        self.paths: list[str] = [os.fspath(p) for p in paths]
        self.validate_cache = validate_cache
        self.cache_dir: str | None = None if cache_dir is None else os.fspath(cache_dir)
        self.cache_limit = cache_limit
        self.fetch = fetch
        self.cache_access = cache_access
        # None: the Dataset default (checked, like every option, when the caches open below).
        resolved = {k: _REMOTE_DEFAULTS[k] if v is None else v for k, v in remote.items()}
        self.prefetch_shards: int = resolved["prefetch_shards"]
        self.read_while_downloading: bool = resolved["read_while_downloading"]
        self.attempts: int = resolved["attempts"]
        self.first_backoff: float = resolved["first_backoff"]
        self.wait_for_room: float = resolved["wait_for_room"]
        self.seed = seed
        self.epoch = epoch
        self.weights = list(weights) if weights is not None else None
        self.samples_per_epoch = samples_per_epoch
        self.schedule = None if schedule is None else [Phase(int(n), list(w)) for n, w in schedule]
        self.replacement = replacement
        self.shuffle = shuffle
        self.window_shards = window_shards
        self.policy = policy
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.transform = transform
        if read_ahead < 1:
            raise ValueError("read_ahead must be at least 1")
        if collate not in ("samples", "columnar"):
            raise ValueError('collate must be "samples" or "columnar"')
        if collate == "columnar" and batch_size is None:
            raise ValueError('collate="columnar" needs a batch_size')
        if transfer not in ("bytes", "locations"):
            raise ValueError('transfer must be "bytes" or "locations"')
        if transfer == "locations" and collate != "columnar":
            raise ValueError('transfer="locations" needs collate="columnar"')
        self.collate = collate
        self.transfer = transfer
        self.read_ahead = read_ahead
        auto_rank, auto_world = rank_and_world_size()
        self.rank = auto_rank if rank is None else rank
        self.world_size = auto_world if world_size is None else world_size
        self.ranks_per_node = (
            ranks_per_node_of(self.world_size) if ranks_per_node is None else ranks_per_node
        )
        # Where the next iteration starts: a Loader-style state dict (what all ranks have
        # consumed), or None for the epoch's start.
        self._resume: dict[str, Any] | None = None
        # A worker's own progress from a StatefulDataLoader snapshot (same num_workers).
        self._worker_resume: dict[str, Any] | None = None
        # Progress of the iteration under way in this process.
        self._progress: dict[str, Any] = self._fresh_progress(None, 1)
        self._dataset: Dataset | None = None
        self._dataset_pid: int | None = None
        self._plan_len: int | None = None
        # The plan this process reads through (its stats when there are no workers).
        self._reading: RankPlan | None = None
        # Fail early, in the constructing process, on bad paths or settings.
        self._plan()
        # Each DataLoader worker's latest stats, one row per worker id, in memory shared with
        # the workers (see stats()).
        self._stats_block = torch.zeros(
            (_MAX_STATS_WORKERS, len(_STATS_SCALARS) + len(self._open().caches)),
            dtype=torch.float64,
        ).share_memory_()

    # Pickling: locations and settings only, never an open cache or mapping.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_dataset"] = None
        state["_reading"] = None
        return state

    def stats(self) -> dict[str, Any]:
        """What this dataset's reading has done in the current epoch, as a dict
        (docs/python.md, "Loader stats"). Without worker processes, the reads of this process.
        With ``num_workers`` workers, in the training process: the sum over the workers
        (:func:`datasetrt.metrics.merge_stats`; ``workers`` says how many), each worker's
        stats as it wrote them after its latest batch into a block of memory shared with the
        training process (batches the workers have read, which the ``DataLoader`` may not have
        handed over yet: equal to what the training process received once the epoch is done).
        Inside a worker: its own."""
        info = torch.utils.data.get_worker_info()
        if info is None:
            rows = [_stats_from_row(row) for row in self._stats_block if row[0] > 0]
            if rows:
                return merge_stats(rows)
        if self._reading is None:
            self._reading = self._plan()
        return self._reading.stats()

    def _open(self) -> Dataset:
        if self._dataset is not None and self._dataset_pid != os.getpid():
            # A forked DataLoader worker inherited the parent's open dataset. Local caches are
            # plain mappings and stay usable; remote ones hold the parent's store clients
            # (connections owned by threads the child does not have), so the worker opens its
            # own. The inherited object is kept, not dropped: its shard files' locks are
            # shared with the parent.
            if any(c.is_remote for c in self._dataset.caches):
                _INHERITED.append(self._dataset)
                self._dataset = None
            else:
                self._dataset_pid = os.getpid()
        if self._dataset is None:
            self._dataset_pid = os.getpid()
            self._dataset = Dataset(
                self.paths,
                validate_cache=self.validate_cache,
                cache_dir=self.cache_dir,
                cache_limit=self.cache_limit,
                fetch=self.fetch,
                prefetch_shards=self.prefetch_shards,
                read_while_downloading=self.read_while_downloading,
                attempts=self.attempts,
                first_backoff=self.first_backoff,
                wait_for_room=self.wait_for_room,
                cache_access=self.cache_access,
            )
        return self._dataset

    def _plan(self, resume: dict[str, Any] | None = None) -> RankPlan:
        plan = RankPlan(
            self._open(),
            seed=self.seed,
            epoch=self.epoch,
            weights=self.weights,
            samples_per_epoch=self.samples_per_epoch,
            schedule=self.schedule,
            replacement=self.replacement,
            shuffle=self.shuffle,
            window_shards=self.window_shards,
            rank=self.rank,
            world_size=self.world_size,
            ranks_per_node=self.ranks_per_node,
            policy=self.policy,
            state=self._resume if resume is None else resume,
        )
        return plan

    def set_epoch(self, epoch: int) -> None:
        """Iterate epoch ``epoch`` next (call it before each epoch, on every rank). A resume
        state loaded for another epoch is discarded."""
        if epoch != self.epoch:
            self._resume = None
            self._worker_resume = None
        self.epoch = epoch
        # A new epoch's workers start their stats afresh.
        self._stats_block.zero_()
        self._reading = None

    def __len__(self) -> int:
        """Items this rank yields in the (rest of the) epoch: the same on every rank."""
        steps = len(self._plan())
        if self.batch_size is None:
            return steps
        return -(-steps // self.batch_size)

    def _fresh_progress(self, worker_id: int | None, num_workers: int) -> dict[str, Any]:
        return {
            "worker_id": worker_id,
            "num_workers": num_workers,
            "chunks_done": 0,
            "steps_done": 0,
        }

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        plan = self._plan()
        self._reading = plan
        record = _stats_recorder(self._stats_block, plan, info)
        steps = len(plan)
        unit = self.batch_size or 1
        chunks = -(-steps // unit)
        progress = self._fresh_progress(worker if info is not None else None, workers)
        resume = self._worker_resume
        if (
            resume is not None
            and resume["num_workers"] == workers
            and resume["worker_id"] == progress["worker_id"]
        ):
            progress["chunks_done"] = resume["chunks_done"]
            progress["steps_done"] = resume["steps_done"]
        self._worker_resume = None
        self._progress = progress
        # This worker's chunks: worker, worker + workers, ... (each `unit` consecutive steps).
        mine = range(worker + progress["chunks_done"] * workers, chunks, workers)
        transform = self.transform
        if self.collate == "columnar":
            for chunk in mine:
                wanted = range(chunk * unit, min((chunk + 1) * unit, steps))
                # Caches on object storage download the shards of this chunk and of the
                # steps after it ahead, as far as their prefetch reaches (a no-op for local
                # caches).
                plan.hint_ahead(wanted.start, wanted.stop)
                if self.transfer == "locations":
                    located = plan.read_located(wanted)
                    batch = ColumnarBatch(located, _shard_identities(_shard_paths(located)))
                else:
                    batch = ColumnarBatch(plan.read_columnar(wanted))
                progress["chunks_done"] += 1
                progress["steps_done"] += len(wanted)
                record()
                yield transform(batch) if transform is not None else batch
            if info is None:
                self._resume = None
            return
        per_read = max(1, self.read_ahead // unit)
        for first in range(0, len(mine), per_read):
            group = mine[first : first + per_read]
            group_steps: list[int] = []
            for chunk in group:
                group_steps.extend(range(chunk * unit, min((chunk + 1) * unit, steps)))
            plan.hint_ahead(group[0] * unit, min((group[-1] + 1) * unit, steps))
            samples = plan.read(group_steps)
            record()
            at = 0
            for chunk in group:
                n = min((chunk + 1) * unit, steps) - chunk * unit
                items = [_sample_dict(s, info is not None) for s in samples[at : at + n]]
                at += n
                if transform is not None:
                    items = [transform(item) for item in items]
                progress["chunks_done"] += 1
                progress["steps_done"] += n
                yield items if self.batch_size is not None else items[0]
        if info is None:
            # A finished pass: the next one starts at the beginning of the (next) epoch.
            self._resume = None

    def state_dict(self) -> dict[str, Any]:
        """The progress of the iteration under way in this process (a DataLoader worker's
        own share when called in a worker), for ``StatefulDataLoader``."""
        return {
            _STATE_TAG: 1,
            "seed": self.seed,
            "epoch": self.epoch,
            "resume": self._resume,
            "rank": self.rank,
            "world_size": self.world_size,
            "ranks_per_node": self.ranks_per_node,
            "batch_size": self.batch_size,
            **self._progress,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from ``state``: one of this class's ``state_dict()`` results (what
        ``StatefulDataLoader`` passes back to each worker; same ``num_workers``), a whole
        ``StatefulDataLoader.state_dict()`` taken with any ``num_workers``, or a
        ``datasetrt.Loader.state_dict()`` (``seed``, ``epoch``, ``position``,
        ``epoch_len``, ``cuts``, ``remaining``, ``mixture``), from any topology; a state of
        another mixture (weights, schedule, shuffle, caches) is refused. The next iteration
        continues exactly after the last item returned: with the same topology and
        ``num_workers``, each worker where it stopped; otherwise every rank reads its share of
        what no rank has read."""
        if _STATE_TAG in state:
            self._check(state)
            self._resume = state["resume"]
            self._worker_resume = dict(state)
            return
        if "position" in state and "epoch_len" in state:
            if state["seed"] != self.seed:
                raise ValueError(
                    f"state is for seed {state['seed']}, this dataset has seed {self.seed}"
                )
            self.epoch = state["epoch"]
            self._resume = dict(state)
            self._worker_resume = None
            self._plan()  # checks the state against the epoch
            return
        found = list(_find_states(state))
        if any(s["worker_id"] is not None for s in found):
            # The main process's own copy never iterates when workers do.
            found = [s for s in found if s["worker_id"] is not None]
        if not found:
            raise ValueError("no StreamingDataset state in this state dict")
        first = found[0]
        for s in found:
            self._check(s)
            if (s["resume"], s["num_workers"]) != (first["resume"], first["num_workers"]):
                raise ValueError("inconsistent worker states in this state dict")
        by_worker = {s["worker_id"]: s["steps_done"] for s in found}
        consumed_steps = sum(by_worker.values())
        self._resume = first["resume"]
        self._resume = self._plan().state_after(consumed_steps)
        self._worker_resume = None

    def _check(self, state: dict[str, Any]) -> None:
        if state["epoch"] != self.epoch and state["seed"] == self.seed:
            # Resuming another epoch: take it.
            self.epoch = state["epoch"]
        names = ("seed", "epoch", "rank", "world_size", "ranks_per_node", "batch_size")
        mine = tuple(getattr(self, n) for n in names)
        theirs = tuple(state.get(n, 1 if n == "ranks_per_node" else None) for n in names)
        if mine != theirs:
            raise ValueError(
                f"state is for ({', '.join(names)}) = {theirs}, this dataset has {mine}"
            )


def _tensor(buffer: pa.Buffer | None, dtype: torch.dtype, count: int) -> torch.Tensor:
    """A tensor of the first ``count`` values of an Arrow buffer, over its memory (no copy).
    Arrow buffers are immutable and torch has no read-only tensor, so torch warns; the tensor
    shares the memory of its batch alone, which nothing else reads."""
    if count == 0 or buffer is None:
        return torch.empty(0, dtype=dtype)
    values = numpy.frombuffer(buffer, dtype=_NUMPY_TYPES[dtype], count=count)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(values)


_NUMPY_TYPES = {
    torch.uint8: "uint8",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint64: "uint64",
    torch.float64: "float64",
}


def _bools(array: pa.Array) -> torch.Tensor:
    """A bool tensor of an Arrow boolean array (Arrow packs bits, torch a byte per value: a
    copy of one byte per row)."""
    return torch.from_numpy(array.to_numpy(zero_copy_only=False))


_ZERO_COPY_TYPES = {pa.int64(): torch.int64, pa.float64(): torch.float64}


def _column(array: pa.Array) -> torch.Tensor | list[Any]:
    """A metadata column of a batch: a tensor for a bool, int64 or float64 column without a
    null, else a list of its values (None where null)."""
    if array.null_count == 0:
        dtype = _ZERO_COPY_TYPES.get(array.type)
        if dtype is not None and array.offset == 0:
            return _tensor(array.buffers()[1], dtype, len(array))
        if array.type == pa.bool_():
            return _bools(array)
    return array.to_pylist()


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _shard_paths(located: ArrowBatch) -> list[str]:
    """The shard files a ``RankPlan.read_located`` batch names (its ``shard`` dictionary)."""
    return pa.record_batch(located).column("shard").dictionary.to_pylist()


def _shard_identities(paths: Sequence[Any]) -> list[tuple[int, int, int, int]]:
    """What a worker saw of each shard file it checked: (device, inode, size, mtime)."""
    return [_identity(os.stat(p)) for p in paths]


class ColumnarBatch:
    """One batch of ``StreamingDataset(collate="columnar")``, read as a dict: ``payload`` (a
    uint8 tensor of the payloads one after another), ``offsets`` (int64, ``len + 1``: sample
    ``i`` is ``payload[offsets[i]:offsets[i+1]]``), ``payloads`` (a sequence of one
    read-only ``memoryview`` per sample, zero-copy), ``keys`` (uint64, shape ``(len, 2)``: cache_id,
    sample_id), ``padding`` (bool), ``steps`` (int64) and ``metadata`` (column name to a
    tensor for bool, int64 and float64 columns without nulls in the batch, of that dtype,
    else a list). ``arrow`` is the batch itself, a ``pyarrow.RecordBatch`` (the tensors are
    views of its buffers).

    It crosses from a DataLoader worker to the training process as one Arrow IPC stream (one
    pickle, no shared-memory segment per tensor); the tensors are made on first access,
    without copying the buffers. With ``transfer="locations"`` it carries where the payloads
    lie instead of their bytes: ``payloads`` are then slices of the shard files mapped in the
    receiving process, and ``payload`` / ``offsets`` are built from them (a copy).
    """

    __slots__ = ("_batch", "_identities", "_cache")
    _NAMES = ("payload", "offsets", "payloads", "keys", "padding", "steps", "metadata")

    def __init__(
        self, batch: ArrowBatch, identities: list[tuple[int, int, int, int]] | None = None
    ) -> None:
        self._batch = batch
        self._identities = identities
        self._cache: dict[str, Any] = {}

    def __reduce__(self):
        return (ColumnarBatch, (self._batch, self._identities))

    def __len__(self) -> int:
        return len(self._batch)

    def keys(self):
        return list(self._NAMES)

    def __contains__(self, name: str) -> bool:
        return name in self._NAMES

    @property
    def arrow(self) -> pa.RecordBatch:
        """The batch as a ``pyarrow.RecordBatch``, over the same memory."""
        record = self._cache.get("arrow")
        if record is None:
            record = self._cache["arrow"] = pa.record_batch(self._batch)
        return record

    def __getitem__(self, name: str) -> Any:
        if name in self._cache:
            return self._cache[name]
        record = self.arrow
        located = "shard" in record.schema.names
        rows = len(record)
        value: Any
        if name == "payloads":
            if located:
                value = _located_payloads(self._batch, self._identities)
            else:
                whole = memoryview(self["payload"].numpy())
                bounds = self["offsets"].tolist()
                value = [whole[a:b] for a, b in zip(bounds, bounds[1:])]
        elif name == "payload":
            if located:
                value = torch.frombuffer(bytearray(b"".join(self["payloads"])), dtype=torch.uint8)
            else:
                end = int(self["offsets"][-1])
                value = _tensor(record.column("payload").buffers()[2], torch.uint8, end)
        elif name == "keys":
            keys = record.column("key").values
            value = _tensor(keys.buffers()[1], torch.uint64, 2 * rows).view(-1, 2)
        elif name == "offsets":
            if located:
                bounds = [0]
                for p in self["payloads"]:
                    bounds.append(bounds[-1] + len(p))
                value = torch.tensor(bounds, dtype=torch.int64)
            else:
                value = _tensor(record.column("payload").buffers()[1], torch.int64, rows + 1)
        elif name == "padding":
            value = _bools(record.column("padding"))
        elif name == "steps":
            value = _tensor(record.column("step").buffers()[1], torch.int64, rows)
        elif name == "metadata":
            metadata = record.column("metadata")
            value = {
                field.name: _column(metadata.field(i)) for i, field in enumerate(metadata.type)
            }
        else:
            raise KeyError(name)
        self._cache[name] = value
        return value

    def __repr__(self) -> str:
        record = self.arrow
        if "shard" in record.schema.names:
            shards = len(record.column("shard").dictionary)
            return f"ColumnarBatch(<{len(self)} samples, located in {shards} shard files>)"
        end = int(self["offsets"][-1])
        return f"ColumnarBatch(<{len(self)} samples, {end} payload bytes>)"


def _find_states(obj: Any) -> Iterator[dict[str, Any]]:
    """Every StreamingDataset state nested in a StatefulDataLoader state dict."""
    if isinstance(obj, dict):
        if _STATE_TAG in obj:
            yield obj
            return
        for value in obj.values():
            yield from _find_states(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _find_states(value)


_TOKEN_STATE_TAG = "__datasetrt_token_stream__"


class TokenTensors:
    """One batch of :class:`TokenStreamingDataset` as tensors, read like a dict (docs/tokens.md):
    ``input_ids``, ``labels`` (``-100`` where the loss is masked), ``position_ids`` (int64,
    ``[B, seq_len]``), ``segment_ids`` (int32), ``loss_mask`` (bool), ``cu_seqlens`` (int32,
    ``[n + 1]``, over the flattened batch, as flash-attention's varlen kernels take it),
    ``max_seqlen`` (int), ``padding`` (bool, ``[B]``: rows without loss), ``steps`` (int64)
    and ``documents`` (per row, the ``(cache_id, sample_id, start, length)`` of each piece of a
    document it holds).

    The tensors are views of the batch's Arrow buffers (no copy); they are derived from the
    batch's token ids and pieces on first access, in the process that accesses them (GIL
    released). Crossing from a ``DataLoader`` worker, a batch arrives with its columns derived
    in shared memory (see :class:`TokenStreamingDataset`), or in that compact form, and then
    the training process derives the columns itself. ``batch.to(device)`` and
    ``batch.pin_memory()`` give a dict of the tensors moved or pinned.
    """

    __slots__ = ("_batch", "_cache", "_stats")
    _NAMES = (
        "input_ids",
        "labels",
        "position_ids",
        "segment_ids",
        "loss_mask",
        "cu_seqlens",
        "max_seqlen",
        "padding",
        "steps",
        "documents",
    )
    _TENSORS = ("input_ids", "labels", "position_ids", "segment_ids", "loss_mask", "cu_seqlens")

    def __init__(
        self, batch: TokenBatch, stats: tuple[tuple[str, int], int, dict[str, Any]] | None = None
    ) -> None:
        self._batch = batch
        self._cache: dict[str, Any] = {}
        # From a DataLoader worker: ((dataset key, epoch), worker id, the worker's stats after
        # this batch), recorded where the batch is unpickled (see TokenStreamingDataset.stats).
        self._stats = stats

    def __reduce__(self):
        return (_token_tensors, (self._batch, self._stats))

    def __len__(self) -> int:
        return len(self._batch)

    def keys(self):
        return list(self._NAMES)

    def __contains__(self, name: str) -> bool:
        return name in self._NAMES

    @property
    def batch(self) -> TokenBatch:
        """The underlying :class:`datasetrt.TokenBatch`."""
        return self._batch

    def _record(self) -> pa.RecordBatch:
        record = self._cache.get("arrow")
        if record is None:
            record = self._cache["arrow"] = pa.record_batch(self._batch.arrow())
        return record

    def _derive_tensors(self) -> None:
        """Makes every tensor column and ``max_seqlen`` at once: one native call for the views
        of the batch's buffers, then a tensor over each (no copy)."""
        views, max_seqlen = self._batch._tensor_columns()
        # Each view is writable memory of this batch alone (its pooled buffers or the slot it
        # arrived in), which nothing else reads.
        for name, view in zip(self._TENSORS, views):
            tensor = torch.from_numpy(numpy.asarray(view))
            if name == "loss_mask":
                tensor = tensor.view(torch.bool)
            self._cache[name] = tensor
        self._cache["max_seqlen"] = max_seqlen

    def __getitem__(self, name: str) -> Any:
        if name in self._cache:
            return self._cache[name]
        if name in self._TENSORS or name == "max_seqlen":
            self._derive_tensors()
            return self._cache[name]
        record = self._record()
        rows = len(self._batch)
        value: Any
        if name == "padding":
            value = _bools(record.column("padding"))
        elif name == "steps":
            value = _tensor(record.column("step").buffers()[1], torch.int64, rows)
        elif name == "documents":
            value = [
                [(d["cache_id"], d["sample_id"], d["start"], d["length"]) for d in row]
                for row in record.column("documents").to_pylist()
            ]
        else:
            raise KeyError(name)
        self._cache[name] = value
        return value

    def to(self, device: Any, non_blocking: bool = False) -> dict[str, Any]:
        """The tensors on ``device`` (and the other entries as they are), as a dict."""
        out = {name: self[name] for name in self._NAMES}
        for name in self._TENSORS + ("padding", "steps"):
            out[name] = out[name].to(device, non_blocking=non_blocking)
        return out

    def pin_memory(self) -> dict[str, Any]:
        """The tensors in pinned memory (what ``DataLoader(pin_memory=True)`` asks for)."""
        out = {name: self[name] for name in self._NAMES}
        for name in self._TENSORS + ("padding", "steps"):
            out[name] = out[name].pin_memory()
        return out

    def __repr__(self) -> str:
        return f"TokenTensors(<{len(self)} rows of {self._batch.seq_len} tokens>)"


# The latest stats of each DataLoader worker, per TokenStreamingDataset (its _stats_key), as
# their batches arrived in this process.
_WORKER_STATS: dict[tuple[str, int], dict[int, dict[str, Any]]] = {}


def _token_tensors(
    batch: TokenBatch, stats: tuple[tuple[str, int], int, dict[str, Any]] | None
) -> TokenTensors:
    """Unpickles a TokenTensors, recording the stats of the worker that sent it."""
    if stats is not None:
        key, worker, counters = stats
        _WORKER_STATS.setdefault(key, {})[worker] = counters
    return TokenTensors(batch)


def document_attention_mask(segment_ids: torch.Tensor) -> torch.Tensor:
    """A boolean attention mask ``[B, 1, S, S]`` (True: attend) for
    ``torch.nn.functional.scaled_dot_product_attention`` from ``segment_ids`` ``[B, S]``:
    causal and within each piece of a document (padding attends to padding, so no row of the
    mask is empty)."""
    seq_len = segment_ids.shape[-1]
    same = segment_ids[:, :, None] == segment_ids[:, None, :]
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=segment_ids.device).tril()
    return (same & causal)[:, None, :, :]


class TokenStreamingDataset(torch.utils.data.IterableDataset):
    """A ``torch.utils.data.IterableDataset`` of batches of training rows cut from token caches
    (docs/tokens.md); use it with ``DataLoader(dataset, batch_size=None)``.

    It takes :class:`datasetrt.TokenDataset`'s arguments (``seq_len``, ``mode``, ``bos_id``,
    ``eos_id``, ``pad_id``, ``long_docs``, ``weights``, ``tokens_per_epoch``, ``schedule``,
    ``replacement``, ``seed``, ``epoch``, ``shuffle``, ``rank``, ``world_size``,
    ``ranks_per_node``, ``policy``, ``ids_dtype``, ``state``, ``batch_size``, ``window_shards``,
    ``window_block``, ``packing_bins`` and the remote options), with ``rank``,
    ``world_size`` and ``ranks_per_node`` taken from torch.distributed or torchrun's
    environment when not given, and ``threads`` / ``prefetch`` for the Rust threads that read
    ahead when the ``DataLoader`` has no worker processes.

    Each item is a :class:`TokenTensors`. With ``num_workers`` worker processes, worker ``w``
    reads batches ``w, w + num_workers, ...`` of the rank's steps, so the ``DataLoader`` yields
    the same batches in the same order for any ``num_workers``; a worker derives a batch's
    columns into a slot of shared memory (``/dev/shm``, a few batches' worth per worker) and
    the training process makes its tensors over that memory without a copy; the slot is reused
    once the last of them is dropped. Where no slot is free (the training process keeps its
    batches) or shared memory is short, a batch crosses in its compact form (token ids and
    pieces) and becomes tensors in the training process. Every rank yields the same number of
    batches.

    Resuming: ``state_dict()`` / ``load_state_dict()`` work with torchdata's
    ``StatefulDataLoader`` (same ``num_workers``, or a whole ``StatefulDataLoader.state_dict()``
    taken with any ``num_workers``, then any other), and ``load_state_dict`` also takes a
    :meth:`datasetrt.TokenDataset.state_dict` from any topology.
    """

    def __init__(
        self,
        paths: Sequence[str] | Dataset,
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
        rank: int | None = None,
        world_size: int | None = None,
        ranks_per_node: int | None = None,
        policy: str = "pad",
        ids_dtype: str = "int64",
        state: dict[str, Any] | None = None,
        batch_size: int = 8,
        window_shards: int = 4,
        window_block: int = 256,
        packing_bins: int = 256,
        threads: int = 2,
        prefetch: int = 2,
        validate_cache: bool = False,
        cache_dir: str | os.PathLike | None = None,
        cache_limit: int | str | None = None,
        fetch: str = "whole",
        prefetch_shards: int | None = None,
        read_while_downloading: bool | None = None,
        attempts: int | None = None,
        first_backoff: float | None = None,
        wait_for_room: float | None = None,
        cache_access: str | None = None,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if threads < 0 or prefetch < 1:
            raise ValueError("threads must be at least 0 and prefetch at least 1")
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
        auto_rank, auto_world = rank_and_world_size()
        self.rank = auto_rank if rank is None else rank
        self.world_size = auto_world if world_size is None else world_size
        self.ranks_per_node = (
            ranks_per_node_of(self.world_size) if ranks_per_node is None else ranks_per_node
        )
        self.seed = seed
        self.epoch = epoch if state is None else int(state["epoch"])
        self.batch_size = batch_size
        self.threads = threads
        self.prefetch = prefetch
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
            "shuffle": shuffle,
            "window_shards": window_shards,
            "window_block": window_block,
            "packing_bins": packing_bins,
            "policy": policy,
            "ids_dtype": ids_dtype,
        }
        # Where the next iteration starts: a token state dict, or None for the epoch's start.
        self._resume: dict[str, Any] | None = None if state is None else dict(state)
        self._worker_resume: dict[str, Any] | None = None
        self._progress: dict[str, Any] = self._fresh_progress(None, 1)
        self._plans: dict[Any, _TokenPlan] = {}
        # Names this dataset's workers' stats in the training process (see stats()).
        self._stats_key = uuid.uuid4().hex
        # The batches the Rust threads read when there are no worker processes.
        self._batches: Any = None
        # Fail early, in the constructing process, on bad paths or settings.
        self._plan()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_plans"] = {}
        state["_batches"] = None
        return state

    def stats(self) -> dict[str, Any]:
        """What this dataset's loading has done in the current iteration, as a dict
        (docs/python.md, "Loader stats"). Without worker processes, the Rust loader's own
        stats. With ``num_workers`` workers, in the training process: the sum over the workers
        of their stats (:func:`datasetrt.metrics.merge_stats`; ``workers`` says how many), each
        worker's as its latest batch brought them (each batch carries its worker's counters),
        so the counts are exactly those of the batches received here; ``wait_s`` is then the
        workers' time reading, not the training process's wait. Inside a worker: its own."""
        workers = _WORKER_STATS.get((self._stats_key, self.epoch))
        if workers and torch.utils.data.get_worker_info() is None:
            return merge_stats([workers[w] for w in sorted(workers)])
        if self._batches is not None:
            return self._batches.stats()
        return self._plan().stats()

    def _plan(self) -> _TokenPlan:
        """This process's plan of the epoch from ``_resume``."""
        return self._plan_from(self._resume)

    def _plan_from(self, resume: dict[str, Any] | None) -> _TokenPlan:
        """This process's plan of the epoch from ``resume`` (each process opens the caches
        itself; a forked worker does not reuse its parent's)."""
        key = (os.getpid(), self.epoch, repr(resume))
        plan = self._plans.get(key)
        if plan is None:
            self._plans.clear()
            plan = self._plans[key] = _TokenPlan(
                self.paths,
                seed=self.seed,
                epoch=self.epoch,
                rank=self.rank,
                world_size=self.world_size,
                ranks_per_node=self.ranks_per_node,
                state=resume,
                **self._stream,
                **self._remote,
            )
        return plan

    def set_epoch(self, epoch: int) -> None:
        """Iterate epoch ``epoch`` next (call it before each epoch, on every rank). A resume
        state loaded for another epoch is discarded."""
        if epoch != self.epoch:
            self._resume = None
            self._worker_resume = None
        self.epoch = epoch

    def __len__(self) -> int:
        """Batches this rank yields in the (rest of the) epoch: the same on every rank."""
        return -(-len(self._plan()) // self.batch_size)

    @property
    def padding_fraction(self) -> float:
        """The epoch's tokens of padding over the input tokens of all its rows."""
        return self._plan().padding_fraction

    def _fresh_progress(self, worker_id: int | None, num_workers: int) -> dict[str, Any]:
        return {
            "worker_id": worker_id,
            "num_workers": num_workers,
            "chunks_done": 0,
            "steps_done": 0,
        }

    def __iter__(self) -> Iterator[TokenTensors]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        plan = self._plan()
        steps = len(plan)
        unit = self.batch_size
        chunks = -(-steps // unit)
        progress = self._fresh_progress(worker if info is not None else None, workers)
        resume = self._worker_resume
        if (
            resume is not None
            and resume["num_workers"] == workers
            and resume["worker_id"] == progress["worker_id"]
        ):
            progress["chunks_done"] = resume["chunks_done"]
            progress["steps_done"] = resume["steps_done"]
        self._worker_resume = None
        self._progress = progress
        if info is None:
            # No worker processes: Rust threads read ahead and derive the columns.
            batches = plan.batches(
                unit,
                workers=self.threads,
                prefetch=self.prefetch,
                expand=True,
                first_batch=progress["chunks_done"],
            )
            self._batches = batches
            for batch in batches:
                progress["chunks_done"] += 1
                progress["steps_done"] += len(batch)
                yield TokenTensors(batch)
            self._resume = None
            return
        # This worker's batches: worker, worker + workers, ...; each is expanded here into a
        # slot of shared memory that the training process reads in place (or, with no slot
        # free, crosses compact and is expanded there).
        self._batches = None  # a forked worker's copy of its parent's
        _send_batches_in_slots()
        for chunk in range(worker + progress["chunks_done"] * workers, chunks, workers):
            batch = plan.read(chunk * unit, min((chunk + 1) * unit, steps), expand=False)
            progress["chunks_done"] += 1
            progress["steps_done"] += len(batch)
            yield TokenTensors(batch, ((self._stats_key, self.epoch), worker, plan.stats()))

    def state_dict(self) -> dict[str, Any]:
        """The progress of the iteration under way in this process (a DataLoader worker's own
        share when called in a worker), for ``StatefulDataLoader``."""
        return {
            _TOKEN_STATE_TAG: 1,
            "seed": self.seed,
            "epoch": self.epoch,
            "resume": self._resume,
            "rank": self.rank,
            "world_size": self.world_size,
            "ranks_per_node": self.ranks_per_node,
            "batch_size": self.batch_size,
            **self._progress,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from ``state``: one of this class's ``state_dict()`` results (what
        ``StatefulDataLoader`` passes back to each worker; same ``num_workers``), a whole
        ``StatefulDataLoader.state_dict()`` taken with any ``num_workers``, or a
        :meth:`datasetrt.TokenDataset.state_dict` (from any topology). The next iteration
        continues exactly after the last batch returned."""
        if _TOKEN_STATE_TAG in state:
            self._check(state)
            self._resume = state["resume"]
            self._worker_resume = dict(state)
            return
        if "seq_len" in state and "epoch_len" in state:
            if state["seed"] != self.seed:
                raise ValueError(
                    f"state is for seed {state['seed']}, this dataset has seed {self.seed}"
                )
            self.epoch = state["epoch"]
            self._resume = dict(state)
            self._worker_resume = None
            self._plan()  # checks the state against the epoch
            return
        self._resume = self.epoch_state(state)
        self._worker_resume = None

    def epoch_state(self, loader_state: dict[str, Any]) -> dict[str, Any]:
        """The state of the epoch after the batches a ``StatefulDataLoader`` over this dataset
        has yielded (its ``state_dict()``, taken with any ``num_workers``), as
        :meth:`datasetrt.TokenDataset.state_dict` gives it: it names no rank, worker or batch
        size, so :meth:`load_state_dict` takes it on any topology. Ranks in lockstep get equal
        states; save rank 0's with a checkpoint."""
        found = [s for s in _find_token_states(loader_state)]
        if any(s["worker_id"] is not None for s in found):
            found = [s for s in found if s["worker_id"] is not None]
        if not found:
            raise ValueError("no TokenStreamingDataset state in this state dict")
        first = found[0]
        for s in found:
            self._check(s)
            if (s["resume"], s["num_workers"]) != (first["resume"], first["num_workers"]):
                raise ValueError("inconsistent worker states in this state dict")
        consumed = sum({s["worker_id"]: s["steps_done"] for s in found}.values())
        return self._plan_from(first["resume"]).state_after(consumed)

    def _check(self, state: dict[str, Any]) -> None:
        if state["epoch"] != self.epoch and state["seed"] == self.seed:
            self.epoch = state["epoch"]
        names = ("seed", "epoch", "rank", "world_size", "ranks_per_node", "batch_size")
        mine = tuple(getattr(self, n) for n in names)
        theirs = tuple(state.get(n) for n in names)
        if mine != theirs:
            raise ValueError(
                f"state is for ({', '.join(names)}) = {theirs}, this dataset has {mine}"
            )


def _find_token_states(obj: Any) -> Iterator[dict[str, Any]]:
    """Every TokenStreamingDataset state nested in a StatefulDataLoader state dict."""
    if isinstance(obj, dict):
        if _TOKEN_STATE_TAG in obj:
            yield obj
            return
        for value in obj.values():
            yield from _find_token_states(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _find_token_states(value)
