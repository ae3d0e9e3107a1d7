"""datasetrt.TokenDataset and datasetrt.torch.TokenStreamingDataset over real token caches:
the tensors of every batch against the documents, a DataLoader with 0 and 2 workers giving the
same windows, StatefulDataLoader resumes, packing against Grain's own packers on the same
documents and bin size, and the refusals (docs/tokens.md)."""

import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import grain
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader

import datasetrt
from datasetrt.torch import TokenStreamingDataset, TokenTensors, document_attention_mask

EOS = 2


def documents(count, vocab, seed, longest=20_000):
    """Long-tailed lengths from 1 to `longest`; ids never the EOS."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(1 + rng.pareto(1.1, count) * 30, longest).astype(np.int64)
    return [rng.integers(3, vocab, n, dtype=np.int64) for n in lengths]


def write(path, docs, vocab):
    with datasetrt.TokenWriter(
        path, source=path.name, vocab_size=vocab, max_shard_bytes=16 << 10
    ) as writer:
        for doc in docs:
            writer.add(doc)
    return path


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    root = tmp_path_factory.mktemp("token-caches")
    specs = [("a", 150, 50_000, 1), ("b", 120, 50_000, 2), ("c", 100, 100_000, 3)]
    out = {}
    for name, count, vocab, seed in specs:
        docs = documents(count, vocab, seed)
        out[str(write(root / name, docs, vocab))] = docs
    return out


def by_key(caches):
    """Each document (with its EOS) by (cache_id, sample_id)."""
    ds = datasetrt.Dataset(list(caches))
    return {
        (cache_id, i): np.append(doc, EOS)
        for cache_id, docs in zip(ds.cache_ids, caches.values())
        for i, doc in enumerate(docs)
    }


def check(batch, docs):
    """Checks every tensor of a TokenTensors against the documents; returns its input
    stretches (key, start, length)."""
    ids, labels = batch["input_ids"], batch["labels"]
    rows, s = ids.shape
    stretches = []
    cu = []
    for r, pieces in enumerate(batch["documents"]):
        tokens, segment = [], []
        for n, (cache_id, sample_id, start, length) in enumerate(pieces):
            tokens.extend(docs[(cache_id, sample_id)][start : start + length])
            segment.extend([n + 1] * length)
            at = len(tokens) - length
            if at < s:
                cu.append(r * s + at)
                stretches.append(((cache_id, sample_id), start, min(length, s - at)))
        if len(tokens) < s:
            cu.append(r * s + len(tokens))
        real = min(len(tokens), s)
        assert ids[r, :real].tolist() == tokens[:real]
        assert batch["segment_ids"][r, :real].tolist() == segment[:real]
        assert (batch["segment_ids"][r, real:] == 0).all()
        for i in range(s):
            same = i + 1 < len(tokens) and segment[i + 1] == segment[i]
            assert bool(batch["loss_mask"][r, i]) == same
            assert labels[r, i].item() == (tokens[i + 1] if same else -100)
    cu.append(rows * s)
    assert batch["cu_seqlens"].tolist() == cu
    assert batch["cu_seqlens"].dtype == torch.int32
    assert batch["max_seqlen"] == int(batch["cu_seqlens"].diff().max())
    return stretches


def test_four_ranks_read_every_token_of_every_document_once(caches):
    docs = by_key(caches)
    stretches = []
    for rank in range(4):
        ds = TokenStreamingDataset(
            list(caches),
            seq_len=128,
            eos_id=EOS,
            batch_size=8,
            rank=rank,
            world_size=4,
            ranks_per_node=2,
            window_block=8,
        )
        for batch in DataLoader(ds, batch_size=None):
            assert isinstance(batch, TokenTensors)
            stretches.extend(check(batch, docs))
    seen: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for key, start, length in stretches:
        seen.setdefault(key, []).append((start, length))
    assert len(seen) == len(docs)
    for key, parts in seen.items():
        at = 0
        for start, length in sorted(parts):
            assert start == at, key
            at += length
        assert at == len(docs[key]), key


def windows(loader):
    return [
        (tuple(b["steps"].tolist()), b["input_ids"].numpy().tobytes(), b["labels"].sum().item())
        for b in loader
    ]


def stream(caches, **kwargs):
    settings: dict[str, Any] = dict(
        seq_len=64, eos_id=EOS, batch_size=4, rank=1, world_size=2, ranks_per_node=1
    )
    settings.update(kwargs)
    return TokenStreamingDataset(list(caches), **settings)


def test_a_dataloader_with_0_and_2_workers_gives_the_same_windows(caches):
    ds = stream(caches)
    alone = windows(DataLoader(ds, batch_size=None, num_workers=0))
    two = windows(DataLoader(ds, batch_size=None, num_workers=2))
    assert len(alone) == len(ds) > 10
    assert alone == two
    # The same windows as datasetrt.TokenDataset's, and as a batch pickled and rebuilt.
    direct = datasetrt.TokenDataset(
        list(caches), seq_len=64, eos_id=EOS, batch_size=4, rank=1, world_size=2, workers=0
    )
    batches = list(direct)
    assert [len(b) for b in batches] == [len(b[0]) for b in alone]
    again = pickle.loads(pickle.dumps(batches[3]))
    assert TokenTensors(again)["input_ids"].numpy().tobytes() == alone[3][1]
    # A batch whose tensors were made pickles whole too (its compact tokens are kept).
    used = TokenTensors(batches[4])
    labels = used["labels"].clone()
    rebuilt = pickle.loads(pickle.dumps(used))
    assert torch.equal(rebuilt["labels"], labels)
    assert rebuilt["input_ids"].numpy().tobytes() == alone[4][1]


def slot_mappings():
    """The address ranges of this process's mappings of shared-memory slot arenas."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "datasetrt-slots-" in line:
                start, end = line.split()[0].split("-")
                ranges.append((int(start, 16), int(end, 16)))
    return ranges


