"""``datasetrt.convert``: a user's function over a list of inputs, in worker processes, into
one cache, byte for byte the same for every number of workers.

The inputs are cut into chunks of ``chunk_size``; each chunk is converted by one worker, which
runs the function (the part only Python can do: decoding a format, calling a tokenizer) and
writes the chunk's samples into a whole cache of its own, a *part*, with a
:class:`~datasetrt.CacheWriter` (the format's work, in Rust with the GIL released). No sample
crosses a process boundary: a worker hands back its part's summary. When every chunk is done,
the parts are joined in chunk order (``_native._merge_parts``: their shards are renamed into
the cache, not copied; index, metadata and the manifest are written last), the layout
:mod:`datasetrt.ray`'s datasink writes (:mod:`datasetrt._parts`). A part depends only on its
chunk's inputs, so no file of the cache depends on how many workers ran; a shard ends at
every chunk's end, so the files do depend on ``chunk_size``. At most ``2 * num_workers``
chunks are in flight, so the parent holds a bounded number of inputs whatever their count.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TextIO

from . import _native, _parts
from ._native import DEFAULT_MAX_SHARD_BYTES, CacheWriter

__all__ = ["convert"]

Sample = tuple[Any, Mapping[str, Any]]

#: Inputs per chunk when ``chunk_size`` is not given. Fixed, so that the cache's bytes do not
#: depend on the machine (its CPU count) nor on whether the inputs came as a list or as a
#: generator; large enough that a chunk's start-up (a part writer, a round trip to the
#: worker) is small against its work and that a part's shard is not tiny for images, small
#: enough that a few thousand inputs still keep two workers busy to the end.
DEFAULT_CHUNK_SIZE = 1024

# Seconds between two refreshes of the progress display.
_PROGRESS_INTERVAL = 0.2


@dataclasses.dataclass(frozen=True)
class _Job:
    """What every chunk of one conversion is written with: set once per worker process (by
    the pool's initializer, so the function is not pickled again with every chunk)."""

    fn: Callable[[Any], Iterable[Sample]]
    source: str
    schema: Any
    compression: str
    max_shard_bytes: int
    # Whether each part's shards are hashed and written on background threads: not when the
    # workers alone keep every CPU busy, where those threads would only move each byte to a
    # cold cache (the bytes are the same either way).
    io_threads: bool = True
    # Shared (inputs, samples) done, for the progress display; None when it is off.
    counts: Any = None


_JOB: _Job | None = None


def _set_job(job: _Job | None) -> None:
    global _JOB
    _JOB = job


def _samples_of(fn: Callable[[Any], Iterable[Sample]], item: Any) -> Iterator[tuple[Any, dict]]:
    """``fn(item)``'s samples as ``(bytes-like, dict)`` pairs, checked here so a wrong shape
    names its input rather than failing later in the writer."""
    produced = fn(item)
    if produced is None:
        return
    for position, sample in enumerate(produced):
        if not isinstance(sample, tuple) or len(sample) != 2:
            raise TypeError(
                f"sample {position} of this input is {type(sample).__name__}, not a "
                "(payload, metadata) pair"
            )
        payload, metadata = sample
        if not isinstance(payload, bytes):
            try:
                payload = memoryview(payload)
            except TypeError:
                raise TypeError(
                    f"sample {position} of this input has a payload of type "
                    f"{type(payload).__name__}, not bytes-like"
                ) from None
        if not isinstance(metadata, dict):
            if not isinstance(metadata, Mapping):
                raise TypeError(
                    f"sample {position} of this input has metadata of type "
                    f"{type(metadata).__name__}, not a mapping of column to value"
                )
            metadata = dict(metadata)
        yield payload, metadata


def _write_part(chunk: list[Any], part: str) -> tuple[str, int]:
    """Runs in a worker (or in this process for ``num_workers=0``): every input of ``chunk``,
    in order, into a new cache at ``part``; returns its path and payload bytes, what the join
    needs. A failure removes the part and names the input's offset in the chunk."""
    job = _JOB
    assert job is not None, "the chunk writer was started without its job"
    writer = CacheWriter(
        part,
        source=job.source,
        schema=job.schema,
        compression=job.compression,
        max_shard_bytes=job.max_shard_bytes,
        io_threads=job.io_threads,
    )
    try:
        for offset, item in enumerate(chunk):
            added = 0
            try:
                for payload, metadata in _samples_of(job.fn, item):
                    writer.add(payload, metadata)
                    added += 1
            except BaseException as error:
                # The parent adds which input of the whole run this was.
                raise _InputFailed(offset, error) from error
            if job.counts is not None:
                with job.counts.get_lock():
                    # Samples first: the display reads without the lock, and inputs done
                    # never run ahead of their samples.
                    job.counts[1] += added
                    job.counts[0] += 1
        summary = writer.finish()
    except BaseException:
        writer.abort(remove=True)
        raise
    return part, summary["payload_bytes"]


class _InputFailed(Exception):
    """A chunk's failure on the input at ``offset`` in it; carries the original exception
    (pickled with it) so the parent re-raises that, not this wrapper."""

    def __init__(self, offset: int, error: BaseException) -> None:
        super().__init__(offset, error)
        self.offset = offset
        self.error = error
        # Set in the parent, which has the chunk.
        self.index = 0
        self.item: Any = None


def _cpus() -> int:
    """The CPUs this process may use."""
    cpus = getattr(os, "process_cpu_count", None)  # Python 3.13+
    return (cpus() if cpus else len(os.sched_getaffinity(0))) or 1


def _chunks(inputs: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(inputs)
    while True:
        chunk = []
        for item in iterator:
            chunk.append(item)
            if len(chunk) == size:
                break
        if not chunk:
            return
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
    progress: bool | None = None,
) -> dict[str, Any]:
    """Converts ``inputs`` into a new cache at ``out``: ``fn(input)`` yields ``(payload,
    metadata)`` pairs (bytes-like, and a dict with exactly ``schema``'s columns), and the
    cache holds every input's samples in input order.

    The inputs are cut into chunks of ``chunk_size`` (default: 1024, whatever the input or
    the machine). Each chunk is converted by one of ``num_workers`` worker processes
    (default: the CPUs this process may use; 0 converts in this process), which runs ``fn``
    and writes the chunk's samples as a cache of its own, a part, in a staging directory
    inside ``out``; no sample is sent back. At most ``2 * num_workers`` chunks are in flight.
    Once all are written the parts are joined in chunk order, their shards renamed into
    ``out``, the manifest published last. So the cache is byte for byte the same for every
    ``num_workers``, but not for every ``chunk_size``: a shard ends at every chunk's end
    (``max_shard_bytes`` still bounds the shards within a chunk), and with small samples a
    larger ``chunk_size`` gives fewer, fuller shards.

    ``fn`` and the inputs must pickle (a module-level function, as for
    :mod:`multiprocessing`); ``mp_context`` picks the start method (default:
    :mod:`multiprocessing`'s). ``source``, ``schema``, ``compression`` and
    ``max_shard_bytes`` are :class:`~datasetrt.CacheWriter`'s, checked (with the target
    being new or empty) before any worker starts. ``progress`` shows inputs and samples done
    and the rate on stderr (with ``tqdm`` when it is installed; default: when stderr is a
    terminal).

    Returns the summary dict :meth:`CacheWriter.finish` gives. If ``fn`` raises, a sample
    does not fit the schema, a worker dies, or the run is interrupted, nothing is published
    and nothing is left at ``out`` (an existing empty directory stays empty); the exception
    propagates with a note naming the input, and from a worker with the worker's traceback
    as its cause.
    """
    if num_workers is None:
        num_workers = _cpus()
    if num_workers < 0:
        raise ValueError(f"num_workers must be 0 or more, not {num_workers}")
    if chunk_size is None:
        chunk_size = DEFAULT_CHUNK_SIZE
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be 1 or more, not {chunk_size}")
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        progress = bool(isatty and isatty())

    target = os.path.abspath(os.fspath(out))
    created = not os.path.lexists(target)
    # The writer's own checks (schema, compression, shard size, a new or empty target), with
    # their typed errors, before a worker starts; it writes nothing that stays.
    CacheWriter(
        target,
        source=source,
        schema=schema,
        compression=compression,
        max_shard_bytes=max_shard_bytes,
    ).abort(remove=True)
    staging = os.path.join(target, _parts.staging_name())
    context = mp_context if mp_context is not None else multiprocessing.get_context()
    job = _Job(
        fn,
        source,
        schema,
        compression,
        max_shard_bytes,
        io_threads=num_workers < _cpus(),
        counts=context.Array("q", 2) if progress else None,
    )
    try:
        total = len(inputs)  # type: ignore[arg-type]
    except TypeError:
        total = None
    run = _Run(job, staging, chunk_size)
    display = None
    try:
        os.makedirs(staging)
        if progress:
            display = _Progress(job.counts, total)
        if num_workers == 0:
            run.in_process(inputs)
        else:
            run.in_workers(inputs, num_workers, mp_context)
        run.joining = True
        summary = _native._merge_parts(
            target, [run.parts[k] for k in range(len(run.parts))], source=source, schema=schema
        )
    except _InputFailed as failed:
        _parts.remove_written(target, staging, created)
        error = failed.error
        _add_note(
            error,
            f"datasetrt.convert: input {failed.index} ({_describe(failed.item)}) raised; "
            f"nothing was written to {os.fspath(out)}",
        )
        # From a worker, the cause is its traceback (concurrent.futures attaches it); in this
        # process the error carries its own.
        cause = failed.__cause__
        raise error from (None if cause is error else cause)
    except BaseException as error:
        _parts.remove_written(target, staging, created)
        if run.joining:
            where = "while joining the parts"
        else:
            position, item = run.first_unfinished()
            where = f"at input {position}" + ("" if item is None else f" ({_describe(item)})")
        _add_note(
            error, f"datasetrt.convert: stopped {where}; nothing was written to {os.fspath(out)}"
        )
        raise
    finally:
        if display is not None:
            display.close()
    # The join removed the emptied parts; what remains is the staging directory itself.
    _parts.remove_written(target, staging, False)
    return summary


class _Run:
    """One conversion's chunks: which are written (``parts``, by chunk number) and which are
    in flight, so a failure can name its input."""

    def __init__(self, job: _Job, staging: str, chunk_size: int) -> None:
        self.job = job
        self.staging = staging
        self.chunk_size = chunk_size
        self.parts: dict[int, tuple[str, int]] = {}
        # Chunks taken from the inputs and not written yet, by number.
        self.open: dict[int, list[Any]] = {}
        self.taken = 0  # inputs
        self.chunks = 0
        self.joining = False

    def first_unfinished(self) -> tuple[int, Any]:
        """The number of the first input of the lowest chunk not written and that input, or
        the inputs taken and None."""
        if self.open:
            number = min(self.open)
            return number * self.chunk_size, self.open[number][0]
        return self.taken, None

    def _take(self, chunk: list[Any]) -> tuple[int, str]:
        number = self.chunks
        self.chunks += 1
        self.open[number] = chunk
        self.taken += len(chunk)
        return number, os.path.join(self.staging, _parts.part_name(number))

    def _done(self, number: int, get: Callable[[], tuple[str, int]]) -> None:
        """Records chunk ``number``'s part from ``get()``, or names the failed input."""
        try:
            self.parts[number] = get()
        except _InputFailed as failed:
            failed.index = number * self.chunk_size + failed.offset
            failed.item = self.open[number][failed.offset]
            raise
        del self.open[number]

    def in_process(self, inputs: Iterable[Any]) -> None:
        _set_job(self.job)
        try:
            for chunk in _chunks(inputs, self.chunk_size):
                number, part = self._take(chunk)
                self._done(number, functools.partial(_write_part, chunk, part))
        finally:
            _set_job(None)

    def in_workers(self, inputs: Iterable[Any], num_workers: int, mp_context: Any) -> None:
        pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=num_workers,
            mp_context=mp_context,
            initializer=_set_job,
            initargs=(self.job,),
        )
        chunks = _chunks(inputs, self.chunk_size)
        running: dict[concurrent.futures.Future, int] = {}
        try:
            exhausted = False
            while True:
                # Finished parts are on disk: only the unfinished chunks count against the
                # bound, so a slow chunk does not hold the others back.
                while not exhausted and len(running) < 2 * num_workers:
                    chunk = next(chunks, None)
                    if chunk is None:
                        exhausted = True
                        break
                    number, part = self._take(chunk)
                    running[pool.submit(_write_part, chunk, part)] = number
                if not running:
                    return
                done, _ = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for future in sorted(done, key=running.__getitem__):
                    self._done(running.pop(future), future.result)
        except BaseException:
            # Python 3.14 can stop the workers at once rather than let their chunks finish.
            terminate = getattr(pool, "terminate_workers", None)
            if terminate is not None:
                terminate()
            raise
        finally:
            # Waits for the workers, so none writes into the staging directory once the
            # caller removes it.
            pool.shutdown(wait=True, cancel_futures=True)


