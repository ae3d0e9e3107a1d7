"""Atlas collections from Python: many small gridded datasets in one object.

>>> import atlas_collections as ac
>>> c = ac.open("s3://bucket/weather")          # or a local directory
>>> c.names[:3], c["jan_2024"]["t2m"][10:20, ::2], c.stats("t2m").max

See ``docs/python-atlas.md`` for the full tour: writing, the xarray backend (engine
``"atlas"``), NetCDF import (``python -m atlas_collections import OUT FILE.nc ...``), the dtype
mapping and the exceptions.
"""

from typing import Any

from . import _atlas, errors
from ._core import (
    Array,
    Collection,
    CompactReport,
    Dataset,
    DatasetStats,
    DeleteReport,
    Stats,
    Writer,
    compact,
    open,
    write_xarray,
)
from .errors import (
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
from .netcdf import ImportSummary, import_netcdf

FORMAT_VERSION: int = _atlas.FORMAT_VERSION


def __getattr__(name: str) -> Any:
    # open_mfdataset needs xarray, which the package does not require: imported on first use.
    if name == "open_mfdataset":
        from .mfdataset import open_mfdataset

        return open_mfdataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_name(kind: str, name: str) -> None:
    """Raises :class:`InvalidNameError` unless ``name`` is a valid ``kind`` name
    (``"dataset"``, ``"array"`` or ``"attribute"``): non-empty, no leading ``_``."""
    _atlas.check_name(kind, name)


__all__ = [
    "open",
    "Collection",
    "Dataset",
    "Array",
    "Writer",
    "Stats",
    "DatasetStats",
    "DeleteReport",
    "compact",
    "CompactReport",
    "write_xarray",
    "open_mfdataset",
    "import_netcdf",
    "ImportSummary",
    "check_name",
    "FORMAT_VERSION",
    "errors",
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
