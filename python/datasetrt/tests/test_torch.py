"""datasetrt.torch.StreamingDataset with real PyTorch: DataLoader workers, DDP, resume."""

import os
import pickle
import socket
from typing import Any

import pyarrow as pa
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader

import datasetrt
from datasetrt._native import _clear_shard_views
from datasetrt.torch import ColumnarBatch, StreamingDataset, rank_and_world_size

from conftest import payload, write_cache

SIZES = {"a": 211, "b": 150, "c": 97}


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    root = tmp_path_factory.mktemp("torch")
    paths, offset = [], 0
    for name, n in SIZES.items():
        paths.append(str(write_cache(root / name, n, max_shard_bytes=2000, offset=offset)))
        offset += n
    return paths


def keys_of(loader):
    out: list[tuple[int, int]] = []
    for item in loader:
        if isinstance(item, list):
            out.extend(tuple(x["key"]) for x in item)
        else:
            out.append(tuple(item["key"]))
    return out


def reference(caches, **kw):
    """The keys of one rank's epoch from the native Loader (threads, not processes)."""
    dataset = datasetrt.Dataset(caches)
    return [s.key for s in datasetrt.Loader(dataset, **kw)]


def test_samples_carry_payload_metadata_and_transform(caches):
    ds = StreamingDataset(
        caches, seed=3, rank=0, world_size=1, transform=lambda s: (s["key"], len(s["payload"]))
    )
    items = list(DataLoader(ds, batch_size=None, num_workers=0))
    assert len(items) == len(ds) == sum(SIZES.values())
    ds_plain = StreamingDataset(caches, seed=3, rank=0, world_size=1)
    first = next(iter(ds_plain))
    cache_id, sample_id = first["key"]
    ids = datasetrt.Dataset(caches).cache_ids
    base = {ids[0]: 0, ids[1]: 211, ids[2]: 361}[cache_id]
    assert first["payload"] == payload(base + sample_id)
    assert first["metadata"]["label"] == (base + sample_id) % 10
    assert (tuple(items[0][0]), items[0][1]) == (first["key"], len(first["payload"]))


@pytest.mark.parametrize("batch_size", [None, 16])
def test_num_workers_0_2_3_yield_the_same_sequence(caches, batch_size):
    kw: dict[str, Any] = dict(
        seed=11, epoch=2, shuffle="full", rank=0, world_size=1, batch_size=batch_size, read_ahead=40
    )
    runs = {}
    for workers in (0, 2, 3):
        ds = StreamingDataset(caches, **kw)
        runs[workers] = keys_of(DataLoader(ds, batch_size=None, num_workers=workers))
    assert runs[0] == runs[2] == runs[3]
    assert len(runs[0]) == sum(SIZES.values()) == len(set(runs[0]))
    assert runs[0] == reference(caches, seed=11, epoch=2, shuffle="full")
    # A DataLoader collate_fn over the dataset's own batches (DataLoader batch_size=None: it is
    # applied to each batch, in the worker processes) sees them in the same order.
    if batch_size is not None:
        ds_aligned = StreamingDataset(caches, **kw)
        batched = list(
            DataLoader(
                ds_aligned,
                batch_size=None,
                num_workers=3,
                collate_fn=lambda b: [tuple(x["key"]) for x in b],
            )
        )
        assert [k for b in batched for k in b] == runs[0]