def in_a_slot(tensor, ranges):
    return any(start <= tensor.data_ptr() < end for start, end in ranges)


def slot_files():
    shm = Path("/dev/shm")
    return {p.name for p in shm.glob("datasetrt-slots-*")} if shm.is_dir() else set()


def test_workers_hand_batches_over_in_shared_memory_and_fall_back_when_it_is_held(caches):
    docs = by_key(caches)
    ds = stream(caches, rank=0, world_size=1, batch_size=8, seq_len=128)
    alone = windows(DataLoader(ds, batch_size=None, num_workers=0))
    files = slot_files()
    # Each batch dropped before the next: every one arrives in a slot, its columns derived by
    # a worker and read in place, and right.
    in_slots = 0
    for batch in DataLoader(ds, batch_size=None, num_workers=2):
        stretches = check(batch, docs)
        assert stretches
        in_slots += all(in_a_slot(batch[name], slot_mappings()) for name in TokenTensors._TENSORS)
    assert in_slots == len(alone) > 10
    # Every batch kept: the workers run out of free slots and send the rest through the pipe;
    # the windows are the same either way.
    kept = list(DataLoader(ds, batch_size=None, num_workers=2))
    ranges = slot_mappings()
    placed = [in_a_slot(b["input_ids"], ranges) for b in kept]
    assert 0 < sum(placed) <= 2 * 4 < len(kept), placed
    assert windows(kept) == alone
    for batch in kept:
        check(batch, docs)
    # A batch received from a slot pickles whole (its tokens rebuilt from its input_ids).
    again = pickle.loads(pickle.dumps(kept[placed.index(True)]))
    assert again["input_ids"].numpy().tobytes() == alone[placed.index(True)][1]
    # The training process unlinked each arena when it mapped it: nothing is left in /dev/shm.
    assert slot_files() <= files


def test_int32_ids_are_the_int64_ids_in_half_the_bytes(caches):
    docs = by_key(caches)
    wide = [
        (b["input_ids"].clone(), b["labels"].clone(), b["position_ids"].clone())
        for b in DataLoader(stream(caches), batch_size=None)
    ]
    names = ("input_ids", "labels", "position_ids")
    for workers in (0, 2):
        # Every batch kept: with 2 workers some arrive in slots and the rest through the pipe.
        narrow = list(
            DataLoader(stream(caches, ids_dtype="int32"), batch_size=None, num_workers=workers)
        )
        assert len(narrow) == len(wide) > 10
        ranges = slot_mappings()
        placed = sum(in_a_slot(b["input_ids"], ranges) for b in narrow)
        assert (placed > 0) == (workers > 0)
        for batch, columns in zip(narrow, wide):
            for name, expected in zip(names, columns):
                assert batch[name].dtype == torch.int32, name
                assert torch.equal(batch[name].long(), expected), name
            check(batch, docs)
        # The tensors are the batch's own memory, writable in place (a slot's too).
        narrow[0]["labels"][0, 0] = -100
        assert narrow[0]["labels"][0, 0].item() == -100
    with pytest.raises(ValueError, match='ids_dtype must be "int64" or "int32", not "int16"'):
        next(iter(DataLoader(stream(caches, ids_dtype="int16"), batch_size=None)))


