"""DatasetRT: immutable caches of training samples (payload bytes plus primitive metadata).

Everything here is implemented in Rust (the ``datasetrt`` crate) and reached through the
native module ``datasetrt._native``; ``datasetrt.torch`` adds a PyTorch ``IterableDataset``.

- :class:`Cache` opens one cache (a directory, or an object-store URL such as
  ``s3://bucket/prefix`` read through a bounded local cache) and serves sample ``i`` in O(1).
- :class:`Dataset` joins caches (paths and URLs mixed), addressed as ``(cache_id, sample_id)``.
- :func:`publish` uploads a finished local cache to an object-store prefix, manifest last.
- :class:`CacheWriter` writes a new cache (a context manager).
- :class:`Loader` iterates one rank's share of an epoch reproducibly, resumably.
- :func:`update_manifests` / :meth:`Dataset.update_manifests` migrate v2 manifests to v3.

Errors derive from :class:`Error`; each carries ``path`` and ``reason``. Failures on the
object-store side raise :class:`RemoteError` (``url``, ``kind``, ``retryable``) or one of its
subclasses :class:`RemoteIntegrityError`, :class:`ManifestChangedError` and
:class:`CacheLimitError`.
"""

from ._native import (
    DEFAULT_MAX_SHARD_BYTES,
    Cache,
    CacheError,
    CacheLimitError,
    CacheWriter,
    ChecksumError,
    CorruptCacheError,
    Dataset,
    DatasetError,
    Error,
    IncompleteCacheError,
    InternalError,
    Loader,
    ManifestChangedError,
    ManifestUpdateError,
    ManifestUpdateReport,
    RankPlan,
    RemoteError,
    RemoteIntegrityError,
    Sample,
    SampleTable,
    WriteError,
    cache_id_for_source,
    publish,
    update_manifests,
)

__all__ = [
    "DEFAULT_MAX_SHARD_BYTES",
    "Cache",
    "CacheError",
    "CacheLimitError",
    "CacheWriter",
    "ChecksumError",
    "CorruptCacheError",
    "Dataset",
    "DatasetError",
    "Error",
    "IncompleteCacheError",
    "InternalError",
    "Loader",
    "ManifestChangedError",
    "ManifestUpdateError",
    "ManifestUpdateReport",
    "RankPlan",
    "RemoteError",
    "RemoteIntegrityError",
    "Sample",
    "SampleTable",
    "WriteError",
    "cache_id_for_source",
    "publish",
    "update_manifests",
]


def _reopen_dataset(paths, validate_cache, cache_dir=None, cache_limit=None, fetch="whole"):
    """Rebuilds a pickled :class:`Dataset` in the receiving process: reopens its caches from
    their paths or URLs, remote ones through the local cache directory ``cache_dir``."""
    return Dataset(
        paths,
        validate_cache=validate_cache,
        cache_dir=cache_dir,
        cache_limit=cache_limit,
        fetch=fetch,
    )