def test_columnar_batches_keep_the_order_and_the_bytes(caches):
    kw: dict[str, Any] = dict(seed=11, epoch=2, shuffle="full", rank=0, world_size=1)
    expected = reference(caches, **{k: v for k, v in kw.items() if k not in ("rank", "world_size")})
    ids = datasetrt.Dataset(caches).cache_ids
    base = {ids[0]: 0, ids[1]: 211, ids[2]: 361}
    for workers in (0, 2, 3):
        ds = StreamingDataset(caches, batch_size=50, collate="columnar", **kw)
        keys = []
        for batch in DataLoader(ds, batch_size=None, num_workers=workers):
            assert isinstance(batch, ColumnarBatch) and len(batch) <= 50
            assert batch["payload"].dtype == torch.uint8 and batch["offsets"].dtype == torch.int64
            assert batch["keys"].dtype == torch.uint64 and batch["keys"].shape[1] == 2
            assert len(batch["keys"]) == len(batch["padding"]) == len(batch["offsets"]) - 1
            assert batch["metadata"]["label"].dtype == torch.int64  # a column without nulls
            assert batch["metadata"]["score"].dtype == torch.float64
            assert batch["metadata"]["flag"].dtype == torch.bool
            assert batch["padding"].dtype == torch.bool and batch["steps"].dtype == torch.int64
            assert isinstance(batch["metadata"]["name"], list)  # a nullable utf8 column
            for j, key in enumerate(batch["keys"].tolist()):
                key = tuple(key)
                a, b = batch["offsets"][j].item(), batch["offsets"][j + 1].item()
                i = base[key[0]] + key[1]
                assert bytes(batch["payload"][a:b].numpy()) == payload(i)
                assert batch["metadata"]["label"][j].item() == i % 10
                assert batch["metadata"]["score"][j].item() == i / 4.0
                assert batch["metadata"]["flag"][j].item() == (i % 3 == 0)
                assert batch["metadata"]["name"][j] == (None if i % 5 == 0 else f"sample-{i}")
                keys.append(key)
        assert keys == expected, workers
    with pytest.raises(ValueError):
        StreamingDataset(caches, collate="columnar")


def test_weights_epochs_and_local_shuffle(caches):
    kw: dict[str, Any] = dict(
        seed=5, weights=[3, 1, 1], samples_per_epoch=300, rank=0, world_size=1
    )
    ds = StreamingDataset(caches, **kw)
    e0 = keys_of(DataLoader(ds, batch_size=None, num_workers=2))
    ds.set_epoch(1)
    e1 = keys_of(DataLoader(ds, batch_size=None, num_workers=2))
    assert len(e0) == len(e1) == 300 and e0 != e1
    assert e0 == reference(caches, seed=5, weights=[3, 1, 1], samples_per_epoch=300)
    assert e1 == reference(caches, seed=5, weights=[3, 1, 1], samples_per_epoch=300, epoch=1)


def test_a_schedule_reaches_the_workers_and_resumes(caches):
    schedule = [datasetrt.Phase(120, [1, 1, 1]), (180, [0.5, 0.0, 0.5])]
    ds = StreamingDataset(caches, seed=2, schedule=schedule, rank=0, world_size=1)
    assert ds.schedule == [(120, [1, 1, 1]), (180, [0.5, 0.0, 0.5])]
    expected = reference(caches, seed=2, schedule=schedule)
    assert len(ds) == len(expected) == 300
    assert keys_of(DataLoader(ds, batch_size=None, num_workers=2)) == expected
    ids = datasetrt.Dataset(caches).cache_ids
    assert not [k for k in expected[120:] if k[0] == ids[1]]
    again = pickle.loads(pickle.dumps(ds))
    assert keys_of(DataLoader(again, batch_size=None, num_workers=0)) == expected


