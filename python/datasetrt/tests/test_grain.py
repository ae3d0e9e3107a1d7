"""datasetrt.grain: Grain (and JAX) over DatasetRT caches without PyTorch. A grain.DataLoader
with two worker processes over DatasetSource serves exactly the samples of an epoch of the
DatasetRT Loader, sharded per host; TokenIterDataset yields the token stream's batches, and its
Grain checkpoint state restores exactly (on another topology too); importing datasetrt.grain
with torch made unimportable works; docs/jax.md's training loop runs as written."""

import json
import pathlib
import re
import subprocess
import sys
from collections import Counter
from typing import Any

import grain
import numpy as np
import pyarrow as pa
import pytest
from absl import flags

import datasetrt
from datasetrt.grain import DatasetSource, TokenIterDataset

REPO = pathlib.Path(__file__).resolve().parents[3]
EOS = 2

# Grain's worker processes read absl flags, which a program that is not an absl app never
# parses: what every non-absl user of grain.DataLoader(worker_count > 0) does first.
flags.FLAGS.mark_as_parsed()


@pytest.fixture(scope="module")
def sample_caches(tmp_path_factory):
    """Three caches of 1,500, 700 and 1 samples, many shards each."""
    root = tmp_path_factory.mktemp("grain-samples")
    paths = []
    for c, count in enumerate([1500, 700, 1]):
        path = root / f"part-{c}"
        schema = {"label": "int64", "name": "string"}
        with datasetrt.CacheWriter(
            path, source=f"grain-{c}", schema=schema, max_shard_bytes=8 << 10
        ) as writer:
            for i in range(count):
                writer.add(f"{c}:{i}:".encode() * (1 + i % 13), {"label": i, "name": f"s{i}"})
        paths.append(str(path))
    return paths


def test_a_grain_loader_with_two_workers_serves_exactly_an_epoch_of_the_caches(sample_caches):
    source = DatasetSource(sample_caches)
    dataset = source.dataset
    assert len(source) == len(dataset) == 2201
    sampler = grain.samplers.IndexSampler(len(source), shuffle=True, num_epochs=1, seed=7)
    loader = grain.DataLoader(data_source=source, sampler=sampler, worker_count=2)
    served: Counter[tuple[int, int]] = Counter()
    for record in loader:
        key = (int(record["cache_id"]), int(record["sample_id"]))
        served[key] += 1
        sample = dataset[key]
        assert record["payload"] == bytes(sample.payload)
        assert record["label"] == sample.metadata["label"] == key[1]
        assert record["name"] == f"s{key[1]}"
    # What the DatasetRT loader reads in an epoch on one rank, each sample once.
    epoch = Counter((s.cache_id, s.sample_id) for s in datasetrt.Loader(dataset, seed=7))
    assert served == epoch
    assert set(served.values()) == {1}


