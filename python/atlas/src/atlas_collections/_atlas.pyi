"""Type stubs of the native module ``atlas_collections._atlas`` (crates/atlas-python).

Values cross as plain Python types: arrays as ``(tag, data)`` where ``data`` is a NumPy array
for fixed-width types and ``(flat list, shape)`` for strings and bytes; attributes, statistics
and fill values as ``(tag, value)``. ``atlas_collections`` wraps all of it.

Checked against the built module by mypy's stubtest (`cargo xtask lint-python`, and the Python
stage of `cargo xtask test`).
"""

from collections.abc import Sequence
from types import ModuleType
from typing import Any, final

from typing_extensions import Self

__all__ = [
    "AtlasError",
    "NotACollectionError",
    "UnsupportedVersionError",
    "CorruptCollectionError",
    "StorageError",
    "DatasetNotFoundError",
    "ArrayNotFoundError",
    "SelectionError",
    "QueryError",
    "InvalidNameError",
    "DuplicateNameError",
    "LayoutError",
    "UnsupportedDTypeError",
    "CollectionExistsError",
    "WriteError",
    "ImportRefusedError",
    "AtlasPanicError",
    "Collection",
    "Writer",
    "check_name",
    "compact",
    "FORMAT_VERSION",
]

FORMAT_VERSION: int

_Tagged = tuple[str, Any]

def check_name(kind: str, name: str) -> None: ...
def compact(location: str, options: Sequence[tuple[str, str]] | None = None) -> dict[str, Any]: ...

# Only in wheels built with the `test-hooks` feature (`cargo xtask test` builds them):
# `_testing.panic_for_tests(message)` panics on the GIL-free call path, and
# `_testing.error_examples()` converts one Rust error of every variant.
_testing: ModuleType

# The exception classes, re-exported by `atlas_collections.errors` (where they say they
# belong). `kind` is set on every error converted from Rust and is a class default of the
# lookup errors; `retryable` defaults to False.
class AtlasError(Exception):
    message: str
    path: str | None
    reason: str
    kind: str
    retryable: bool
    def __init__(
        self, message: str, *, path: str | None = None, reason: str | None = None, **fields: Any
    ) -> None: ...

class NotACollectionError(AtlasError): ...

class UnsupportedVersionError(AtlasError):
    found: int
    expected: int

class CorruptCollectionError(AtlasError):
    field: str

class StorageError(AtlasError): ...

class DatasetNotFoundError(AtlasError, KeyError):
    name: str

class ArrayNotFoundError(AtlasError, KeyError):
    dataset: str
    name: str

class SelectionError(AtlasError, IndexError): ...

class QueryError(AtlasError, ValueError):
    field: str

class InvalidNameError(AtlasError, ValueError):
    name: str

class DuplicateNameError(AtlasError, ValueError):
    name: str

class LayoutError(AtlasError, ValueError): ...
class UnsupportedDTypeError(AtlasError, TypeError): ...
class CollectionExistsError(AtlasError): ...
class WriteError(AtlasError): ...

class ImportRefusedError(AtlasError, ValueError):
    file: str
    variable: str | None

class AtlasPanicError(AtlasError): ...

@final
class Collection:
    @staticmethod
    def open(
        location: str,
        options: Sequence[tuple[str, str]] | None = None,
        version: int | None = None,
        tag: str | None = None,
    ) -> Collection: ...
    @property
    def location(self) -> str: ...
    @property
    def version(self) -> int | None: ...
    def log(self) -> list[tuple[int, int, int, str, str, int]]: ...
    def names(self) -> list[str]: ...
    def dataset_count(self) -> int: ...
    def contains(self, name: str) -> bool: ...
    def variables(self) -> list[str]: ...
    def schema(self, name: str) -> tuple[list[tuple[str, str, list[str]]], list[str]]: ...
    def layout(
        self, name: str, array: str
    ) -> tuple[str, list[int], list[int], list[str], _Tagged | None]: ...
    def read(
        self, name: str, array: str, start: Sequence[int], shape: Sequence[int]
    ) -> _Tagged: ...
    def read_many(self, names: Sequence[str], array: str) -> list[_Tagged]: ...
    def read_run(self, array: str, names: Sequence[str]) -> tuple[_Tagged, list[list[int]]]: ...
    def run_layouts(
        self, array: str, names: Sequence[str]
    ) -> list[tuple[list[int], list[str], list[tuple[str, _Tagged]]]]: ...
    def attributes(self, name: str) -> list[tuple[str, _Tagged]]: ...
    def array_attributes(self, name: str, array: str) -> list[tuple[str, _Tagged]]: ...
    def attributes_by_dataset(self, key: str) -> list[tuple[str, _Tagged]]: ...
    def stats(self, array: str) -> dict[str, Any]: ...
    def stats_by_dataset(self, array: str) -> list[dict[str, Any]]: ...
    def dataset_stats(self, name: str, array: str) -> dict[str, Any]: ...
    def select(
        self,
        attrs: Sequence[tuple[str, Sequence[_Tagged]]],
        stats: Sequence[tuple[str, str, str, _Tagged]],
    ) -> list[str]: ...
    def delete(self, names: Sequence[str]) -> dict[str, int]: ...
    def request_count(self) -> int: ...
    def requests(self) -> list[tuple[str, str]]: ...
    def reset_requests(self) -> None: ...
    def deletes_with_local_lock(self) -> bool: ...

@final
class Writer:
    def __new__(
        cls,
        location: str,
        *,
        mode: str = "create",
        codec: str = "zstd",
        zstd_level: int = 3,
        block_target_size: int | None = None,
        created_unix_ms: int = 0,
        replace: bool = False,
    ) -> Self: ...
    @property
    def location(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def write_dataset(
        self, name: str, arrays: Sequence[tuple[Any, ...]], attrs: Sequence[tuple[str, _Tagged]]
    ) -> int: ...
    def dataset_count(self) -> int: ...
    def finish(self) -> dict[str, Any]: ...
    def abort(self) -> None: ...