def test_rank_from_environment(monkeypatch, caches):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    assert rank_and_world_size() == (1, 3)
    ds = StreamingDataset(caches)
    assert (ds.rank, ds.world_size) == (1, 3)
    assert keys_of(ds) == reference(caches, rank=1, world_size=3)
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert rank_and_world_size() == (0, 1)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_worker(rank, world, port, runs, out_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        results = {}
        for name, (paths, policy) in runs.items():
            ds = StreamingDataset(paths, seed=7, shuffle="full", policy=policy)
            assert (ds.rank, ds.world_size) == (rank, world)
            keys = []
            for item in DataLoader(ds, batch_size=None, num_workers=2):
                keys.append((tuple(item["key"]), bool(item["padding"])))
                # A collective per step: a rank that ran out early would hang here.
                t = torch.ones(1)
                dist.all_reduce(t)
                assert t.item() == world
            results[name] = {"keys": keys, "len": len(ds)}
            dist.barrier()
        torch.save(results, os.path.join(out_dir, f"{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_ddp_two_ranks_get_disjoint_equal_shares_covering_the_epoch(caches, tmp_path):
    """torch.multiprocessing, gloo on CPU, 2 ranks, 2 DataLoader workers each; an all_reduce
    per step proves no rank runs out early. An even epoch (458 samples), and an odd one (459)
    padded or dropped."""
    odd = caches + [str(write_cache(tmp_path / "one", 1, offset=9999))]
    runs = {"even": (caches, "pad"), "odd-pad": (odd, "pad"), "odd-drop": (odd, "drop")}
    world = 2
    mp.spawn(_ddp_worker, args=(world, _free_port(), runs, str(tmp_path)), nprocs=world, join=True)
    results = [torch.load(tmp_path / f"{r}.pt") for r in range(world)]
    expected_len = {"even": 229, "odd-pad": 230, "odd-drop": 229}
    expected_pads = {"even": 0, "odd-pad": 1, "odd-drop": 0}
    for name, (paths, policy) in runs.items():
        shares = [r[name] for r in results]
        assert [len(s["keys"]) for s in shares] == [expected_len[name]] * world
        assert [s["len"] for s in shares] == [expected_len[name]] * world
        real = [{k for k, pad in s["keys"] if not pad} for s in shares]
        assert not (real[0] & real[1])  # disjoint
        epoch = set(reference(paths, seed=7, shuffle="full"))
        covered = real[0] | real[1]
        if name == "odd-drop":
            assert covered < epoch and len(covered) == len(epoch) - 1
        else:
            assert covered == epoch  # covers the epoch
        assert sum(pad for s in shares for _, pad in s["keys"]) == expected_pads[name]
        for r in range(world):
            ref = reference(paths, seed=7, shuffle="full", rank=r, world_size=world, policy=policy)
            assert [k for k, _ in shares[r]["keys"]] == ref


def _shard_of(paths):
    """(cache position, sample id) -> shard id, from each cache's index.bin (24-byte rows,
    the shard id first)."""
    import struct

    shard = {}
    for position, path in enumerate(paths):
        rows = open(os.path.join(path, "index.bin"), "rb").read()
        for i in range(len(rows) // 24):
            shard[(position, i)] = struct.unpack_from("<Q", rows, 24 * i)[0]
    return shard


def _ddp_nodes_worker(rank, world, port, paths, out_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    # As torchrun sets it on each of 2 nodes of 2 ranks.
    os.environ["LOCAL_WORLD_SIZE"] = "2"
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        ds = StreamingDataset(paths, seed=5)
        assert (ds.rank, ds.world_size, ds.ranks_per_node) == (rank, world, 2)
        keys = []
        for item in DataLoader(ds, batch_size=None, num_workers=2):
            keys.append((tuple(item["key"]), bool(item["padding"])))
            t = torch.ones(1)
            dist.all_reduce(t)
            assert t.item() == world
        torch.save({"keys": keys, "len": len(ds)}, os.path.join(out_dir, f"nodes-{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_ddp_on_two_nodes_reads_each_shard_on_one_node(tmp_path):
    """4 gloo ranks as 2 nodes of 2 (LOCAL_WORLD_SIZE=2), 2 DataLoader workers each: equal
    disjoint shares covering the epoch, and the nodes' shards disjoint but for at most the one
    shard where their two shares meet."""
    paths = [str(write_cache(tmp_path / "c", 960, max_shard_bytes=20 * 120))]
    shard_of = _shard_of(paths)
    shards = len(set(shard_of.values()))
    counts: dict[int, int] = {}
    for s in shard_of.values():
        counts[s] = counts.get(s, 0) + 1
    world = 4
    mp.spawn(
        _ddp_nodes_worker, args=(world, _free_port(), paths, str(tmp_path)), nprocs=world, join=True
    )
    results = [torch.load(tmp_path / f"nodes-{r}.pt") for r in range(world)]
    assert [len(r["keys"]) for r in results] == [240] * world
    assert [r["len"] for r in results] == [240] * world
    real = [{k for k, pad in r["keys"] if not pad} for r in results]
    assert sum(map(len, real)) == 960 == len(set().union(*real))
    dataset = datasetrt.Dataset(paths)
    position = {dataset.caches[0].cache_id: 0}
    node_shards: list[set[int]] = [set(), set()]
    for rank, keys in enumerate(real):
        node_shards[rank // 2].update(shard_of[(position[c], s)] for c, s in keys)
    split = len(node_shards[0] & node_shards[1])
    # A shard may be split only where the two nodes' equal shares meet.
    assert split <= 1, (split, shards, counts)
    assert len(node_shards[0] | node_shards[1]) == shards
    for rank in range(world):
        ref = reference(paths, seed=5, rank=rank, world_size=world, ranks_per_node=2)
        assert [k for k, _ in results[rank]["keys"]] == ref


def test_stateful_dataloader_resume_on_two_nodes_from_2_to_3_workers(caches, monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    kw: dict[str, Any] = dict(seed=3, rank=3, world_size=4)
    full = keys_of(DataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=0))
    assert full == reference(caches, seed=3, rank=3, world_size=4, ranks_per_node=2)
    loader = StatefulDataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=2)
    it = iter(loader)
    first = [tuple(next(it)["key"]) for _ in range(41)]
    state = loader.state_dict()
    del it, loader
    ds = StreamingDataset(caches, **kw)
    ds.load_state_dict(state)
    assert first + keys_of(StatefulDataLoader(ds, batch_size=None, num_workers=3)) == full


def test_stateful_dataloader_resume_with_other_num_workers(caches):
    kw: dict[str, Any] = dict(seed=9, shuffle="full", rank=0, world_size=1)
    full = keys_of(DataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=0))

    loader = StatefulDataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=2)
    it = iter(loader)
    first = [tuple(next(it)["key"]) for _ in range(137)]
    state = loader.state_dict()
    del it, loader
    assert first == full[:137]

    # Any other num_workers: load the whole loader state into a fresh dataset.
    ds = StreamingDataset(caches, **kw)
    ds.load_state_dict(state)
    rest = keys_of(StatefulDataLoader(ds, batch_size=None, num_workers=3))
    assert first + rest == full

    # The same num_workers: StatefulDataLoader's own load_state_dict.
    again = StatefulDataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=2)
    again.load_state_dict(state)
    assert first + keys_of(again) == full

    # Single-process state, resumed with 2 workers.
    single = StatefulDataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=0)
    it = iter(single)
    head = [tuple(next(it)["key"]) for _ in range(50)]
    s_state = single.state_dict()
    ds = StreamingDataset(caches, **kw)
    ds.load_state_dict(s_state)
    assert head + keys_of(DataLoader(ds, batch_size=None, num_workers=2)) == full


def test_stateful_dataloader_resume_of_batches(caches):
    kw: dict[str, Any] = dict(seed=2, rank=0, world_size=1, batch_size=8)
    full = keys_of(DataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=0))
    loader = StatefulDataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=3)
    it = iter(loader)
    first = [tuple(x["key"]) for _ in range(10) for x in next(it)]
    state = loader.state_dict()
    del it, loader
    ds = StreamingDataset(caches, **kw)
    ds.load_state_dict(state)
    assert first + keys_of(DataLoader(ds, batch_size=None, num_workers=2)) == full


def test_native_loader_state_resumes_a_streaming_dataset(caches):
    dataset = datasetrt.Dataset(caches)
    loader = datasetrt.Loader(dataset, seed=4, workers=2)
    head = [next(loader).key for _ in range(100)]
    ds = StreamingDataset(dataset, seed=4, rank=0, world_size=1)
    ds.load_state_dict(loader.state_dict())
    assert head + keys_of(DataLoader(ds, batch_size=None, num_workers=3)) == reference(
        caches, seed=4
    )


def test_pickling_carries_paths_not_mappings(caches):
    import pickle

    ds = StreamingDataset(caches, seed=1, rank=0, world_size=1)
    list(ds)
    clone = pickle.loads(pickle.dumps(ds))
    assert clone._dataset is None and clone.paths == caches
    dataset = datasetrt.Dataset(caches)
    assert pickle.loads(pickle.dumps(dataset)).cache_ids == dataset.cache_ids
    with pytest.raises(TypeError):
        pickle.dumps(dataset.caches[0])


def _columnar_items(loader):
    """Every sample of a columnar DataLoader: (key, payload bytes, metadata row, padding)."""
    out = []
    for batch in loader:
        assert isinstance(batch, ColumnarBatch)
        meta = batch["metadata"]
        payloads = batch["payloads"]
        whole, offsets = batch["payload"], batch["offsets"].tolist()
        assert len(payloads) == len(batch) == len(offsets) - 1 == len(batch["keys"])
        for j, key in enumerate(batch["keys"].tolist()):
            data = bytes(payloads[j])
            # The concatenated form holds the same bytes.
            assert bytes(whole[offsets[j] : offsets[j + 1]].numpy()) == data
            row_ = {
                c: (v[j].item() if isinstance(v, torch.Tensor) else v[j]) for c, v in meta.items()
            }
            out.append((tuple(key), data, row_, bool(batch["padding"][j]), int(batch["steps"][j])))
    return out


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_locations_transfer_yields_the_same_items_as_bytes(caches, tmp_path_factory, compression):
    paths = caches
    if compression == "lz4":
        root = tmp_path_factory.mktemp("lz4")
        paths = [
            str(write_cache(root / "x", 120, compression="lz4", max_shard_bytes=3000)),
            caches[1],  # an uncompressed cache beside it
        ]
    kw: dict[str, Any] = dict(
        seed=11, epoch=2, shuffle="full", rank=0, world_size=1, batch_size=37, collate="columnar"
    )
    expected = _columnar_items(
        DataLoader(StreamingDataset(paths, **kw), batch_size=None, num_workers=0)
    )
    assert len(expected) == len(reference(paths, seed=11, epoch=2, shuffle="full"))
    assert [k for k, *_ in expected] == reference(paths, seed=11, epoch=2, shuffle="full")
    for workers in (0, 2, 3):
        ds = StreamingDataset(paths, transfer="locations", **kw)
        got = _columnar_items(DataLoader(ds, batch_size=None, num_workers=workers))
        assert got == expected, workers
    # Uncompressed payloads are zero-copy views of the mapped shard files.
    batch = next(
        iter(
            DataLoader(
                StreamingDataset(caches, transfer="locations", **kw), batch_size=None, num_workers=2
            )
        )
    )
    assert all(isinstance(p, memoryview) and p.readonly for p in batch["payloads"])
    assert "located in" in repr(batch)


def test_locations_transfer_pads_drops_and_splits_ranks_like_bytes(caches, tmp_path):
    odd = caches + [str(write_cache(tmp_path / "one", 1, offset=9999))]
    for policy in ("pad", "drop"):
        for rank in (0, 1):
            kw: dict[str, Any] = dict(
                seed=7,
                shuffle="full",
                rank=rank,
                world_size=2,
                policy=policy,
                batch_size=16,
                collate="columnar",
            )
            a = _columnar_items(
                DataLoader(StreamingDataset(odd, **kw), batch_size=None, num_workers=2)
            )
            b = _columnar_items(
                DataLoader(
                    StreamingDataset(odd, transfer="locations", **kw),
                    batch_size=None,
                    num_workers=3,
                )
            )
            assert a == b
            ref = reference(odd, seed=7, shuffle="full", rank=rank, world_size=2, policy=policy)
            assert [k for k, *_ in b] == ref


def test_locations_transfer_resumes_with_other_num_workers(caches):
    kw: dict[str, Any] = dict(
        seed=9,
        shuffle="full",
        rank=0,
        world_size=1,
        batch_size=10,
        collate="columnar",
        transfer="locations",
    )

    # `steps` count from where a (resumed) plan starts: compare the rest.
    def items(loader):
        return [item[:4] for item in _columnar_items(loader)]

    full = items(DataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=0))
    loader = StatefulDataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=2)
    it = iter(loader)
    first = items([next(it) for _ in range(13)])
    state = loader.state_dict()
    del it, loader
    assert first == full[:130]
    ds = StreamingDataset(caches, **kw)
    ds.load_state_dict(state)
    assert first + items(StatefulDataLoader(ds, batch_size=None, num_workers=3)) == full
    again = StatefulDataLoader(StreamingDataset(caches, **kw), batch_size=None, num_workers=2)
    again.load_state_dict(state)
    assert first + items(again) == full


