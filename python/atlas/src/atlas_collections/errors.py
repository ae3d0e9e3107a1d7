"""Exceptions, mirroring the Rust error types (``AtlasError``, ``WriteError``, ``NameError``).

Every exception carries ``path`` (the collection or object at fault) and ``reason`` (what is
wrong, without the path), plus the fields named in each class. One converted from a Rust error
also carries ``kind``, the variant's name (``"dataset_not_found"``, ``"store"``; for
:class:`InvalidNameError` and :class:`DuplicateNameError`, what the name names), and every one
``retryable``, whether the same call may succeed if made again (False unless the store or the
transport failed). All derive from :class:`AtlasError`; the lookup and argument errors also
derive from the matching built-in (``KeyError``, ``IndexError``, ``ValueError``, ``TypeError``)
so ordinary handlers catch them.

The classes are made by the native module (``atlas_collections._atlas``), which raises them, and
re-exported here, where they say they belong. Python code raises them the same way:
``AtlasError(message, *, path=None, reason=None, **fields)`` sets ``message`` (what ``str()``
gives), ``path``, ``reason`` (``message`` when not given) and one attribute per other keyword.
"""

from __future__ import annotations

from typing import Any

from ._atlas import (
    ArrayNotFoundError,
    AtlasError,
    AtlasPanicError,
    CollectionExistsError,
    CorruptCollectionError,
    DatasetNotFoundError,
    DuplicateNameError,
    ImportRefusedError,
    InvalidNameError,
    LayoutError,
    NotACollectionError,
    QueryError,
    SelectionError,
    StorageError,
    UnsupportedDTypeError,
    UnsupportedVersionError,
    WriteError,
)


def _init(
    self: AtlasError,
    message: str,
    *,
    path: str | None = None,
    reason: str | None = None,
    **fields: Any,
) -> None:
    # The next class in the instance's order (``KeyError`` for ``DatasetNotFoundError``) sets
    # ``args``, as a subclass's ``super().__init__`` would.
    super(AtlasError, self).__init__(message)
    self.message = message
    self.path = path
    self.reason = message if reason is None else reason
    for key, value in fields.items():
        setattr(self, key, value)


def _str(self: AtlasError) -> str:
    # The message as given, where ``KeyError`` would print its repr.
    return self.message


# The native module makes the classes; their constructor and ``str()`` are these (methods
# written in Python bind to their instance; a native function would not).
# (setattr: mypy refuses an assignment to a method.)
setattr(AtlasError, "__init__", _init)  # noqa: B010
setattr(AtlasError, "__str__", _str)  # noqa: B010

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
]