def test_hosts_sharded_by_grain_read_disjoint_parts_covering_the_dataset(sample_caches):
    source = DatasetSource(datasetrt.Dataset(sample_caches))
    seen = []
    for host in range(3):
        options = grain.sharding.ShardOptions(shard_index=host, shard_count=3, drop_remainder=False)
        sampler = grain.samplers.IndexSampler(
            len(source), shard_options=options, shuffle=True, num_epochs=1, seed=1
        )
        loader = grain.DataLoader(data_source=source, sampler=sampler, worker_count=0)
        seen.append({(r["cache_id"], r["sample_id"]) for r in loader})
    # Disjoint, even shares (Grain's IndexSampler drops the remainder of an uneven split).
    assert len(set().union(*seen)) == sum(map(len, seen))
    assert [len(s) for s in seen] == [len(source) // 3] * 3
    assert set().union(*seen) <= {source.key(i) for i in range(len(source))}


def test_the_source_maps_record_indices_to_keys_and_refuses_what_is_out_of_range(sample_caches):
    source = DatasetSource(sample_caches)
    ids = source.dataset.cache_ids
    assert source.key(0) == (ids[0], 0)
    assert source.key(1499) == (ids[0], 1499)
    assert source.key(1500) == (ids[1], 0)
    assert source.key(-1) == (ids[2], 0)
    with pytest.raises(IndexError, match="record 2201 is out of range for 2201"):
        source[2201]
    with pytest.raises(TypeError, match="not str"):
        source["3"]  # type: ignore[index]
    with pytest.raises(TypeError, match="not one path"):
        DatasetSource(sample_caches[0])
    assert repr(source) == "DatasetSource(3 caches, 2201 samples)"


@pytest.fixture(scope="module")
def token_caches(tmp_path_factory):
    root = tmp_path_factory.mktemp("grain-tokens")
    rng = np.random.default_rng(5)
    paths, docs = [], {}
    for c, count in enumerate([300, 200]):
        path = root / f"tokens-{c}"
        with datasetrt.TokenWriter(
            path, source=f"tokens-{c}", vocab_size=32_000, eos_id=EOS, max_shard_bytes=16 << 10
        ) as writer:
            for i in range(count):
                doc = rng.integers(3, 32_000, int(rng.integers(1, 900)), dtype=np.int64)
                writer.add(np.append(doc, EOS))
                docs[(c, i)] = doc
        paths.append(str(path))
    return paths


SETTINGS: dict[str, Any] = {"seq_len": 128, "batch_size": 4, "seed": 3, "workers": 1}


def stack(batches, name):
    return [b[name].copy() for b in batches]


def test_token_batches_through_grain_are_the_token_streams(token_caches):
    native = [
        pa.record_batch(b.arrow())
        .column("input_ids")
        .values.to_numpy()
        .reshape(len(b), b.seq_len)
        .copy()
        for b in datasetrt.TokenDataset(token_caches, rank=1, world_size=2, **SETTINGS)
    ]
    batches = list(TokenIterDataset(token_caches, rank=1, world_size=2, **SETTINGS))
    assert len(batches) == len(native) > 10
    for batch, ids in zip(batches, native):
        np.testing.assert_array_equal(batch["input_ids"], ids)
        assert batch["input_ids"].shape == (4, 128) or batch is batches[-1]
        assert batch["loss_mask"].dtype == np.bool_
        # Labels are the next tokens where the loss counts, within a document's piece.
        same = batch["segment_ids"][:, 1:] == batch["segment_ids"][:, :-1]
        same &= batch["loss_mask"][:, :-1]
        assert same.any() or batch["padding"].all()
        np.testing.assert_array_equal(
            batch["labels"][:, :-1][same], batch["input_ids"][:, 1:][same]
        )
        assert batch["cu_seqlens"][0] == 0
        assert batch["cu_seqlens"][-1] == batch["input_ids"].size


def test_a_grain_checkpoint_restores_exactly_and_on_another_topology(token_caches):
    dataset = TokenIterDataset(token_caches, rank=0, world_size=2, **SETTINGS)
    iterator = iter(dataset)
    for _ in range(5):
        next(iterator)
    # Grain checkpoints an iterator's state as JSON.
    state = json.loads(json.dumps(iterator.get_state()))
    rest = stack(list(iterator), "input_ids")

    restored = iter(TokenIterDataset(token_caches, rank=0, world_size=2, **SETTINGS))
    restored.set_state(state)
    again = stack(list(restored), "input_ids")
    assert len(again) == len(rest) > 0
    for a, b in zip(again, rest):
        np.testing.assert_array_equal(a, b)

    # The same state on one rank: the rest of the epoch's rows, none read twice.
    # The same state resumed on one rank reads the rest of the epoch's rows: as many as the
    # two ranks had left (which rows a topology cuts is its own; the token stream's tests
    # check their documents).
    def rows(batches):
        return sum(int((~batch["padding"]).sum()) for batch in batches)

    before = sum(
        rows(list(TokenIterDataset(token_caches, rank=rank, world_size=2, **SETTINGS))[:5])
        for rank in range(2)
    )
    single = iter(TokenIterDataset(token_caches, rank=0, world_size=1, **SETTINGS))
    single.set_state(state)
    whole = rows(TokenIterDataset(token_caches, rank=0, world_size=1, **SETTINGS))
    assert before > 0
    assert before + rows(single) == whole


def test_importing_datasetrt_grain_never_imports_torch():
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"  # `import torch` now raises ImportError
        "import datasetrt.grain\n"
        "assert sys.modules['torch'] is None\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def run_python(code: str, **env: str) -> str:
    """Runs `code` in a fresh interpreter (JAX is multithreaded: this process forks DataLoader
    workers, so JAX is never imported here)."""
    import os

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **env},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_host_shard_is_jaxs_process():
    code = (
        "import jax\n"
        "from datasetrt.grain import process_shard\n"
        "assert process_shard() == (jax.process_index(), jax.process_count()) == (0, 1)\n"
        "print('ok')\n"
    )
    assert run_python(code).strip() == "ok"


def test_the_jax_training_loop_of_the_docs_runs(token_caches, tmp_path):
    text = (REPO / "docs" / "jax.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "docs/jax.md has no python block"
    code = blocks[0] + "\nprint(steps, loss)\n"
    env = {"TOKEN_CACHES": ",".join(token_caches), "CHECKPOINT_DIR": str(tmp_path)}
    steps, loss = run_python(code, **env).split()
    assert int(steps) == 30
    assert np.isfinite(float(loss))
    state = json.loads((tmp_path / "data-state.json").read_text())
    # Run again: the loop resumes from the saved state, after the 30 batches already read.
    again = run_python(code, **env).split()
    assert int(again[0]) > 0
    assert json.loads((tmp_path / "data-state.json").read_text()) != state
