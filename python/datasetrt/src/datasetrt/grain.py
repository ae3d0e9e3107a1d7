"""DatasetRT for JAX trainers through Grain (``pip install 'datasetrt[grain]'``).

Nothing here imports PyTorch: a JAX process reads DatasetRT caches with Grain alone.

- :class:`DatasetSource` is a Grain ``RandomAccessDataSource`` over a
  :class:`datasetrt.Dataset`: record ``i`` is the ``i``-th sample of the caches taken in
  order (cache by cache, sample by sample), as a dict. Grain's ``IndexSampler`` shuffles and
  shards it; ``grain.DataLoader`` runs it in worker processes (the source pickles as the
  dataset's locations and options, and each worker opens its own files).
- :class:`TokenIterDataset` is a Grain ``IterDataset`` of the token windows (or packed bins) of
  a :class:`datasetrt.TokenDataset`, one dict of NumPy arrays per batch; its iterator's
  checkpoint state *is* DatasetRT's state (``TokenDataset.state_dict``), so a Grain checkpoint
  restores on any topology, as DatasetRT's does.
- :func:`process_shard` is this host's ``(rank, world_size)`` from
  ``jax.process_index()`` / ``jax.process_count()``, the default of :class:`TokenIterDataset`
  when JAX is importable.

``docs/jax.md`` shows a training loop feeding ``jax.make_array_from_process_local_data``.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import grain
import numpy as np
import pyarrow as pa

from ._native import Dataset, TokenBatch
from ._tokens import TokenDataset

__all__ = ["DatasetSource", "TokenIterDataset", "process_shard"]


def process_shard() -> tuple[int, int]:
    """This host's ``(rank, world_size)``: ``jax.process_index()`` and
    ``jax.process_count()``, or ``(0, 1)`` when JAX is not installed."""
    try:
        import jax
    except ImportError:
        return 0, 1
    return int(jax.process_index()), int(jax.process_count())


class DatasetSource:
    """A Grain ``RandomAccessDataSource`` over the samples of a :class:`datasetrt.Dataset`.

    ``DatasetSource(dataset)`` or ``DatasetSource(paths, **dataset_options)`` (the options of
    :class:`datasetrt.Dataset`). Record ``i`` is sample ``i`` of the caches in order; as a dict
    of ``payload`` (``bytes``), ``cache_id``, ``sample_id`` and the sample's metadata columns.
    :meth:`key` maps a record index to its ``(cache_id, sample_id)``.
    """

    def __init__(self, dataset: Dataset | Sequence[str | os.PathLike[str]], **options: Any) -> None:
        if isinstance(dataset, Dataset):
            if options:
                raise TypeError("options are taken from the Dataset given; pass paths to set them")
            self._dataset = dataset
        else:
            if isinstance(dataset, (str, os.PathLike)):
                raise TypeError("DatasetSource takes a Dataset or a list of paths, not one path")
            self._dataset = Dataset([os.fspath(p) for p in dataset], **options)
        self._cache_ids = list(self._dataset.cache_ids)
        # starts[k]: the record index of cache k's first sample; starts[-1]: the length.
        self._starts = [0]
        for cache in self._dataset.caches:
            self._starts.append(self._starts[-1] + len(cache))

    @property
    def dataset(self) -> Dataset:
        """The :class:`datasetrt.Dataset` read."""
        return self._dataset

    def __len__(self) -> int:
        return self._starts[-1]

    def key(self, index: int) -> tuple[int, int]:
        """The ``(cache_id, sample_id)`` of record ``index`` (negative counts from the end)."""
        length = len(self)
        if not -length <= index < length:
            raise IndexError(f"record {index} is out of range for {length} records")
        if index < 0:
            index += length
        cache = bisect.bisect_right(self._starts, index) - 1
        return self._cache_ids[cache], index - self._starts[cache]

    def __getitem__(self, index: int) -> dict[str, Any]:
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"a record index is an int, not {type(index).__name__}")
        key = self.key(int(index))
        sample = self._dataset[key]
        record: dict[str, Any] = dict(sample.metadata)
        # bytes, not a view of a mapping: Grain pickles records between processes.
        record["payload"] = bytes(sample.payload)
        record["cache_id"], record["sample_id"] = key
        return record

    def __repr__(self) -> str:
        return f"DatasetSource({len(self._cache_ids)} caches, {len(self)} samples)"


def _batch_arrays(batch: TokenBatch) -> dict[str, np.ndarray]:
    """A batch's columns as NumPy arrays over its Arrow buffers (no copy)."""
    record = pa.record_batch(batch.arrow())
    rows, seq_len = len(batch), batch.seq_len
    arrays = {
        name: record.column(name).values.to_numpy().reshape(rows, seq_len)
        for name in ("input_ids", "labels", "position_ids", "segment_ids")
    }
    arrays["loss_mask"] = (
        record.column("loss_mask").values.to_numpy().view(np.bool_).reshape(rows, seq_len)
    )
    # Every row's sequence starts and, past the last row's, the flattened batch's end.
    arrays["cu_seqlens"] = record.column("cu_seqlens").values.to_numpy()
    arrays["padding"] = record.column("padding").to_numpy(zero_copy_only=False)
    arrays["steps"] = record.column("step").to_numpy()
    return arrays


class TokenIterDataset(grain.IterDataset):
    """The batches of a :class:`datasetrt.TokenDataset` as a Grain ``IterDataset``.

    Takes the arguments of :class:`datasetrt.TokenDataset` (``rank`` and ``world_size``
    default to :func:`process_shard`). Each element is a dict of NumPy arrays, one per column
    of ``TokenBatch.arrow()`` over its buffers: ``input_ids``, ``labels`` (``-100`` where the
    loss is masked), ``position_ids`` (int64), ``segment_ids`` (int32) and ``loss_mask``
    (bool) as ``(batch, seq_len)`` arrays; ``cu_seqlens`` (int32, over the flattened batch, as
    flash-attention's varlen kernels take it), ``padding`` (bool per row) and ``steps``.
    The iterator's ``get_state()`` is the token stream's
    ``state_dict()`` and ``set_state`` resumes from one, on any topology.
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]] | Dataset,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if rank is None or world_size is None:
            host_rank, host_count = process_shard()
            rank = host_rank if rank is None else rank
            world_size = host_count if world_size is None else world_size
        self._paths = paths
        self._options = dict(options, rank=rank, world_size=world_size)

    def token_dataset(self, state: Mapping[str, Any] | None = None) -> TokenDataset:
        """A new :class:`datasetrt.TokenDataset` of these settings, resumed from ``state``."""
        return TokenDataset(self._paths, **dict(self._options, state=state))

    def __iter__(self) -> _TokenBatchIterator:
        return _TokenBatchIterator(self)

    def __str__(self) -> str:
        return f"TokenIterDataset(seq_len={self._options.get('seq_len')})"


class _TokenBatchIterator(grain.DatasetIterator):
    def __init__(self, source: TokenIterDataset, state: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self._source = source
        self._restart(state)

    def _restart(self, state: Mapping[str, Any] | None) -> None:
        self._tokens = self._source.token_dataset(state)
        self._batches: Iterator[TokenBatch] = iter(self._tokens)

    def __next__(self) -> dict[str, np.ndarray]:
        return _batch_arrays(next(self._batches))

    def get_state(self) -> dict[str, Any]:
        return self._tokens.state_dict()

    def set_state(self, state: dict[str, Any]) -> None:
        self._restart(state)
