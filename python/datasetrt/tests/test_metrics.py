"""Loader stats (docs/python.md, "Loader stats"): ``stats()`` of the Rust loaders, the sum over
``DataLoader`` workers in the training process, the ``datasetrt`` logger, and the Prometheus
collector."""

from __future__ import annotations

import logging
import time

import numpy as np
import prometheus_client
import pytest
from torch.utils.data import DataLoader

import datasetrt
from datasetrt.metrics import PrometheusCollector, format_stats, log_stats, merge_stats
from datasetrt.torch import TokenStreamingDataset

SEQ_LEN = 32
BATCH = 4


def write(path, count, seed):
    rng = np.random.default_rng(seed)
    with datasetrt.TokenWriter(
        path, source=path.name, vocab_size=1000, max_shard_bytes=8 << 10
    ) as writer:
        for n in 1 + rng.integers(0, 200, count):
            writer.add(rng.integers(0, 1000, n, dtype=np.int64))
    return str(path)


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    root = tmp_path_factory.mktemp("metrics")
    return [write(root / "a", 300, 1), write(root / "b", 200, 2)]


def stream(caches, **kwargs):
    return TokenStreamingDataset(
        caches,
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        rank=0,
        world_size=1,
        weights=[3.0, 1.0],
        **kwargs,
    )


def test_a_consumer_slower_than_the_loader_shows_a_stall_share_near_zero(caches):
    ds = stream(caches)
    received = 0
    for batch in DataLoader(ds, batch_size=None, num_workers=0):
        received += len(batch)
        time.sleep(0.02)
        if received >= 30 * BATCH:
            break
    stats = ds.stats()
    assert stats["batches"] == 30
    assert stats["samples"] == received
    assert stats["tokens"] == received * SEQ_LEN
    assert stats["stall_share"] < 0.05, stats
    assert stats["wall_s"] >= 29 * 0.02
    assert 0 < stats["time_to_first_batch_s"] < stats["elapsed_s"]
    assert abs(stats["source_shares"][0] - 0.75) < 0.1, stats
    assert stats["tokens_per_s"] > 0


def test_the_workers_stats_add_up_to_what_the_training_process_received(caches):
    ds = stream(caches)
    batches = rows = 0
    for batch in DataLoader(ds, batch_size=None, num_workers=2):
        batches += 1
        rows += len(batch)
    stats = ds.stats()
    assert stats["workers"] == 2
    assert stats["batches"] == batches == len(ds)
    assert stats["samples"] == rows
    assert stats["tokens"] == rows * SEQ_LEN
    # The same counts as one process reading the same epoch.
    alone = stream(caches)
    for _ in DataLoader(alone, batch_size=None, num_workers=0):
        pass
    single = alone.stats()
    assert single["batches"] == batches
    assert (single["samples"], single["tokens"]) == (rows, rows * SEQ_LEN)
    assert stats["source_counts"] == single["source_counts"]


def test_merging_sums_counts_and_recomputes_rates():
    part = {
        "elapsed_s": 2.0,
        "time_to_first_batch_s": 0.5,
        "batches": 4,
        "samples": 16,
        "tokens": 512,
        "wait_s": 1.0,
        "wall_s": 1.5,
        "bytes_read": 10,
        "bytes_downloaded": 20,
        "downloads": 1,
        "downloads_in_flight": 0,
        "shard_cache_hits": 2,
        "source_counts": [3, 1],
        "plan_s": 0.1,
        "download_s": 0.2,
        "read_s": 0.3,
        "assemble_s": 0.4,
    }
    later = dict(part, elapsed_s=3.0, time_to_first_batch_s=0.25, source_counts=[1, 3])
    merged = merge_stats([part, later])
    assert merged["batches"] == 8 and merged["tokens"] == 1024
    assert merged["elapsed_s"] == 3.0 and merged["time_to_first_batch_s"] == 0.25
    assert merged["source_counts"] == [4, 4] and merged["source_shares"] == [0.5, 0.5]
    assert merged["batches_per_s"] == pytest.approx(8 / 3)
    assert merged["stall_share"] == pytest.approx(2.0 / 3.0)
    assert "read" in format_stats(merged)


def test_the_logger_reports_at_its_interval(caches, caplog):
    ds = stream(caches)
    with caplog.at_level(logging.INFO, logger="datasetrt"):
        with log_stats(ds, interval=0.05):
            for _ in DataLoader(ds, batch_size=None, num_workers=0):
                time.sleep(0.01)
    lines = [r.getMessage() for r in caplog.records if r.name == "datasetrt"]
    assert len(lines) >= 2, lines
    assert all(line.startswith("loader stats: ") for line in lines)
    assert f"{len(ds)} batches" in lines[-1]


def test_the_prometheus_collector_exports_the_stats(caches):
    ds = stream(caches)
    for _ in DataLoader(ds, batch_size=None, num_workers=0):
        pass
    registry = prometheus_client.CollectorRegistry()
    registry.register(PrometheusCollector(ds, labels={"rank": "0"}))
    stats = ds.stats()
    value = registry.get_sample_value
    assert value("datasetrt_loader_batches_total", {"rank": "0"}) == stats["batches"]
    assert value("datasetrt_loader_tokens_total", {"rank": "0"}) == stats["tokens"]
    source = value("datasetrt_loader_source_total", {"rank": "0", "source": "1"})
    assert source == stats["source_counts"][1]
    read = value("datasetrt_loader_stage_seconds_total", {"rank": "0", "stage": "read"})
    assert read is not None and read > 0
    assert value("datasetrt_loader_stall_share", {"rank": "0"}) is not None
    text = prometheus_client.generate_latest(registry).decode()
    assert "datasetrt_loader_time_to_first_batch_seconds" in text


def test_a_sample_loader_counts_its_samples_and_bytes(tmp_path):
    path = tmp_path / "samples"
    with datasetrt.TokenWriter(path, source="s", vocab_size=100) as writer:
        for i in range(50):
            writer.add(np.arange(i + 1, dtype=np.int64) % 100)
    loader = datasetrt.Loader(datasetrt.Dataset([str(path)]), workers=2, prefetch=8)
    payload = sum(len(sample.payload) for sample in loader)
    stats = loader.stats()
    assert stats["samples"] == 50
    assert stats["bytes_read"] == payload
    assert stats["source_counts"] == [50]
    assert stats["time_to_first_batch_s"] is not None


@pytest.mark.parametrize("collate", ["samples", "columnar"])
def test_streaming_dataset_workers_stats_add_up_to_the_epoch(tmp_path, collate):
    from datasetrt.torch import StreamingDataset

    paths = [write(tmp_path / "a", 300, 3), write(tmp_path / "b", 100, 4)]
    ds = StreamingDataset(paths, rank=0, world_size=1, batch_size=8, collate=collate)
    received = batches = 0
    for batch in DataLoader(ds, batch_size=None, num_workers=2):
        received += len(batch)
        batches += 1
    stats = ds.stats()
    assert stats["workers"] == 2
    assert stats["samples"] == received == 400
    assert stats["source_counts"] == [300, 100]
    assert stats["time_to_first_batch_s"] is not None
    # Without workers: the reads of this process.
    alone = StreamingDataset(paths, rank=0, world_size=1, batch_size=8, collate=collate)
    for _ in DataLoader(alone, batch_size=None, num_workers=0):
        pass
    single = alone.stats()
    assert single["samples"] == 400 and single["source_counts"] == [300, 100]
    assert "workers" not in single
