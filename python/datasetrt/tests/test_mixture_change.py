"""Resuming under a changed mixture: Loader and RankPlan follow the new
schedule from the saved position, report the change, and serve nothing twice."""

import pytest

import datasetrt

from conftest import write_cache


def keys(samples):
    """The samples' ``(cache_id, sample_id)`` keys (a loader's samples always have one)."""
    out = []
    for sample in samples:
        assert sample.key is not None
        out.append(sample.key)
    return out


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixture_change")
    return [
        write_cache(root / "a", 400, max_shard_bytes=3000),
        write_cache(root / "b", 300, offset=400),
        write_cache(root / "c", 200, offset=700),
    ]


def test_a_state_resumes_under_other_weights_and_an_added_cache(caches):
    first = datasetrt.Dataset(caches[:2])
    schedule = [(300, [1, 1]), (200, [3, 1])]
    loader = datasetrt.Loader(first, seed=5, schedule=schedule, world_size=2, rank=0)
    assert loader.mixture_change is None
    head = keys(loader.next_batch(60))
    other_rank = datasetrt.Loader(first, seed=5, schedule=schedule, world_size=2, rank=1)
    head += keys(other_rank.next_batch(60))
    state = loader.state_dict()
    assert state == other_rank.state_dict() and state["position"] == 120
    assert "continuation" not in state

    # Three caches now, other weights, on three ranks.
    second = datasetrt.Dataset(caches)
    changed = [(250, [1, 1, 2]), (250, [1, 2, 1])]
    resumed = [
        datasetrt.Loader(second, seed=5, schedule=changed, world_size=3, rank=r, workers=2)
        for r in range(3)
    ]
    for r, rank_loader in enumerate(resumed):
        rank_loader.load_state_dict(state)
        change = rank_loader.mixture_change
        assert change is not None, r
        assert change["position"] == 120
        assert change["weights"] and change["added"] == [2] and change["removed"] == []
    plan = datasetrt.RankPlan(second, seed=5, schedule=changed, world_size=3, state=state)
    assert plan.mixture_change == resumed[0].mixture_change
    tail = keys(s for rank_loader in resumed for s in rank_loader if not s.padding)
    assert len(tail) == 500 - 120
    served = head + tail
    assert len(served) == len(set(served)), "a sample was served twice"
    # The added cache's stream starts at its beginning; the new weights govern the rest.
    c_id = second.cache_ids[2]
    assert any(key[0] == c_id for key in tail)
    assert "continuation" in resumed[0].state_dict()


def test_a_removed_cache_is_reported_and_another_seed_refused(caches):
    first = datasetrt.Dataset(caches)
    loader = datasetrt.Loader(first, seed=7, weights=[1, 1, 1], samples_per_epoch=600)
    head = keys(loader.next_batch(90))
    state = loader.state_dict()
    b_id = first.cache_ids[1]
    fewer = datasetrt.Dataset([caches[0], caches[2]])
    resumed = datasetrt.Loader(fewer, seed=7, weights=[1, 1], samples_per_epoch=400)
    resumed.load_state_dict(state)
    change = resumed.mixture_change
    assert change is not None
    assert change["removed"] == [
        {"cache": 1, "cache_id": b_id, "consumed": len([key for key in head if key[0] == b_id])}
    ]
    tail = keys(resumed)
    assert len(tail) == 310 and not set(head) & set(tail)
    assert all(key[0] != b_id for key in tail)

    with pytest.raises(datasetrt.DatasetError, match=r"seed 7 \(the plan's is 8\)"):
        datasetrt.RankPlan(fewer, seed=8, weights=[1, 1], samples_per_epoch=400, state=state)