def test_columnar_reads_take_ranges_and_cross_as_arrow_without_objects(caches):
    plan = StreamingDataset(
        caches, batch_size=64, collate="columnar", rank=0, world_size=1, seed=3
    )._plan()
    n = len(plan)
    by_range = plan.read_columnar(range(5, n, 3))
    by_list = plan.read_columnar(list(range(5, n, 3)))
    assert by_range == by_list
    assert plan.read_located(range(0, 7)) == plan.read_located([0, 1, 2, 3, 4, 5, 6])
    # One Arrow record batch, not one Python object per sample.
    record = pa.record_batch(by_range)
    assert record.schema.names == ["payload", "key", "padding", "step", "metadata"]
    assert record.column("payload").type == pa.large_binary()
    assert record.column("key").type == pa.list_(pa.field("item", pa.uint64(), False), 2)
    assert record.column("step").to_pylist() == list(range(5, n, 3))
    metadata = record.column("metadata").type
    assert {f.name: f.type for f in metadata} == {
        "label": pa.int64(),
        "score": pa.float64(),
        "flag": pa.bool_(),
        "name": pa.string(),
    }
    batch = ColumnarBatch(by_range)
    assert batch.arrow.equals(record)
    assert batch["steps"].tolist() == list(range(5, n, 3))
    assert not batch["padding"].any()
    # The tensors are views of the batch's Arrow buffers.
    assert batch["payload"].data_ptr() == record.column("payload").buffers()[2].address
    assert batch["keys"].data_ptr() == record.column("key").values.buffers()[1].address
    label = record.column("metadata").field("label")
    assert batch["metadata"]["label"].data_ptr() == label.buffers()[1].address
    assert isinstance(batch["metadata"]["name"], list)  # nullable utf8 stays a list
    # A pickled batch (how a DataLoader worker hands it over) is the same batch.
    again = pickle.loads(pickle.dumps(by_range))
    assert again == by_range and pa.record_batch(again).equals(record)
    plan.will_need(range(0, n))  # a hint: a no-op for local caches
    with pytest.raises(ValueError):
        plan.read_columnar(range(4, 0, -1))
    with pytest.raises(IndexError):
        plan.read_columnar(range(n, n + 1))


