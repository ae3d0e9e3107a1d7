"""Type stubs of the native module (crates/dsrt-python).

Checked against the built module by mypy's stubtest (`cargo xtask lint-python`, and the Python
stage of `cargo xtask test`): every name, every signature the module exposes, and which classes
can be subclassed. The native classes are made with ``__new__`` (PyO3), so the stubs declare
their constructors there.
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
from os import PathLike
from types import ModuleType
from typing import Any, final

import pyarrow
from typing_extensions import Self

__all__ = [
    "Error",
    "CacheError",
    "ResourceError",
    "IncompleteCacheError",
    "ChecksumError",
    "CorruptCacheError",
    "DatasetError",
    "TokenStreamError",
    "ManifestUpdateError",
    "WriteError",
    "RemoteError",
    "RemoteIntegrityError",
    "ManifestChangedError",
    "CacheLimitError",
    "InternalError",
    "UnknownCacheError",
    "SampleIndexError",
    "Cache",
    "Sample",
    "Dataset",
    "SampleTable",
    "ManifestUpdateReport",
    "CacheWriter",
    "TokenWriter",
    "_TokenPlan",
    "_TokenBatches",
    "TokenBatch",
    "_ColumnView",
    "_token_batch_from_arrow",
    "_token_batch_from_slot",
    "_send_batches_in_slots",
    "Loader",
    "RankPlan",
    "update_manifests",
    "_merge_parts",
    "_pack",
    "_cache_schema",
    "_remove_unpublished",
    "cache_id_for_source",
    "publish",
    "_check_publish_target",
    "_remove_remote_prefix",
    "_parse_size",
    "ArrowBatch",
    "_arrow_batch_from_ipc",
    "_located_payloads",
    "PayloadViews",
    "ShardMapping",
    "_shard_view",
    "_clear_shard_views",
    "max_open_shards",
    "set_max_open_shards",
    "open_shard_handles",
    "DEFAULT_MAX_SHARD_BYTES",
    "REMOTE_DEFAULTS",
]

_Path = str | PathLike[str]
# A cache directory (str, os.PathLike, file:// URL) or an object-store URL (s3://..., and so on).
_Location = str | PathLike[str]
# Bytes, or a size string: "20GB", "512MiB", "1.5 TiB".
_Size = int | str
_Key = tuple[int, int]
_SchemaSpec = Mapping[str, Any] | pyarrow.Schema

DEFAULT_MAX_SHARD_BYTES: int
# The defaults of Cache's and Dataset's remote options (prefetch_shards, read_while_downloading,
# attempts, first_backoff, wait_for_room), from the Rust RemoteOptions.
REMOTE_DEFAULTS: dict[str, Any]

class Error(Exception):
    path: str | None
    reason: str

class CacheError(Error):
    kind: str
    file: str | None
    sample: int | None

class ResourceError(CacheError):
    resource: str
    max_open_shards: int
    errno: int | None

class IncompleteCacheError(CacheError): ...
class ChecksumError(CacheError): ...
class CorruptCacheError(CacheError): ...

class DatasetError(Error):
    kind: str

class TokenStreamError(DatasetError):
    sample_id: int | None

class ManifestUpdateError(Error):
    kind: str
    failed: str | None
    done: list[dict[str, Any]]
    causes: dict[str, str]

class WriteError(Error):
    kind: str
    # What a conversion refused (None for the writer's own errors): the input (a file, a line,
    # a tar), the table column, the WebDataset sample's key.
    input: str | None
    column: str | None
    key: str | None

class RemoteError(Error):
    url: str | None
    kind: str
    retryable: bool
    # Set when a read failed: the shard file (e.g. "shards/000001.bin") and the cache's URL.
    file: str | None
    cache: str | None

class RemoteIntegrityError(RemoteError): ...
class ManifestChangedError(RemoteError): ...

class CacheLimitError(RemoteError):
    shard: str
    needed: int
    limit: int

class InternalError(Error): ...

class UnknownCacheError(DatasetError, KeyError):
    cache_id: int

class SampleIndexError(DatasetError, IndexError): ...

@final
class Sample:
    @property
    def sample_id(self) -> int: ...
    @property
    def cache_id(self) -> int | None: ...
    @property
    def key(self) -> _Key | None: ...
    # memoryview (zero-copy, uncompressed caches) or bytes (decoded LZ4 payloads).
    @property
    def payload(self) -> bytes | memoryview: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def step(self) -> int | None: ...
    @property
    def global_position(self) -> int | None: ...
    @property
    def padding(self) -> bool: ...

@final
class Cache:
    def __new__(
        cls,
        path: _Location,
        *,
        validate_cache: bool = False,
        cache_dir: _Path | None = None,
        cache_limit: _Size | None = None,
        fetch: str = "whole",
        # None, as the runtime signature has it, takes the default that its text signature shows.
        prefetch_shards: int | None = 8,
        read_while_downloading: bool | None = True,
        attempts: int | None = 5,
        first_backoff: float | None = 0.1,
        wait_for_room: float | None = 600.0,
        cache_access: str | None = "private",
    ) -> Self: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> Sample: ...
    def read_many(self, indices: Sequence[int]) -> list[Sample]: ...
    def shard_runs(self) -> list[tuple[int, int, int]]: ...
    def read_arrow(self, start: int, stop: int) -> ArrowBatch: ...
    def metadata(self) -> pyarrow.Table: ...
    @property
    def manifest(self) -> dict[str, Any]: ...
    @property
    def schema(self) -> pyarrow.Schema: ...
    @property
    def format_version(self) -> int: ...
    @property
    def path(self) -> str: ...
    @property
    def is_remote(self) -> bool: ...
    @property
    def local_path(self) -> str: ...
    @property
    def cache_id(self) -> int | None: ...

@final
class SampleTable:
    def __new__(cls, keys: Sequence[_Key]) -> Self: ...
    @staticmethod
    def load(path: _Path) -> SampleTable: ...
    def save(self, path: _Path) -> None: ...
    def keys(self) -> list[_Key]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> _Key: ...
    def __iter__(self) -> Iterator[_Key]: ...

@final
class ManifestUpdateReport:
    @property
    def entries(self) -> list[dict[str, Any]]: ...
    @property
    def updated(self) -> list[str]: ...
    @property
    def unchanged(self) -> list[str]: ...
    @property
    def durability_unknown(self) -> list[str]: ...

@final
class Dataset:
    def __new__(
        cls,
        paths: Sequence[_Location],
        *,
        validate_cache: bool = False,
        cache_dir: _Path | None = None,
        cache_limit: _Size | None = None,
        fetch: str = "whole",
        # None, as the runtime signature has it, takes the default that its text signature shows.
        prefetch_shards: int | None = 8,
        read_while_downloading: bool | None = True,
        attempts: int | None = 5,
        first_backoff: float | None = 0.1,
        wait_for_room: float | None = 600.0,
        cache_access: str | None = "private",
    ) -> Self: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: _Key, /) -> Sample: ...
    def read_many(self, keys: Sequence[_Key]) -> list[Sample]: ...
    @property
    def caches(self) -> list[Cache]: ...
    @property
    def cache_ids(self) -> list[int]: ...
    @property
    def paths(self) -> list[str]: ...
    @property
    def validate_cache(self) -> bool: ...
    @property
    def cache_dir(self) -> str | None: ...
    @property
    def cache_limit(self) -> int | None: ...
    @property
    def fetch(self) -> str: ...
    @property
    def prefetch_shards(self) -> int: ...
    @property
    def read_while_downloading(self) -> bool: ...
    @property
    def attempts(self) -> int: ...
    @property
    def first_backoff(self) -> float: ...
    @property
    def wait_for_room(self) -> float: ...
    @property
    def cache_access(self) -> str: ...
    def cache(self, cache_id: int) -> Cache: ...
    # The predicate's result is taken for its truth value.
    def select(
        self, predicate: Callable[..., object] | None = None, **equals: Any
    ) -> SampleTable: ...
    def update_manifests(self, version: int = 3) -> ManifestUpdateReport: ...

@final
class CacheWriter:
    def __new__(
        cls,
        path: _Path,
        *,
        source: str,
        schema: _SchemaSpec,
        compression: str = "none",
        max_shard_bytes: int = ...,
        version: int = 3,
        io_threads: bool = True,
    ) -> Self: ...
    def add(
        self, payload: Any, metadata: Mapping[str, Any] | None = None, **fields: Any
    ) -> int: ...
    def finish(self) -> dict[str, Any]: ...
    def abort(self, *, remove: bool = False) -> None: ...
    @property
    def samples(self) -> int: ...
    @property
    def path(self) -> str: ...
    def __enter__(self) -> Self: ...
    # The runtime names the unused arguments `_exc` and `_tb`.
    def __exit__(self, exc_type: Any = None, _exc: Any = None, _tb: Any = None) -> bool: ...

@final
class TokenWriter:
    def __new__(
        cls,
        path: _Path,
        *,
        source: str,
        token_dtype: Any = None,
        vocab_size: int | None = None,
        bos_id: int | None = None,
        eos_id: int | None = None,
        pad_id: int | None = None,
        tokenizer: str | None = None,
        schema: _SchemaSpec | None = None,
        compression: str = "none",
        max_shard_bytes: int = ...,
        io_threads: bool = True,
    ) -> Self: ...
    def add(self, tokens: Any, metadata: Mapping[str, Any] | None = None, **fields: Any) -> int: ...
    def finish(self) -> dict[str, Any]: ...
    def abort(self, *, remove: bool = False) -> None: ...
    @property
    def documents(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def token_dtype(self) -> str: ...
    @property
    def path(self) -> str: ...
    def __enter__(self) -> Self: ...
    # The runtime names the unused arguments `_exc` and `_tb`.
    def __exit__(self, exc_type: Any = None, _exc: Any = None, _tb: Any = None) -> bool: ...

@final
class Loader:
    def __new__(
        cls,
        dataset: Dataset,
        *,
        seed: int = 0,
        epoch: int = 0,
        weights: Sequence[float] | None = None,
        samples_per_epoch: int | None = None,
        schedule: Sequence[tuple[int, Sequence[float]]] | None = None,
        replacement: bool = False,
        shuffle: str = "local",
        window_shards: int = 4,
        rank: int = 0,
        world_size: int = 1,
        ranks_per_node: int = 1,
        policy: str = "pad",
        workers: int = 0,
        prefetch: int = 512,
        prefetch_bytes: int | str | None = None,
    ) -> Self: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> Sample: ...
    def __len__(self) -> int: ...
    def next_batch(self, n: int) -> list[Sample]: ...
    @property
    def epoch_len(self) -> int: ...
    @property
    def mixture_change(self) -> dict[str, Any] | None: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...
    def set_epoch(self, epoch: int) -> None: ...
    def stats(self) -> dict[str, Any]: ...

@final
class RankPlan:
    def __new__(
        cls,
        dataset: Dataset,
        *,
        seed: int = 0,
        epoch: int = 0,
        weights: Sequence[float] | None = None,
        samples_per_epoch: int | None = None,
        schedule: Sequence[tuple[int, Sequence[float]]] | None = None,
        replacement: bool = False,
        shuffle: str = "local",
        window_shards: int = 4,
        rank: int = 0,
        world_size: int = 1,
        ranks_per_node: int = 1,
        policy: str = "pad",
        state: Mapping[str, Any] | None = None,
    ) -> Self: ...
    def __len__(self) -> int: ...
    @property
    def epoch_len(self) -> int: ...
    @property
    def mixture_change(self) -> dict[str, Any] | None: ...
    def state_after(self, steps: int) -> dict[str, Any]: ...
    def keys(self, steps: Sequence[int]) -> list[_Key]: ...
    def read(self, steps: Sequence[int]) -> list[Sample]: ...
    def read_columnar(self, steps: range | Sequence[int]) -> ArrowBatch: ...
    def read_located(self, steps: range | Sequence[int]) -> ArrowBatch: ...
    def will_need(self, steps: range | Sequence[int]) -> None: ...
    def hint_ahead(self, start: int, stop: int) -> None: ...
    def stats(self) -> dict[str, Any]: ...

@final
class _TokenPlan:
    def __new__(
        cls,
        paths: Sequence[_Path],
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
        window_shards: int = 4,
        window_block: int = 256,
        packing_bins: int = 256,
        rank: int = 0,
        world_size: int = 1,
        ranks_per_node: int = 1,
        policy: str = "pad",
        ids_dtype: str = "int64",
        state: Mapping[str, Any] | None = None,
        validate_cache: bool = False,
        cache_dir: _Path | None = None,
        cache_limit: int | str | None = None,
        fetch: str = "whole",
        prefetch_shards: int | None = None,
        read_while_downloading: bool | None = None,
        attempts: int | None = None,
        first_backoff: float | None = None,
        wait_for_room: float | None = None,
        cache_access: str | None = None,
    ) -> Self: ...
    def __len__(self) -> int: ...
    @property
    def rows(self) -> int: ...
    @property
    def epoch_tokens(self) -> int: ...
    @property
    def padding_fraction(self) -> float: ...
    @property
    def source_tokens(self) -> list[int]: ...
    @property
    def boundary_tokens(self) -> list[tuple[int | None, int | None]]: ...
    def report(self) -> dict[str, Any]: ...
    def state_after(self, steps: int) -> dict[str, Any]: ...
    def read(self, start: int, stop: int, expand: bool = True) -> TokenBatch: ...
    def batches(
        self,
        batch_size: int,
        *,
        workers: int = 2,
        prefetch: int = 2,
        expand: bool = True,
        first_batch: int = 0,
    ) -> _TokenBatches: ...
    def stats(self) -> dict[str, Any]: ...

@final
class _TokenBatches:
    def __iter__(self) -> Self: ...
    def __next__(self) -> TokenBatch: ...
    def stats(self) -> dict[str, Any]: ...
    def __len__(self) -> int: ...

@final
class TokenBatch:
    def __len__(self) -> int: ...
    @property
    def seq_len(self) -> int: ...
    @property
    def pad_id(self) -> int: ...
    @property
    def max_seqlen(self) -> int: ...
    def arrow(self) -> ArrowBatch: ...
    def compact(self) -> ArrowBatch: ...
    def _tensor_columns(self) -> tuple[list[_ColumnView], int]: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

@final
class _ColumnView:
    @property
    def __array_interface__(self) -> dict[str, Any]: ...

def _token_batch_from_arrow(compact: ArrowBatch, seq_len: int, pad_id: int) -> TokenBatch: ...
def _token_batch_from_slot(path: str | PathLike[str], slot: int, generation: int) -> TokenBatch: ...
def _send_batches_in_slots() -> None: ...
def update_manifests(paths: Sequence[_Path], version: int = 3) -> ManifestUpdateReport: ...
def _merge_parts(
    out: _Path,
    parts: Sequence[tuple[_Path, int]],
    *,
    source: str,
    schema: _SchemaSpec,
    version: int = 3,
) -> dict[str, Any]: ...
def _remove_unpublished(location: _Path, created: bool) -> None: ...
def _cache_schema(
    schema: bytes, payload_column: str, metadata_columns: Sequence[str] | None = None
) -> list[tuple[str, str]]: ...
def _pack(
    kind: str, inputs: _Path | Sequence[_Path], out: _Path, **options: Any
) -> dict[str, Any]: ...
def cache_id_for_source(source: str) -> int: ...
def publish(local_dir: _Path, url: str, *, overwrite_partial: bool = False) -> dict[str, Any]: ...
def _check_publish_target(url: str) -> None: ...
def _remove_remote_prefix(url: str) -> None: ...
def _parse_size(text: str) -> int: ...

# Benchmark baseline, not API: returns the seconds the Rust writer took.
# Only in wheels built with the `test-hooks` feature (`cargo xtask test` builds them):
# `_testing._rust_write_benchmark(path, source, payloads, lengths, labels, compression)`, the
# Rust-loop write baseline of benchmarks/bench_read.py.
_testing: ModuleType

# An Arrow record batch owned by Rust; `pyarrow.record_batch(batch)` reads it without a copy
# (Arrow PyCapsule interface). Pickles as an Arrow IPC stream.
@final
class ArrowBatch:
    def __arrow_c_array__(
        self, requested_schema: object | None = None
    ) -> tuple[object, object]: ...
    def __arrow_c_schema__(self) -> object: ...
    def __len__(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[bytes]]: ...
    def to_pyarrow(self) -> pyarrow.RecordBatch: ...

def _arrow_batch_from_ipc(data: bytes) -> ArrowBatch: ...

# The payloads of one `RankPlan.read_located` batch: indexed (negative indices too) and
# iterated, not sliced.
@final
class PayloadViews:
    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> memoryview: ...

# Keeps a shard mapping alive (the base of the buffer `_shard_view` returns); not constructible.
@final
class ShardMapping:
    def __len__(self) -> int: ...

def _located_payloads(
    batch: ArrowBatch, identities: Sequence[tuple[int, int, int, int]] | None = None
) -> PayloadViews: ...
def _shard_view(path: _Path, identity: tuple[int, int, int, int] | None = None) -> memoryview: ...
def _clear_shard_views() -> None: ...
def max_open_shards() -> int: ...
def set_max_open_shards(n: int) -> None: ...
def open_shard_handles() -> int: ...