class _Progress:
    """Inputs and samples done and the rate, on stderr, refreshed by a thread of its own from
    the counts the chunk writers share: with ``tqdm`` if it is importable, else one line."""

    def __init__(self, counts: Any, total: int | None) -> None:
        self.counts = counts
        self.total = total
        self.start = time.monotonic()
        self.shown = (-1, -1)
        self.stream: TextIO = sys.stderr
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self.bar: Any = None
        else:
            self.bar = tqdm(total=total, unit="input", desc="datasetrt.convert", file=self.stream)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="datasetrt-progress", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.wait(_PROGRESS_INTERVAL):
            self._show()

    def _show(self) -> None:
        # Read without the lock: a display a sample behind is harmless, a display blocked by
        # a worker killed while holding the lock would hang the caller.
        inputs, samples = self.counts[0], self.counts[1]
        if (inputs, samples) == self.shown:
            return
        rate = samples / max(time.monotonic() - self.start, 1e-9)
        if self.bar is not None:
            self.bar.update(inputs - max(self.shown[0], 0))
            self.bar.set_postfix_str(f"{samples:,} samples, {rate:,.0f} samples/s")
        else:
            of = "" if self.total is None else f"/{self.total:,}"
            self.stream.write(
                f"\rdatasetrt.convert: {inputs:,}{of} inputs, {samples:,} samples, "
                f"{rate:,.0f} samples/s"
            )
            self.stream.flush()
        self.shown = (inputs, samples)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self._show()
        if self.bar is not None:
            self.bar.close()
        elif self.shown[0] >= 0:
            self.stream.write("\n")
            self.stream.flush()
