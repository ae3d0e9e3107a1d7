"""Exceptions, mirroring the Rust error types (``AtlasError``, ``WriteError``, ``NameError``).

Every exception carries ``path`` (the collection or object at fault) and ``reason`` (what is
wrong, without the path), plus the fields named in each class. All derive from
:class:`AtlasError`; the lookup and argument errors also derive from the matching built-in
(``KeyError``, ``IndexError``, ``ValueError``, ``TypeError``) so ordinary handlers catch them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AtlasError",
    "NotACollectionError",
    "UnsupportedVersionError",
    "CorruptCollectionError",
    "StorageError",
    "DatasetNotFoundError",
    "ArrayNotFoundError",
    "SelectionError",
    "InvalidNameError",
    "DuplicateNameError",
    "LayoutError",
    "UnsupportedDTypeError",
    "CollectionExistsError",
    "WriteError",
    "ImportRefusedError",
    "AtlasPanicError",
]


class AtlasError(Exception):
    """Base class of every error this package raises."""

    path: str | None
    reason: str

    def __init__(
        self, message: str, *, path: str | None = None, reason: str | None = None, **fields: Any
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.reason = message if reason is None else reason
        for key, value in fields.items():
            setattr(self, key, value)

    def __str__(self) -> str:  # KeyError would print repr(message)
        return self.message


class NotACollectionError(AtlasError):
    """Nothing at the location is an Atlas container (Rust: ``NotAnAtlasCollection``)."""


class UnsupportedVersionError(AtlasError):
    """An Atlas container of another format version (``found``, ``expected``)."""

    found: int
    expected: int


class CorruptCollectionError(AtlasError):
    """The container, a segment or the mask is damaged; ``field`` names where."""

    field: str


class StorageError(AtlasError):
    """The store or the transport failed. ``retryable`` says whether the same call may succeed
    if made again (Rust: ``AtlasError::is_retryable``)."""

    retryable: bool = False


class DatasetNotFoundError(AtlasError, KeyError):
    """No live dataset of this ``name``."""

    name: str


class ArrayNotFoundError(AtlasError, KeyError):
    """The ``dataset`` declares no array ``name``."""

    dataset: str
    name: str


class SelectionError(AtlasError, IndexError):
    """An index or selection that does not fit the array."""


class InvalidNameError(AtlasError, ValueError):
    """A name broke the naming rule (non-empty, no leading ``_``); ``kind`` says what it names."""

    kind: str
    name: str


class DuplicateNameError(AtlasError, ValueError):
    """A dataset name, an array name of one dataset, or an attribute key was given twice."""

    kind: str
    name: str


class LayoutError(AtlasError, ValueError):
    """An array's layout (chunks, dimension names) does not fit its shape."""


class UnsupportedDTypeError(AtlasError, TypeError):
    """A value of a type the format cannot hold (see the dtype mapping in the docs)."""


class CollectionExistsError(AtlasError):
    """The writer's location already holds a ``data.atlas``: collections are write-once."""


class WriteError(AtlasError):
    """A write failed (array-format, the footer, or a writer stopped by an earlier failure)."""


class ImportRefusedError(AtlasError, ValueError):
    """A NetCDF import refused a ``file`` (and ``variable``, when one is at fault)."""

    file: str
    variable: str | None


class AtlasPanicError(AtlasError):
    """A bug: the Rust side panicked. The call had no effect that a retry could rely on."""
