"""Caches written as parts side by side and joined into one: the staging conventions that
:func:`datasetrt.convert` and :mod:`datasetrt.ray`'s datasink share.

Each writer (a worker process, a Ray task) writes a whole cache of its own share, a *part*,
named by its number in a staging directory ``.dsrt-parts-<random>/`` inside the target (a
local directory, so the join, ``_native._merge_parts``, renames the parts' shards into place;
or an object-store prefix). A run that fails removes the staging directory and whatever the
join wrote, and the target too if the run created it.
"""

from __future__ import annotations

import shutil
import uuid

from . import _native

STAGING_PREFIX = ".dsrt-parts-"


def staging_name() -> str:
    """A fresh staging directory's name (in the target: a path's or a URL's last part)."""
    return STAGING_PREFIX + uuid.uuid4().hex


def part_name(number: int) -> str:
    """Part ``number``'s name in the staging directory; the names sort in part order."""
    return f"{number:06}"


def remove_written(target: str, staging: str, created: bool) -> None:
    """Removes the local staging directory and what an unfinished join left at ``target`` (its
    cache files, and ``target`` itself when ``created``). A published cache is never touched."""
    shutil.rmtree(staging, ignore_errors=True)
    _native._remove_unpublished(target, created)
