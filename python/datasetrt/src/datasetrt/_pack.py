"""The converters into caches: each packs an input into a new cache at ``out`` on ``jobs``
threads (default: the CPUs available), byte for byte the same cache for every ``jobs``, and
returns the summary dict of :meth:`CacheWriter.finish`. On failure nothing is left at
``out``. All run ``datasetrt::pack`` (the converters ``dsrt pack`` runs) with the GIL released.

``source`` names the data (a v3 cache id is derived from it), ``compression`` is ``"none"``
or ``"lz4"``, ``max_shard_bytes`` the shard rotation target.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Union

from ._native import DEFAULT_MAX_SHARD_BYTES, _pack

_Path = Union[str, "os.PathLike[str]"]


def pack_dir(
    root: _Path,
    out: _Path,
    *,
    source: str,
    compression: str = "none",
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Packs every regular file below ``root`` (sorted relative-path order; symbolic links
    skipped), one sample per file with metadata ``path`` (relative) and ``size``."""
    options = dict(source=source, compression=compression, max_shard_bytes=max_shard_bytes)
    return _pack("dir", root, out, jobs=jobs, **options)


def pack_imagefolder(
    root: _Path,
    out: _Path,
    *,
    source: str,
    compression: str = "none",
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Packs an ImageFolder tree (``root/<class>/<file>``, torchvision's layout): one sample
    per file, classes in sorted order, with metadata ``label`` (the class's position),
    ``class`` and ``path`` (relative to ``root``)."""
    options = dict(source=source, compression=compression, max_shard_bytes=max_shard_bytes)
    return _pack("imagefolder", root, out, jobs=jobs, **options)


def pack_parquet(
    paths: _Path | Sequence[_Path],
    out: _Path,
    *,
    source: str,
    payload_column: str | None = None,
    metadata_columns: Sequence[str] | None = None,
    compression: str = "none",
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    jobs: int | None = None,
    tokens_column: str | None = None,
    text_column: str | None = None,
    tokenizer: _Path | None = None,
    add_special_tokens: bool = False,
    append_eos: bool = False,
    token_dtype: str | None = None,
    vocab_size: int | None = None,
    bos_id: int | None = None,
    eos_id: int | None = None,
    pad_id: int | None = None,
    tokenizer_name: str | None = None,
) -> dict[str, Any]:
    """Packs Parquet files (a path, a directory of ``*.parquet`` files in name order, or a list
    of them) or a Hugging Face ``save_to_disk`` directory, one sample per row:
    ``payload_column`` (binary or string, or a struct with a binary ``bytes`` field such as the
    ``Image`` feature) is the payload, the other columns (or ``metadata_columns``, in that
    order) metadata, widened to bool, int64, float64 or utf8; any other column type is refused
    naming the file and column before anything is written. Row groups are read one at a
    time.

    A token cache instead (docs/format/datasetrt.md, "Token caches") with ``tokens_column`` (a
    list of integers per row: the document's ids, each checked against the width and
    ``vocab_size``; ``token_dtype``, default from ``vocab_size`` or else the list's integer
    type) or ``text_column`` with ``tokenizer`` (a tokenizer.json; ids as the ``tokenizers``
    package's ``encode_batch(texts, add_special_tokens=...)`` gives them, the EOS id appended
    with ``append_eos``)."""
    columns = None if metadata_columns is None else list(metadata_columns)
    options = dict(source=source, compression=compression, max_shard_bytes=max_shard_bytes)
    return _pack(
        "parquet",
        paths,
        out,
        payload_column=payload_column,
        metadata_columns=columns,
        jobs=jobs,
        tokens_column=tokens_column,
        text_column=text_column,
        tokenizer=tokenizer,
        add_special_tokens=add_special_tokens,
        append_eos=append_eos,
        token_dtype=token_dtype,
        vocab_size=vocab_size,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
        tokenizer_name=tokenizer_name,
        **options,
    )


def pack_megatron(
    prefix: _Path,
    out: _Path,
    *,
    source: str,
    token_dtype: str | None = None,
    vocab_size: int | None = None,
    bos_id: int | None = None,
    eos_id: int | None = None,
    pad_id: int | None = None,
    tokenizer_name: str | None = None,
    compression: str = "none",
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Imports a Megatron-LM indexed dataset (``prefix + ".idx"`` and ``prefix + ".bin"``, the
    ``MMIDIDX`` format megatron-core's ``IndexedDatasetBuilder`` writes) into a new token
    cache: one sample per document (a document's sequences concatenated), the ids identical,
    ``n_tokens`` their count. The width is ``token_dtype``, else from ``vocab_size``, else from
    the dataset's element type. A hostile or damaged index is refused naming the file or the
    document."""
    options = dict(source=source, compression=compression, max_shard_bytes=max_shard_bytes)
    return _pack(
        "megatron",
        prefix,
        out,
        token_dtype=token_dtype,
        vocab_size=vocab_size,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
        tokenizer_name=tokenizer_name,
        jobs=jobs,
        **options,
    )


def pack_webdataset(
    tars: _Path | Sequence[_Path],
    out: _Path,
    *,
    source: str,
    payload_ext: str | Sequence[str],
    skip_bad: bool = False,
    compression: str = "none",
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Packs WebDataset tar shards (a path or a list, in that order), one sample per key: the
    member with the first of ``payload_ext`` (an extension or a list) is the payload; metadata
    ``key``, ``cls`` (int64, from ``.cls``), ``txt`` (from ``.txt``) and the primitive fields of
    ``.json``. A sample without a payload member or with a bad ``.cls`` or ``.json`` is refused
    naming the tar and key, or left out with ``skip_bad`` (the summary's ``skipped``)."""
    options = dict(source=source, compression=compression, max_shard_bytes=max_shard_bytes)
    return _pack(
        "webdataset", tars, out, payload_ext=payload_ext, skip_bad=skip_bad, jobs=jobs, **options
    )


def pack_jsonl(
    path: _Path,
    out: _Path,
    *,
    source: str,
    payload_field: str,
    payload_encoding: str = "path",
    schema: Any = None,
    compression: str = "none",
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Packs a JSONL file, one sample per line (blank lines skipped), as ``dsrt pack --jsonl``
    does, byte for byte: ``payload_field`` holds the payload, read as ``payload_encoding``
    says (``"path"``: a file path relative to the JSONL file's directory; ``"base64"``: inline
    base64; ``"text"``: the string's UTF-8 bytes); every other field is a metadata column.
    Without ``schema`` (a dict of column types or a ``pyarrow.Schema``, as
    :class:`CacheWriter` takes) the types are inferred over the whole file: booleans, integers
    (int64), numbers with a fraction (float64; integers mixed with them widen), strings; a
    column null or missing on some line is nullable. Nested values and mixed types are refused
    naming the line and the field. The file is read twice (infer, then write)."""
    options = dict(source=source, compression=compression, max_shard_bytes=max_shard_bytes)
    return _pack(
        "jsonl",
        path,
        out,
        payload_field=payload_field,
        payload_encoding=payload_encoding,
        schema=schema,
        jobs=jobs,
        **options,
    )
