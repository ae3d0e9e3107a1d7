"""DatasetRT: immutable caches of training samples (payload bytes plus primitive metadata).

Everything here is implemented in Rust (the ``datasetrt`` crate) and reached through the
native module ``datasetrt._native``; ``datasetrt.torch`` adds a PyTorch ``IterableDataset``.

- :class:`Cache` opens one cache directory and serves sample ``i`` in O(1).
- :class:`Dataset` joins caches, addressed as ``(cache_id, sample_id)``.
- :class:`CacheWriter` writes a new cache (a context manager).
- :class:`Loader` iterates one rank's share of an epoch reproducibly, resumably.
- :func:`update_manifests` / :meth:`Dataset.update_manifests` migrate v2 manifests to v3.

Errors derive from :class:`Error`; each carries ``path`` and ``reason``.
"""

from ._native import (
    DEFAULT_MAX_SHARD_BYTES,
    Cache,
    CacheError,
    CacheWriter,
    ChecksumError,
    CorruptCacheError,
    Dataset,
    DatasetError,
    Error,
    IncompleteCacheError,
    InternalError,
    Loader,
    ManifestUpdateError,
    ManifestUpdateReport,
    RankPlan,
    Sample,
    SampleTable,
    WriteError,
    cache_id_for_source,
    update_manifests,
)

__all__ = [
    "DEFAULT_MAX_SHARD_BYTES",
    "Cache",
    "CacheError",
    "CacheWriter",
    "ChecksumError",
    "CorruptCacheError",
    "Dataset",
    "DatasetError",
    "Error",
    "IncompleteCacheError",
    "InternalError",
    "Loader",
    "ManifestUpdateError",
    "ManifestUpdateReport",
    "RankPlan",
    "Sample",
    "SampleTable",
    "WriteError",
    "cache_id_for_source",
    "update_manifests",
]


def _reopen_dataset(paths, validate_cache):
    """Rebuilds a pickled :class:`Dataset` in the receiving process (reopens its caches)."""
    return Dataset(paths, validate_cache=validate_cache)
