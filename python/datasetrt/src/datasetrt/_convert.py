"""``datasetrt.convert``: a user's function over a list of inputs, in worker processes, into
one cache, byte for byte the same for every number of workers.

The function runs in the workers (it is the part only Python can do: decoding a format,
calling a tokenizer); the samples come back to this process in input order and go to one
:class:`~datasetrt.CacheWriter`, which does the format's work in Rust with the GIL released. So
no file of the cache depends on how many workers ran, and a conversion can be re-run and
compared. At most ``2 * num_workers`` chunks of inputs are in flight, so memory holds a bounded
number of converted samples whatever the input's length.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import Any

from ._native import DEFAULT_MAX_SHARD_BYTES, CacheWriter

__all__ = ["convert"]

Sample = tuple[Any, Mapping[str, Any]]

# The user's function in a worker process, set once by the pool's initializer so it is not
# pickled again with every chunk.
_WORKER_FN: Callable[[Any], Iterable[Sample]] | None = None


def _set_worker_fn(fn: Callable[[Any], Iterable[Sample]]) -> None:
    global _WORKER_FN
    _WORKER_FN = fn


def _samples_of(fn: Callable[[Any], Iterable[Sample]], item: Any) -> list[tuple[bytes, dict]]:
    """``fn(item)``'s samples as ``(bytes, dict)`` pairs, checked here so a wrong shape names
    its input rather than failing later in the writer."""
    out = []
    produced = fn(item)
    if produced is None:
        return out
    for position, sample in enumerate(produced):
        if not isinstance(sample, tuple) or len(sample) != 2:
            raise TypeError(
                f"sample {position} of this input is {type(sample).__name__}, not a "
                "(payload, metadata) pair"
            )
        payload, metadata = sample
        if not isinstance(payload, bytes):
            try:
                payload = bytes(memoryview(payload))
            except TypeError:
                raise TypeError(
                    f"sample {position} of this input has a payload of type "
                    f"{type(payload).__name__}, not bytes-like"
                ) from None
        if not isinstance(metadata, Mapping):
            raise TypeError(
                f"sample {position} of this input has metadata of type "
                f"{type(metadata).__name__}, not a mapping of column to value"
            )
        out.append((payload, dict(metadata)))
    return out


def _convert_chunk(chunk: list[Any]) -> list[list[tuple[bytes, dict]]]:
    """Runs in a worker: every input of ``chunk``, in order."""
    fn = _WORKER_FN
    assert fn is not None, "the worker pool was started without its function"
    converted = []
    for offset, item in enumerate(chunk):
        try:
            converted.append(_samples_of(fn, item))
        except BaseException as error:
            # The parent adds which input of the whole run this was.
            raise _InputFailed(offset, error) from error
    return converted


class _InputFailed(Exception):
    """A worker's failure on the input at ``offset`` in its chunk; carries the original
    exception (pickled with it) so the parent re-raises that, not this wrapper."""

    def __init__(self, offset: int, error: BaseException) -> None:
        super().__init__(offset, error)
        self.offset = offset
        self.error = error
        self.item: Any = None  # set in the parent, which has the chunk


def _chunks(inputs: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(inputs)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _describe(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 200 else text[:197] + "..."


def _add_note(error: BaseException, note: str) -> None:
    add = getattr(error, "add_note", None)  # Python 3.11+
    if add is not None:
        add(note)


def convert(
    fn: Callable[[Any], Iterable[Sample]],
    inputs: Iterable[Any],
    out: str | os.PathLike[str],
    *,
    source: str,
    schema: Any,
    num_workers: int | None = None,
    chunk_size: int | None = None,
    compression: str = "none",
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    mp_context: Any = None,
) -> dict[str, Any]:
    """Converts ``inputs`` into a new cache at ``out``: ``fn(input)`` yields ``(payload,
    metadata)`` pairs (bytes-like, and a dict with exactly ``schema``'s columns), and the
    cache holds every input's samples in input order.

    ``fn`` runs in ``num_workers`` worker processes (default: the CPUs this process may use;
    0 runs it in this process), given ``chunk_size`` inputs at a time (default: chosen from
    the input's length when it has one, else 16). The cache is byte for byte the same for
    every ``num_workers`` and ``chunk_size``. ``fn`` and the inputs must pickle (a
    module-level function, as for :mod:`multiprocessing`); ``mp_context`` picks the start
    method (default: :mod:`multiprocessing`'s). ``source``, ``schema``, ``compression`` and
    ``max_shard_bytes`` are :class:`~datasetrt.CacheWriter`'s.

    Returns the writer's summary dict. If ``fn`` raises, or a sample does not fit the
    schema, or the run is interrupted, nothing is published and nothing is left at ``out``;
    the exception propagates with a note naming the input.
    """
    if num_workers is None:
        cpus = getattr(os, "process_cpu_count", None)
        num_workers = (cpus() if cpus else len(os.sched_getaffinity(0))) or 1
    if num_workers < 0:
        raise ValueError(f"num_workers must be 0 or more, not {num_workers}")
    if chunk_size is None:
        try:
            length = len(inputs)  # type: ignore[arg-type]
        except TypeError:
            chunk_size = 16
        else:
            # Enough chunks to keep every worker busy to the end, few enough that each
            # chunk's round trip is small against its work.
            chunk_size = max(1, min(256, length // (max(num_workers, 1) * 8)))
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be 1 or more, not {chunk_size}")

    writer = CacheWriter(
        out,
        source=source,
        schema=schema,
        compression=compression,
        max_shard_bytes=max_shard_bytes,
    )
    position = 0  # inputs written so far: the index of the one being written
    current: Any = None
    converted = _converted(fn, inputs, num_workers, chunk_size, mp_context)
    try:
        with contextlib.closing(converted):
            for chunk, samples_by_input in converted:
                for item, samples in zip(chunk, samples_by_input):
                    current = item
                    for payload, metadata in samples:
                        writer.add(payload, metadata)
                    position += 1
        return writer.finish()
    except _InputFailed as failed:
        writer.abort(remove=True)
        error = failed.error
        _add_note(
            error,
            f"datasetrt.convert: input {position + failed.offset} ({_describe(failed.item)}) "
            f"raised; nothing was written to {os.fspath(out)}",
        )
        # The cause is the worker's traceback, as concurrent.futures attaches it.
        raise error from failed.__cause__
    except BaseException as error:
        writer.abort(remove=True)
        _add_note(
            error,
            f"datasetrt.convert: stopped at input {position} ({_describe(current)}); "
            f"nothing was written to {os.fspath(out)}",
        )
        raise


def _converted(
    fn: Callable[[Any], Iterable[Sample]],
    inputs: Iterable[Any],
    num_workers: int,
    chunk_size: int,
    mp_context: Any,
) -> Generator[tuple[list[Any], list[list[tuple[bytes, dict]]]], None, None]:
    """Each chunk of inputs with its samples, in input order. Closing it stops the workers."""
    chunks = _chunks(inputs, chunk_size)
    if num_workers == 0:
        _set_worker_fn(fn)
        for chunk in chunks:
            yield chunk, _result_of(chunk, functools.partial(_convert_chunk, chunk))
        return
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=num_workers,
        mp_context=mp_context,
        initializer=_set_worker_fn,
        initargs=(fn,),
    )
    pending: collections.deque[tuple[list[Any], concurrent.futures.Future]] = collections.deque()
    try:
        for chunk in chunks:
            pending.append((chunk, pool.submit(_convert_chunk, chunk)))
            if len(pending) >= 2 * num_workers:
                done, future = pending.popleft()
                yield done, _result_of(done, future.result)
        while pending:
            done, future = pending.popleft()
            yield done, _result_of(done, future.result)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _result_of(chunk: list[Any], get: Callable[[], Any]) -> Any:
    """``get()``, with the input that failed attached to the failure."""
    try:
        return get()
    except _InputFailed as failed:
        failed.item = chunk[failed.offset]
        raise
