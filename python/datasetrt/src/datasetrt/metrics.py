"""Loader stats in the training process (docs/python.md, "Loader stats"): the stats of
``DataLoader`` workers summed, logged through the ``datasetrt`` logger at an interval, and
served to Prometheus.

A loader's ``stats()`` is a dict the native module makes from the Rust loader's counters
(``Loader.stats()``, ``TokenDataset.stats()``, ``TokenStreamingDataset.stats()``); this module
only sums, formats and exports those dicts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["PrometheusCollector", "StatsLogger", "log_stats", "merge_stats"]

logger = logging.getLogger("datasetrt")

# Keys that add up over the processes of one training process's loader (its DataLoader
# workers): counts, bytes and thread-seconds; `batches` first (datasetrt.torch relies on it).
_SUMMED = (
    "batches",
    "samples",
    "tokens",
    "bytes_read",
    "bytes_downloaded",
    "downloads",
    "downloads_in_flight",
    "shard_cache_hits",
    "wait_s",
    "wall_s",
    "plan_s",
    "download_s",
    "read_s",
    "assemble_s",
)

_STAGES = ("plan", "download", "read", "assemble")


class HasStats(Protocol):
    def stats(self) -> dict[str, Any]: ...


def merge_stats(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The stats of several processes reading one loader's batches (a ``DataLoader``'s
    workers) as one: counts, bytes and seconds summed (``wait_s`` and ``wall_s`` too, so
    ``stall_share`` is the workers' waits over their wall time together), ``elapsed_s`` the
    longest, ``time_to_first_batch_s`` the earliest, per-source counts added source by
    source, and the rates and shares computed again from the sums."""
    merged: dict[str, Any] = {key: 0 for key in _SUMMED}
    merged["elapsed_s"] = 0.0
    firsts = []
    counts: list[int] = []
    for part in parts:
        for key in _SUMMED:
            merged[key] += part[key]
        merged["elapsed_s"] = max(merged["elapsed_s"], part["elapsed_s"])
        if part["time_to_first_batch_s"] is not None:
            firsts.append(part["time_to_first_batch_s"])
        source = part["source_counts"]
        counts.extend([0] * (len(source) - len(counts)))
        for i, n in enumerate(source):
            counts[i] += n
    merged["time_to_first_batch_s"] = min(firsts) if firsts else None
    merged["source_counts"] = counts
    total = sum(counts)
    merged["source_shares"] = [n / total if total else 0.0 for n in counts]
    elapsed = merged["elapsed_s"]
    for unit in ("batches", "samples", "tokens"):
        merged[f"{unit}_per_s"] = merged[unit] / elapsed if elapsed else 0.0
    wall = merged["wall_s"]
    merged["stall_share"] = min(merged["wait_s"] / wall, 1.0) if wall else 0.0
    merged["workers"] = len(parts)
    return merged


def format_stats(stats: Mapping[str, Any]) -> str:
    """One line: throughput, the consumer's stall share, time to first batch, bytes, and the
    stage that took the reading threads' time."""
    first = stats["time_to_first_batch_s"]
    stage = max(_STAGES, key=lambda s: stats[f"{s}_s"])
    shares = ", ".join(f"{share:.2f}" for share in stats["source_shares"])
    return (
        f"{stats['batches']} batches, {stats['batches_per_s']:.1f} batches/s, "
        f"{stats['samples_per_s']:.1f} samples/s, {stats['tokens_per_s']:.0f} tokens/s; "
        f"stall {stats['stall_share']:.1%}; first batch "
        + ("-" if first is None else f"{first:.3f} s")
        + f"; read {stats['bytes_read']} B, downloaded {stats['bytes_downloaded']} B, "
        f"{stats['downloads_in_flight']} downloads in flight, "
        f"{stats['shard_cache_hits']} shard cache hits; sources [{shares}]; "
        f"most time in {stage} ({stats[f'{stage}_s']:.2f} s)"
    )