@pytest.mark.parametrize("workers", [0, 2])
def test_a_stateful_dataloader_resumes_exactly(caches, workers):
    ds = stream(caches)
    reference = windows(StatefulDataLoader(ds, batch_size=None, num_workers=workers))
    loader = StatefulDataLoader(stream(caches), batch_size=None, num_workers=workers)
    seen = []
    for i, batch in enumerate(loader):
        seen.append(
            (
                tuple(batch["steps"].tolist()),
                batch["input_ids"].numpy().tobytes(),
                batch["labels"].sum().item(),
            )
        )
        if i == 6:
            state = loader.state_dict()
            break
    resumed = StatefulDataLoader(stream(caches), batch_size=None, num_workers=workers)
    resumed.load_state_dict(state)
    assert seen + windows(resumed) == reference
    # A whole loader state resumes without worker processes too; `steps` then count from
    # where the resumed plan starts, so compare the rest.
    other = stream(caches)
    other.load_state_dict(state)
    rest = windows(DataLoader(other, batch_size=None))
    assert [w[1:] for w in seen + rest] == [w[1:] for w in reference]


def test_a_loader_state_resumes_on_another_topology_through_epoch_state(caches):
    # The epoch as two nodes start it (their cuts stay the epoch's on any later topology).
    everything = loss_rows(
        batch
        for rank in range(2)
        for batch in DataLoader(stream(caches, rank=rank), batch_size=None)
    )
    seen, states = [], []
    for rank in range(2):
        ds = stream(caches, rank=rank)
        loader = StatefulDataLoader(ds, batch_size=None, num_workers=2)
        for i, batch in enumerate(loader):
            seen.append(batch)
            if i == 4:
                states.append(ds.epoch_state(loader.state_dict()))
                break
    assert states[0] == states[1]
    rest = stream(caches, rank=0, world_size=1)
    rest.load_state_dict(states[0])
    seen.extend(DataLoader(rest, batch_size=None))
    assert loss_rows(seen) == everything


def loss_rows(batches):
    """Each row that carries loss, as (input_ids, labels) bytes, with its multiplicity; from
    TokenBatch objects or TokenTensors."""
    out: Counter[tuple[bytes, bytes]] = Counter()
    for batch in batches:
        if isinstance(batch, TokenTensors):
            ids, labels = batch["input_ids"].numpy(), batch["labels"].numpy()
            padding = batch["padding"].tolist()
        else:
            record = _record(batch.arrow())
            ids = np.asarray(record.column("input_ids").flatten()).reshape(len(record), -1)
            labels = np.asarray(record.column("labels").flatten()).reshape(len(record), -1)
            padding = record.column("padding").to_pylist()
        for row, pad in enumerate(padding):
            if not pad:
                out[(ids[row].tobytes(), labels[row].tobytes())] += 1
    return out


def test_token_dataset_state_resumes_on_another_topology(caches):
    first = datasetrt.TokenDataset(list(caches), seq_len=64, batch_size=4, world_size=1)
    everything = loss_rows(first)
    assert set(everything.values()) == {1}
    first = datasetrt.TokenDataset(list(caches), seq_len=64, batch_size=4, world_size=1)
    it = iter(first)
    seen = [next(it) for _ in range(9)]
    state = first.state_dict()
    assert state["seq_len"] == 64 and state["mode"] == "concat"
    for r in range(3):
        later = datasetrt.TokenDataset(
            list(caches), seq_len=64, batch_size=4, rank=r, world_size=3, state=state
        )
        seen.extend(later)
    assert loss_rows(seen) == everything


def _record(batch):
    import pyarrow as pa

    return pa.record_batch(batch)


def grain_padding(docs, seq_len, bins, packer):
    ds = grain.MapDataset.source([{"tokens": d} for d in docs]).to_iter_dataset()
    packed = packer(
        ds, length_struct={"tokens": seq_len}, num_packing_bins=bins, shuffle_bins=False
    )
    rows = list(packed)
    segments = np.stack([r["tokens_segment_ids"] for r in rows])
    # Every document is packed whole, once.
    assert int((segments > 0).sum()) == sum(len(d) for d in docs)
    return float((segments == 0).mean())


