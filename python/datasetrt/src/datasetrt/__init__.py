"""DatasetRT: immutable caches of training samples (payload bytes plus primitive metadata).

Everything here is implemented in Rust (the ``datasetrt`` crate) and reached through the
native module ``datasetrt._native``; ``datasetrt.torch`` adds a PyTorch ``IterableDataset``.

- :class:`Cache` opens one cache (a directory, or an object-store URL such as
  ``s3://bucket/prefix`` read through a bounded local cache) and serves sample ``i`` in O(1).
- :class:`Dataset` joins caches (paths and URLs mixed), addressed as ``(cache_id, sample_id)``.
- :func:`publish` uploads a finished local cache to an object-store prefix, manifest last.
- :class:`CacheWriter` writes a new cache (a context manager); :class:`TokenWriter` writes a
  token cache (documents of token ids for LLM training, ``docs/format/datasetrt.md``).
- :func:`pack_dir` and :func:`pack_imagefolder` convert a directory tree (one sample per file;
  ImageFolder's ``root/<class>/<file>`` with labels) on several threads, into the same bytes
  for every number of threads; :func:`pack_parquet` does so for Parquet files and Hugging Face
  ``save_to_disk`` directories (one sample per row), :func:`pack_webdataset` for WebDataset tar
  shards (one sample per key) and :func:`pack_jsonl` for JSONL (one sample per line, as
  ``dsrt pack --jsonl`` packs it, byte for byte); :func:`pack_megatron` imports a Megatron-LM
  indexed dataset into a token cache.
- :func:`convert` runs a function of yours over a list of inputs in worker processes, into one
  cache that is the same bytes for every number of workers.
- :class:`Loader` iterates one rank's share of an epoch reproducibly, resumably.
- :class:`TokenDataset` iterates one rank's batches of training rows cut from token caches
  (windows of ``seq_len + 1`` tokens or packed bins, with ``labels``, ``position_ids``,
  ``segment_ids``, ``cu_seqlens`` and ``loss_mask``; ``docs/tokens.md``), mixed by token
  shares, resumable on any topology; :class:`TokenBatch` is one batch.
- :func:`update_manifests` / :meth:`Dataset.update_manifests` migrate v2 manifests to v3.

A process keeps at most :func:`max_open_shards` idle shard files and mappings open (by default
half the open-file soft limit and a quarter of ``vm.max_map_count``, whichever is lower, or
``DSRT_MAX_OPEN_SHARDS``; :func:`set_max_open_shards` changes it), whatever the number of
shards and caches; payloads still referenced keep their mapping alive. Running out of
descriptors or mappings anyway raises :class:`ResourceError`, never a corruption error.

Errors derive from :class:`Error`; each carries ``path`` and ``reason``. Failures on the
object-store side raise :class:`RemoteError` (``url``, ``kind``, ``retryable``) or one of its
subclasses :class:`RemoteIntegrityError`, :class:`ManifestChangedError` and
:class:`CacheLimitError`.
"""

from ._convert import convert
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
    ResourceError,
    Sample,
    SampleIndexError,
    SampleTable,
    TokenBatch,
    TokenStreamError,
    TokenWriter,
    UnknownCacheError,
    WriteError,
    cache_id_for_source,
    max_open_shards,
    open_shard_handles,
    publish,
    set_max_open_shards,
    update_manifests,
)
from ._pack import (
    pack_dir,
    pack_imagefolder,
    pack_jsonl,
    pack_megatron,
    pack_parquet,
    pack_webdataset,
)
from ._schedule import Phase
from ._tokens import TokenDataset

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
    "SampleIndexError",
    "UnknownCacheError",
    "Loader",
    "ManifestChangedError",
    "ManifestUpdateError",
    "ManifestUpdateReport",
    "Phase",
    "RankPlan",
    "RemoteError",
    "RemoteIntegrityError",
    "ResourceError",
    "Sample",
    "SampleTable",
    "TokenBatch",
    "TokenDataset",
    "TokenStreamError",
    "TokenWriter",
    "WriteError",
    "cache_id_for_source",
    "convert",
    "max_open_shards",
    "open_shard_handles",
    "pack_dir",
    "pack_imagefolder",
    "pack_jsonl",
    "pack_megatron",
    "pack_parquet",
    "pack_webdataset",
    "publish",
    "set_max_open_shards",
    "update_manifests",
]


def _reopen_dataset(
    paths,
    validate_cache,
    cache_dir=None,
    cache_limit=None,
    fetch="whole",
    prefetch_shards=None,
    read_while_downloading=None,
    attempts=None,
    first_backoff=None,
    wait_for_room=None,
    cache_access=None,
):
    """Rebuilds a pickled :class:`Dataset` in the receiving process: reopens its caches from
    their paths or URLs, remote ones through the local cache directory ``cache_dir``, with the
    options it was opened with. (A pickle of an older version carries only the first five
    arguments; the others then take :class:`Dataset`'s defaults.)"""
    return Dataset(
        paths,
        validate_cache=validate_cache,
        cache_dir=cache_dir,
        cache_limit=cache_limit,
        fetch=fetch,
        prefetch_shards=prefetch_shards,
        read_while_downloading=read_while_downloading,
        attempts=attempts,
        first_backoff=first_backoff,
        wait_for_room=wait_for_room,
        cache_access=cache_access,
    )