def test_a_column_of_different_types_across_caches_is_a_union(tmp_path):
    with datasetrt.CacheWriter(tmp_path / "ints", source="ints", schema={"v": "int64"}) as w:
        for i in range(4):
            w.add(b"i%d" % i, v=i)
    schema = {"v": "utf8", "w": "bool?"}
    with datasetrt.CacheWriter(tmp_path / "texts", source="texts", schema=schema) as w:
        for i in range(3):
            w.add(b"t%d" % i, v=f"s{i}", w=None)
    ds = StreamingDataset(
        [str(tmp_path / "ints"), str(tmp_path / "texts")],
        batch_size=7,
        collate="columnar",
        rank=0,
        world_size=1,
        shuffle="none",
    )
    (batch,) = list(DataLoader(ds, batch_size=None, num_workers=0))
    record = batch.arrow
    assert pa.types.is_union(record.column("metadata").type.field("v").type)
    assert record.column("metadata").type.field("w").type == pa.null()
    expected = {bytes(p): v for p, v in zip(batch["payloads"], batch["metadata"]["v"])}
    assert expected == {b"i%d" % i: i for i in range(4)} | {b"t%d" % i: f"s{i}" for i in range(3)}
    assert batch["metadata"]["w"] == [None] * 7


def test_locations_transfer_options_and_a_cut_shard(tmp_path):
    path = str(write_cache(tmp_path / "c", 40, max_shard_bytes=100_000))
    with pytest.raises(ValueError):
        StreamingDataset([path], transfer="locations")  # needs collate="columnar"
    with pytest.raises(ValueError):
        StreamingDataset([path], batch_size=4, collate="columnar", transfer="pigeon")
    ds = StreamingDataset(
        [path], rank=0, world_size=1, batch_size=40, collate="columnar", transfer="locations"
    )
    plan = ds._plan()
    raw = plan.read_located(list(range(len(plan))))
    batch = pickle.loads(pickle.dumps(ColumnarBatch(raw)))
    # A mapping of the shard file as it is now (another process maps it for itself).
    import datasetrt.torch as dt

    _clear_shard_views()
    shards = dt._shard_paths(raw)
    shard = shards[0]
    # What a worker saw of the shard file: the training process maps that file or refuses.
    seen = dt._shard_identities(shards)
    checked = ColumnarBatch(raw, seen)
    assert bytes(checked["payloads"][0]) == payload(int(checked["keys"][0][1]))
    with open(shard, "rb") as f:
        original = f.read()
    with open(shard + ".new", "wb") as f:
        f.write(original[::-1])
    os.replace(shard + ".new", shard)  # another file at the same path
    # This process still maps the file the worker checked: its bytes, not the new file's.
    again = ColumnarBatch(raw, seen)
    assert bytes(again["payloads"][0]) == payload(int(again["keys"][0][1]))
    _clear_shard_views()  # a process that maps it now finds another file
    with pytest.raises(datasetrt.CorruptCacheError) as info:
        ColumnarBatch(raw, seen)["payloads"]
    assert "changed" in info.value.reason
    with open(shard + ".new", "wb") as f:
        f.write(original)
    os.replace(shard + ".new", shard)
    _clear_shard_views()
    size = os.path.getsize(shard)
    with open(shard, "r+b") as f:
        f.truncate(size // 2)
    try:
        with pytest.raises(datasetrt.CorruptCacheError) as info:
            batch["payloads"]
        assert "past the end" in info.value.reason
    finally:
        _clear_shard_views()
