"""Token schedules (docs/tokens.md, "Schedules"): ``TokenDataset(schedule=[Phase(tokens,
weights), ...])`` over real token caches. The documents that begin in each phase hold each
cache's budget of the phase to within one document, as the plan reports it; a DataLoader with 0
and 2 workers gives the same windows; a state resumes exactly, and is refused under another
schedule naming the phase; Grain's TokenIterDataset takes the same schedule."""

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from torch.utils.data import DataLoader

import datasetrt
from datasetrt import Phase
from datasetrt.grain import TokenIterDataset
from datasetrt.torch import TokenStreamingDataset

LONGEST = 400


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    root = tmp_path_factory.mktemp("scheduled-token-caches")
    paths = []
    for name, count, seed in [("code", 120, 1), ("web", 200, 2), ("math", 90, 3)]:
        rng = np.random.default_rng(seed)
        path = root / name
        with datasetrt.TokenWriter(path, source=name, vocab_size=5000) as writer:
            for n in rng.integers(1, LONGEST, count):
                writer.add(rng.integers(3, 5000, n, dtype=np.int64))
        paths.append(str(path))
    return paths


def schedule(caches):
    natural = sum(datasetrt.TokenDataset(caches, seq_len=64).source_tokens)
    return [
        Phase(tokens=natural // 3, weights=[0.6, 0.2, 0.2]),
        Phase(tokens=natural // 4, weights=[0.0, 0.9, 0.1]),
        Phase(natural // 2, [0.2, 0.2, 0.6]),
    ]


def test_the_documents_of_each_phase_hold_its_budgets_within_one_document(caches):
    phases = schedule(caches)
    ds = datasetrt.TokenDataset(
        caches, seq_len=64, schedule=phases, window_block=1, batch_size=4, workers=0
    )
    report = ds.report()
    assert [p["scheduled_tokens"] for p in report["phases"]] == [p.length for p in phases]
    starts = [p["start"] for p in report["phases"]]
    cache_ids = datasetrt.Dataset(caches).cache_ids
    # Each cache's tokens per phase, from the rows' inputs in epoch order: a document counts in
    # the phase in which it begins.
    counted: defaultdict[tuple[int, int], int] = defaultdict(int)
    phase_of = {}
    at = 0
    for batch in ds:
        for pieces in pa.record_batch(batch.arrow()).column("documents").to_pylist():
            used = 0
            for piece in pieces:
                cache_id, start, length = piece["cache_id"], piece["start"], piece["length"]
                n = min(length, 64 - used)
                used += length
                if n <= 0:
                    continue
                if start == 0:
                    phase_of[cache_id] = sum(1 for s in starts if s <= at) - 1
                counted[(phase_of[cache_id], cache_ids.index(cache_id))] += n
                at += n
    assert at == report["epoch_tokens"]
    budget = [0, 0, 0]
    tokens = [0, 0, 0]
    for p, phase in enumerate(report["phases"]):
        for c, source in enumerate(phase["sources"]):
            assert counted[(p, c)] == source["tokens"], (p, c)
            # Largest remainder: each budget within one token of its exact share.
            assert abs(source["budget"] - phases[p].length * phases[p].weights[c]) < 1
            budget[c] += source["budget"]
            tokens[c] += source["tokens"]
            assert budget[c] <= tokens[c] < budget[c] + LONGEST, (p, c)
    assert report["phases"][1]["sources"][0]["tokens"] == 0
    assert [sum(s["budget"] for s in p["sources"]) for p in report["phases"]] == [
        p.length for p in phases
    ]


def windows(loader):
    return [(b["input_ids"].numpy().tobytes(), b["labels"].sum().item()) for b in loader]


def test_a_dataloader_with_0_and_2_workers_gives_the_same_scheduled_windows(caches):
    ds = TokenStreamingDataset(
        caches, seq_len=64, schedule=schedule(caches), batch_size=4, rank=1, world_size=2
    )
    alone = windows(DataLoader(ds, batch_size=None, num_workers=0))
    two = windows(DataLoader(ds, batch_size=None, num_workers=2))
    assert len(alone) == len(ds) > 10
    assert alone == two
    unscheduled = TokenStreamingDataset(caches, seq_len=64, batch_size=4, rank=1, world_size=2)
    assert windows(DataLoader(unscheduled, batch_size=None)) != alone


def rows(batches):
    return [pa.record_batch(b.arrow()).column("input_ids").to_pylist() for b in batches]


def test_a_scheduled_state_resumes_exactly_and_is_refused_under_another_schedule(caches):
    phases = schedule(caches)
    settings = dict(seq_len=64, schedule=phases, batch_size=4, workers=0)
    reference = rows(datasetrt.TokenDataset(caches, **settings))
    first = datasetrt.TokenDataset(caches, **settings)
    it = iter(first)
    stop = len(first) * 3 // 10
    seen = [next(it) for _ in range(stop)]
    state = first.state_dict()
    resumed = datasetrt.TokenDataset(caches, state=state, **settings)
    assert rows(seen) + rows(resumed) == reference

    changed = list(phases)
    changed[1] = Phase(tokens=phases[1].length, weights=[0.1, 0.8, 0.1])
    with pytest.raises(datasetrt.DatasetError, match="phase 1 with shares"):
        datasetrt.TokenDataset(caches, state=state, **dict(settings, schedule=changed))


def test_grain_takes_the_schedule_and_a_budget_conflicts_with_it(caches):
    phases = schedule(caches)
    direct = datasetrt.TokenDataset(caches, seq_len=64, schedule=phases, batch_size=4, workers=0)
    through_grain = TokenIterDataset(
        caches, seq_len=64, schedule=phases, batch_size=4, workers=0, rank=0, world_size=1
    )
    assert [b["input_ids"].tolist() for b in through_grain] == rows(direct)
    with pytest.raises(datasetrt.DatasetError, match="tokens_per_epoch"):
        datasetrt.TokenDataset(caches, seq_len=64, schedule=phases, tokens_per_epoch=1000)
    with pytest.raises(datasetrt.DatasetError, match="phase 0: it holds 0 tokens"):
        datasetrt.TokenDataset(caches, seq_len=64, schedule=[Phase(tokens=0, weights=[1, 1, 1])])
    assert Phase(tokens=5, weights=[1]) == Phase(5, [1.0]) == (5, [1.0])
    with pytest.raises(TypeError):
        Phase(5, [1], tokens=5)