@pytest.mark.parametrize("mode", ["first_fit", "best_fit"])
@pytest.mark.parametrize("bins", [4, 32])
def test_packing_pads_no_more_than_grains_packers(tmp_path, mode, bins):
    seq_len = 256
    docs = documents(3000, 50_000, 7, longest=seq_len)
    path = write(tmp_path / "docs", docs, 50_000)
    ds = datasetrt.TokenDataset(
        [path],
        seq_len=seq_len,
        mode=mode,
        packing_bins=bins,
        shuffle="sequential",
        window_block=1,
        batch_size=64,
        workers=0,
    )
    held: dict[int, int] = {}
    for batch in ds:
        record = _record(batch.arrow())
        for pieces in record.column("documents").to_pylist():
            assert sum(p["length"] for p in pieces) <= seq_len
            for p in pieces:
                assert p["start"] == 0, "a document that fits was split"
                held[p["sample_id"]] = held.get(p["sample_id"], 0) + 1
                assert p["length"] == len(docs[p["sample_id"]])
    assert held == {i: 1 for i in range(len(docs))}
    packer = {
        "first_fit": grain.experimental.FirstFitPackIterDataset,
        "best_fit": grain.experimental.BestFitPackIterDataset,
    }[mode]
    theirs = grain_padding(docs, seq_len, bins, packer)
    ours = ds.padding_fraction
    assert ours <= theirs + 0.005, f"{mode}, {bins} bins: {ours:.4f} vs Grain's {theirs:.4f}"


def test_attention_mask_keeps_each_document_to_itself():
    segments = torch.tensor([[1, 1, 2, 2, 2, 0]])
    mask = document_attention_mask(segments)[0, 0]
    assert mask.shape == (6, 6)
    assert mask[3].tolist() == [False, False, True, True, False, False]
    assert mask[5].tolist() == [False] * 5 + [True]
    assert mask.diagonal().all()


def test_refusals_are_typed_and_name_what_and_where(tmp_path):
    docs = [np.arange(3, 3 + n) for n in (5, 70, 9)]
    path = write(tmp_path / "c", docs, 1000)
    with pytest.raises(ValueError, match="seq_len"):
        datasetrt.TokenDataset([path], seq_len=0)
    with pytest.raises(datasetrt.TokenStreamError) as refused:
        datasetrt.TokenDataset([path], seq_len=64, mode="best_fit", long_docs="refuse")
    assert refused.value.kind == "long_document"
    assert refused.value.sample_id == 1
    assert str(path) in str(refused.value.path)
    # One document of three ends with token 11: an EOS of 11 cannot be decided by length.
    mixed = write(tmp_path / "m", [np.array([4, 11]), np.array([5, 6]), np.array([11])], 1000)
    with pytest.raises(datasetrt.TokenStreamError) as mixed_eos:
        datasetrt.TokenDataset([mixed], seq_len=8, eos_id=11)
    assert mixed_eos.value.kind == "boundary"
    assert "2 of 3 documents end with the EOS 11" in str(mixed_eos.value)
    with pytest.raises(ValueError, match="mode"):
        datasetrt.TokenDataset([path], seq_len=8, mode="split")
    state = datasetrt.TokenDataset([path], seq_len=8).state_dict()
    with pytest.raises(datasetrt.DatasetError, match="seq_len 8"):
        datasetrt.TokenDataset([path], seq_len=16, state=state)


def test_weights_by_source_name_are_the_same_as_weights_in_cache_order(tmp_path):
    paths = []
    for i, (source, count) in enumerate([("web", 300), ("code", 150)]):
        path = tmp_path / source
        with datasetrt.TokenWriter(path, source=source, vocab_size=1000) as writer:
            for doc in documents(count, 1000, seed=10 + i, longest=400):
                writer.add(doc)
        paths.append(path)
    budget = 60_000

    def plan(weights):
        return datasetrt.TokenDataset(
            paths, seq_len=64, weights=weights, tokens_per_epoch=budget, workers=0
        )

    by_name = plan({"code": 0.3, "web": 0.7}).source_tokens
    assert by_name == plan([0.7, 0.3]).source_tokens
    # Each source within one document (400 tokens at most) of its share of the budget.
    assert abs(by_name[0] - 0.7 * budget) <= 400
    assert abs(by_name[1] - 0.3 * budget) <= 400
    with pytest.raises(KeyError, match='"news", which none of the caches holds'):
        plan({"web": 0.5, "code": 0.3, "news": 0.2})
    with pytest.raises(KeyError, match='no share to the source "code"'):
        plan({"web": 1.0})