class StatsLogger:
    """Logs ``source.stats()`` through the ``datasetrt`` logger (level INFO) every
    ``interval`` seconds on a daemon thread, until :meth:`stop` (which logs once more)."""

    def __init__(self, source: HasStats, interval: float, log: logging.Logger | None = None):
        if interval <= 0:
            raise ValueError("interval must be positive")
        self._source = source
        self._interval = interval
        self._log = log or logger
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="datasetrt-stats", daemon=True)
        self._thread.start()

    def log_now(self) -> None:
        self._log.info("loader stats: %s", format_stats(self._source.stats()))

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.log_now()

    def stop(self) -> None:
        """Stops the thread and logs the stats a last time."""
        self._stop.set()
        self._thread.join()
        self.log_now()

    def __enter__(self) -> StatsLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def log_stats(
    source: HasStats, interval: float = 60.0, log: logging.Logger | None = None
) -> StatsLogger:
    """Starts logging ``source.stats()`` every ``interval`` seconds (see :class:`StatsLogger`);
    ``source`` is any loader or dataset with ``stats()``."""
    return StatsLogger(source, interval, log)


class PrometheusCollector:
    """A ``prometheus_client`` collector of ``source.stats()`` (install
    ``datasetrt[prometheus]``): register it with ``prometheus_client.REGISTRY.register(...)``
    and every scrape reads the stats once. Counters: ``<prefix>_batches_total``,
    ``_samples_total``, ``_tokens_total``, ``_bytes_read_total``, ``_bytes_downloaded_total``,
    ``_downloads_total``, ``_shard_cache_hits_total``, ``_wait_seconds_total``,
    ``_stage_seconds_total{stage}``, ``_source_total{source}``; gauges:
    ``_downloads_in_flight``, ``_stall_share``, ``_time_to_first_batch_seconds``,
    ``_source_share{source}``. ``labels`` are added to every sample."""

    def __init__(
        self,
        source: HasStats,
        prefix: str = "datasetrt_loader",
        labels: Mapping[str, str] | None = None,
    ) -> None:
        import prometheus_client  # noqa: F401 (fail here, not at the first scrape)

        self._source = source
        self._prefix = prefix
        self._labels = dict(labels or {})

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        stats = self._source.stats()
        names = list(self._labels)
        values = list(self._labels.values())
        p = self._prefix

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            family = CounterMetricFamily(f"{p}_{name}", doc, labels=names)
            family.add_metric(values, value)
            return family

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            family = GaugeMetricFamily(f"{p}_{name}", doc, labels=names)
            family.add_metric(values, value)
            return family

        yield counter("batches", "Batches handed to the consumer.", stats["batches"])
        yield counter("samples", "Samples (token rows) handed to the consumer.", stats["samples"])
        yield counter("tokens", "Input tokens handed to the consumer.", stats["tokens"])
        yield counter("bytes_read", "Record bytes the loader read.", stats["bytes_read"])
        yield counter(
            "bytes_downloaded", "Bytes received from object stores.", stats["bytes_downloaded"]
        )
        yield counter("downloads", "Shard downloads completed.", stats["downloads"])
        yield counter(
            "shard_cache_hits", "Shards found in the shard cache.", stats["shard_cache_hits"]
        )
        yield counter(
            "wait_seconds", "The consumer's wait for batches after the first.", stats["wait_s"]
        )
        stages = CounterMetricFamily(
            f"{p}_stage_seconds",
            "Reading threads' time per stage, summed over threads.",
            labels=[*names, "stage"],
        )
        for stage in _STAGES:
            stages.add_metric([*values, stage], stats[f"{stage}_s"])
        yield stages
        per_source = CounterMetricFamily(
            f"{p}_source",
            "Samples (sample loaders) or tokens (token loaders) per source.",
            labels=[*names, "source"],
        )
        shares = GaugeMetricFamily(
            f"{p}_source_share", "Each source's share so far.", labels=[*names, "source"]
        )
        for i, (n, share) in enumerate(zip(stats["source_counts"], stats["source_shares"])):
            per_source.add_metric([*values, str(i)], n)
            shares.add_metric([*values, str(i)], share)
        yield per_source
        yield shares
        yield gauge("downloads_in_flight", "Downloads under way.", stats["downloads_in_flight"])
        yield gauge("stall_share", "The consumer's wait over its wall time.", stats["stall_share"])
        first = stats["time_to_first_batch_s"]
        if first is not None:
            yield gauge("time_to_first_batch_seconds", "Time to the first batch.", first)
