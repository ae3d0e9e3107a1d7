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
    assert {k: v for k, v in state.items() if k != "mixture"} == {
        "seed": 8,
        "epoch": 1,
        "position": 333,
        "epoch_len": 1001,
        "cuts": [],
        "remaining": [[333, 1001]],
    }
    # What the epoch was planned with: a state of another mixture is refused.
    assert [c["samples"] for c in state["mixture"]["caches"]] == [700, 301]
    assert [c["cache_id"] for c in state["mixture"]["caches"]] == list(dataset.cache_ids)
    assert state["mixture"]["shares"] == [700, 301]
    with pytest.raises(datasetrt.DatasetError, match="shuffle local"):
        datasetrt.Loader(dataset, seed=8, epoch=1, shuffle="full").load_state_dict(state)
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


def test_a_schedule_switches_weights_at_each_phase_on_every_rank(dataset):
    a, b = dataset.cache_ids
    schedule = [datasetrt.Phase(400, [1, 1]), (300, [0.9, 0.1]), datasetrt.Phase(200, [0, 1])]
    loader = datasetrt.Loader(dataset, seed=4, schedule=schedule, workers=2)
    samples = list(loader)
    assert len(samples) == loader.epoch_len == 900
    phases = [samples[:400], samples[400:700], samples[700:]]
    counts = [[sum(s.cache_id == c for s in phase) for c in (a, b)] for phase in phases]
    assert counts == [[200, 200], [270, 30], [0, 200]]
    # Each cache's order runs on across phases: its first pass repeats no sample.
    from_a = [s.sample_id for s in samples if s.cache_id == a]
    assert len(from_a) == 470 == len(set(from_a))
    for s in samples:
        i = s.sample_id + (700 if s.cache_id == b else 0)
        assert bytes(s.payload) == payload(i) and s.metadata == row(i)
    # Every rank switches at the same global position; together they read the epoch: the
    # same samples in one node of 3 ranks, the same cache at each position on 3 nodes (whose
    # shuffle windows are cut at the node boundaries).
    for ranks_per_node in (3, 1):
        shares = [
            list(
                datasetrt.Loader(
                    dataset,
                    seed=4,
                    schedule=schedule,
                    rank=r,
                    world_size=3,
                    ranks_per_node=ranks_per_node,
                )
            )
            for r in range(3)
        ]
        at: dict[int, tuple[int, int]] = {}
        for s in (s for share in shares for s in share if not s.padding):
            assert s.global_position is not None and s.key is not None
            at[s.global_position] = s.key
        assert sorted(at) == list(range(900))
        if ranks_per_node == 3:
            assert [at[p] for p in range(900)] == [s.key for s in samples]
        assert [at[p][0] for p in range(900)] == [s.cache_id for s in samples]
    # The plan is the same through RankPlan, and a resume continues it.
    plan = datasetrt.RankPlan(dataset, seed=4, schedule=schedule)
    assert [s.key for s in plan.read(range(len(plan)))] == [s.key for s in samples]
    first = datasetrt.Loader(dataset, seed=4, schedule=schedule)
    head = [s.key for s in first.next_batch(555)]
    rest = datasetrt.Loader(dataset, seed=4, schedule=schedule, workers=3)
    rest.load_state_dict(first.state_dict())
    assert head + [s.key for s in rest] == [s.key for s in samples]


def test_a_bad_schedule_is_refused_naming_the_phase(dataset):
    with pytest.raises(datasetrt.DatasetError, match="phase 1"):
        datasetrt.Loader(dataset, schedule=[(10, [1, 1]), (5, [1, -1])])
    with pytest.raises(datasetrt.DatasetError, match="phase 0"):
        datasetrt.Loader(dataset, schedule=[(0, [1, 1])])
    with pytest.raises(datasetrt.DatasetError, match="schedule"):
        datasetrt.Loader(dataset, schedule=[(10, [1, 1])], weights=[1, 1])
    with pytest.raises(TypeError, match="schedule"):
        datasetrt.Loader(dataset, schedule=[("ten", [1, 1])])  # type: ignore[list-item]


def test_prefetch_bytes_bounds_the_read_ahead_not_the_order(dataset):
    base = keys(datasetrt.Loader(dataset, seed=1))
    for size in (1, 4096, "64KiB", "1MB"):
        loader = datasetrt.Loader(dataset, seed=1, workers=2, prefetch_bytes=size)
        assert keys(loader) == base
    with pytest.raises(ValueError, match="prefetch_bytes"):
        datasetrt.Loader(dataset, prefetch_bytes="lots")
