"""datasetrt.Loader: reproducible order, equal shares, resume; and threads sharing a cache."""

import threading

import pytest

import datasetrt

from conftest import payload, row, write_cache


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("loader")
    paths = [
        write_cache(root / "a", 700, max_shard_bytes=5000),
        write_cache(root / "b", 301, offset=700, compression="lz4"),
    ]
    return datasetrt.Dataset(paths)


def keys(loader):
    return [s.key for s in loader]


def test_order_does_not_depend_on_workers(dataset):
    base = keys(datasetrt.Loader(dataset, seed=1, workers=0))
    assert len(base) == 1001 == len(set(base))
    for workers in (1, 2, 3):
        assert keys(datasetrt.Loader(dataset, seed=1, workers=workers, prefetch=64)) == base
    assert keys(datasetrt.Loader(dataset, seed=2)) != base


def test_samples_are_right(dataset):
    ids = dataset.cache_ids
    for s in datasetrt.Loader(dataset, seed=1, shuffle="sequential"):
        i = s.sample_id + (700 if s.cache_id == ids[1] else 0)
        assert bytes(s.payload) == payload(i) and s.metadata == row(i)
        assert s.step == s.global_position and not s.padding


def test_ranks_have_equal_disjoint_shares(dataset):
    world = 4
    shares = [
        list(datasetrt.Loader(dataset, seed=3, rank=r, world_size=world, workers=2))
        for r in range(world)
    ]
    assert {len(s) for s in shares} == {251}
    assert all(
        len(datasetrt.Loader(dataset, seed=3, rank=r, world_size=world)) == 251
        for r in range(world)
    )
    real = [{s.key for s in share if not s.padding} for share in shares]
    assert sum(map(len, real)) == 1001 == len(set().union(*real))
    assert sum(s.padding for share in shares for s in share) == 3
    drop = [
        len(datasetrt.Loader(dataset, seed=3, rank=r, world_size=world, policy="drop"))
        for r in range(world)
    ]
    assert drop == [250] * 4


def test_state_dict_resumes_with_other_workers_and_batches(dataset):
    full = keys(datasetrt.Loader(dataset, seed=8, epoch=1))
    loader = datasetrt.Loader(dataset, seed=8, epoch=1, workers=2)
    head = [next(loader).key for _ in range(300)] + [s.key for s in loader.next_batch(33)]
    state = loader.state_dict()
    assert state == {
        "seed": 8,
        "epoch": 1,
        "position": 333,
        "epoch_len": 1001,
        "cuts": [],
        "remaining": [[333, 1001]],
    }
    resumed = datasetrt.Loader(dataset, seed=8, epoch=1, workers=3)
    resumed.load_state_dict(state)
    assert len(resumed) == 1001 - 333
    assert head + keys(resumed) == full
    with pytest.raises(datasetrt.DatasetError):
        datasetrt.Loader(dataset, seed=9).load_state_dict(state)
    loader.set_epoch(2)
    assert keys(loader) == keys(datasetrt.Loader(dataset, seed=8, epoch=2))


def test_bad_settings_raise(dataset):
    with pytest.raises(datasetrt.DatasetError):
        datasetrt.Loader(dataset, rank=2, world_size=2)
    with pytest.raises(datasetrt.DatasetError):
        datasetrt.Loader(dataset, weights=[1.0])
    with pytest.raises(ValueError):
        datasetrt.Loader(dataset, shuffle="sideways")


def test_four_threads_reading_one_cache_get_the_right_bytes(tmp_path):
    path = write_cache(tmp_path / "c", 2000, max_shard_bytes=20_000)
    cache = datasetrt.Cache(path)
    lz4 = datasetrt.Cache(write_cache(tmp_path / "z", 500, compression="lz4"))
    errors = []
    barrier = threading.Barrier(4)

    def reader(t):
        try:
            barrier.wait()
            for rnd in range(3):
                order = list(range(t, 2000, 4)) + list(range(0, 2000, 7))
                for i in order:
                    s = cache[i]
                    assert bytes(s.payload) == payload(i), i
                    assert s.metadata == row(i)
                batch = cache.read_many(order[:256])
                assert [bytes(s.payload) for s in batch] == [payload(i) for i in order[:256]]
                for i in range(rnd, 500, 3):
                    assert bytes(lz4[i].payload) == payload(i)
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
