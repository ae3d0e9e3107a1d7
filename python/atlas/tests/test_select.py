"""Collection.select on 2,000 written datasets: every answer equals a brute-force evaluation
over ``attributes_by_dataset`` / ``stats_by_dataset`` and the written data; deleted datasets
never appear; every malformed selection is refused, naming what is wrong, before any request;
on the S3 test server an attribute + statistic selection costs open + 2 requests, and a second
one on the same open collection none."""

from __future__ import annotations

import operator
import shutil
from typing import Any

import numpy as np
import pytest

import atlas_collections as ac

N = 2_000
FILL = np.float32(-999.0)
DAYS = 365  # a year of daily values: the t2m segment (2.7 MB) is fetched whole by a data read
REGIONS = ("north", "south", "east", "west", "centre")
OPS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
DELETED = ["st_00004", "st_00150", "st_01001", "st_01999"]


def t2m_of(i: int) -> np.ndarray | None:
    """Dataset ``i``'s t2m (``DAYS`` values, some fill), or None when it has none."""
    if i % 17 == 0:
        return None
    if i % 101 == 0:
        return np.full(DAYS, FILL, "float32")
    rng = np.random.default_rng(i)
    values = (rng.standard_normal(DAYS) * 5 + 270 + (i % 40)).astype("float32")
    values[: i % 4] = FILL
    return values


def attrs_of(i: int) -> dict:
    attrs = {
        "member": i % 50,
        "station_id": np.int32(10_000 + i),
        "region": REGIONS[i % 5],
        "lat": float(i % 90) / 2,
    }
    if i % 3:
        attrs["flag"] = bool(i % 2)
    return attrs


def write(location, n: int = N) -> None:
    with ac.Writer(location) as w:
        for i in range(n):
            arrays: dict[str, Any] = {
                "count": np.array([i % 7, -(i % 11)], "int16"),
                "code": np.array([f"c{i % 9}", "z"]),
            }
            t2m = t2m_of(i)
            if t2m is not None:
                arrays["t2m"] = {"data": t2m, "dims": ("time",), "fill_value": FILL}
            w.write(f"st_{i:05d}", arrays, attrs=attrs_of(i))


@pytest.fixture(scope="module")
def collection_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("select") / "coll"
    write(path)
    ac.open(path).delete(DELETED)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def c(collection_dir):
    return ac.open(collection_dir)


def accepted_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def brute(c: ac.Collection, attrs: dict, where: list) -> list[str]:
    """The answer computed in Python from the per-dataset reads."""
    keep = set(c.names)
    for key, accepted in attrs.items():
        values = c.attributes_by_dataset(key)
        keep &= {n for n, v in values.items() if any(v == a for a in accepted_list(accepted))}
    for array, stat, op, value in where:
        rows = c.stats_by_dataset(array)
        keep &= {
            r.dataset
            for r in rows
            if getattr(r, stat) is not None
            # stats_by_dataset reports a dataset with no recorded statistics as null_count 0;
            # select treats its statistics as absent. The writer records them for every array.
            and OPS[op](getattr(r, stat), value)
        }
    return [n for n in c.names if n in keep]


def test_the_example_matches_the_written_data(c):
    got = c.select(attrs={"member": [1, 2, 3]}, where=[("t2m", "max", ">", 300.0)])
    want = []
    for i in range(N):
        name = f"st_{i:05d}"
        t2m = t2m_of(i)
        if name in DELETED or t2m is None or i % 50 not in (1, 2, 3):
            continue
        valid = t2m[t2m != FILL]
        if valid.size and valid.max() > 300.0:
            want.append(name)
    assert len(want) > 10
    assert got == want


def test_random_selections_match_a_brute_force_evaluation(c):
    rng = np.random.default_rng(7)
    checked = 0
    non_empty = 0
    for _ in range(40):
        attrs: dict[str, Any] = {}
        if rng.random() < 0.7:
            attrs["member"] = [int(m) for m in rng.choice(50, size=int(rng.integers(1, 6)))]
        if rng.random() < 0.4:
            attrs["region"] = str(rng.choice(REGIONS))
        if rng.random() < 0.3:
            attrs["flag"] = bool(rng.random() < 0.5)
        if rng.random() < 0.2:
            attrs["station_id"] = tuple(int(x) for x in rng.integers(10_000, 12_000, size=50))
        if rng.random() < 0.2:
            attrs["lat"] = [float(x) / 2 for x in rng.integers(0, 90, size=10)]
        where = []
        for _ in range(int(rng.integers(0, 3))):
            array, stat = [
                ("t2m", "min"),
                ("t2m", "max"),
                ("t2m", "null_count"),
                ("count", "min"),
                ("count", "max"),
            ][int(rng.integers(5))]
            op = str(rng.choice(list(OPS)))
            value: float
            if stat == "null_count":
                value = int(rng.integers(0, 4))
            elif array == "t2m":
                value = float(rng.uniform(250, 320))
            else:
                value = int(rng.integers(-10, 7))
            where.append((array, stat, op, value))
        got = c.select(attrs=attrs, where=where)
        assert got == brute(c, attrs, where), (attrs, where)
        assert not set(got) & set(DELETED)
        checked += 1
        non_empty += bool(got)
    assert checked == 40 and non_empty >= 20


def test_no_conditions_select_every_live_dataset_and_deleted_ones_never(c):
    assert c.select() == c.names
    assert len(c.names) == N - len(DELETED)
    assert c.select(attrs={"station_id": 10_004}) == []  # st_00004, deleted
    assert c.select(attrs={"station_id": [10_004, 10_005]}) == ["st_00005"]


def test_values_compare_by_type_as_numpy_would(c):
    # A Python or NumPy int matches an Int32 attribute; an int matches a float attribute.
    assert c.select(attrs={"station_id": np.int64(10_007)}) == ["st_00007"]
    by_lat = c.select(attrs={"lat": 3})
    assert by_lat == [n for n in c.names if int(n[3:]) % 90 == 6]
    assert c.select(attrs={"lat": 3.5}) == [n for n in c.names if int(n[3:]) % 90 == 7]
    # A float threshold on an int16 array, an int threshold on a float32 one.
    assert c.select(where=[("count", "max", ">", 5.5)]) == brute(
        c, {}, [("count", "max", ">", 5.5)]
    )
    assert c.select(where=[("t2m", "min", ">=", 300)]) == brute(c, {}, [("t2m", "min", ">=", 300)])
    # bool matches bool only; strings exactly.
    assert c.select(attrs={"flag": True}) == [n for n in c.names if int(n[3:]) % 6 in (1, 5)]
    assert c.select(attrs={"region": "North"}) == []
    # String arrays have a min and max too, compared as text.
    assert c.select(where=[("code", "min", "==", "c3")]) == [
        n for n in c.names if int(n[3:]) % 9 == 3
    ]


def test_absent_attributes_and_statistics_do_not_match(c):
    # No flag on every third dataset: neither True nor False selects it.
    either = c.select(attrs={"flag": [True, False]})
    assert either == [n for n in c.names if int(n[3:]) % 3]
    # Datasets without t2m, and all-fill ones (no min), match no comparison, `!=` included.
    with_min = c.select(where=[("t2m", "min", "!=", -1.0)])
    assert with_min == [n for n in c.names if int(n[3:]) % 17 and int(n[3:]) % 101]
    all_fill = c.select(where=[("t2m", "null_count", "==", DAYS)])
    assert all_fill == [n for n in c.names if int(n[3:]) % 101 == 0 and int(n[3:]) % 17]


@pytest.mark.parametrize(
    "kwargs,field,words",
    [
        ({"where": [("t2m", "mean", ">", 1.0)]}, "where[0]", "unknown statistic 'mean'"),
        ({"where": [("t2m", "max", "=>", 1.0)]}, "where[0]", "unknown comparison '=>'"),
        (
            {"where": [("t2m", "max", ">", 1.0), ("t2m", "avg", ">", 1.0)]},
            "where[1]",
            "unknown statistic 'avg'",
        ),
        ({"attrs": {"membr": 1}}, 'attrs["membr"]', "no dataset declares an attribute"),
        ({"where": [("t2", "max", ">", 1.0)]}, 'where[0] ("t2" max >)', "array named"),
        ({"attrs": {"member": "1"}}, 'attrs["member"]', 'the string "1" cannot equal'),
        ({"attrs": {"member": True}}, 'attrs["member"]', "the boolean true cannot equal"),
        ({"attrs": {"region": 3}}, 'attrs["region"]', "declared String"),
        ({"attrs": {"flag": 1}}, 'attrs["flag"]', "declared Bool"),
        (
            {"where": [("t2m", "max", ">", "hot")]},
            'where[0] ("t2m" max >)',
            'cannot compare with the max of array "t2m", declared Float32',
        ),
        (
            {"where": [("code", "null_count", ">", "x")]},
            'where[0] ("code" null_count >)',
            "cannot compare with the null_count",
        ),
        ({"where": [("t2m", "min", "<", float("nan"))]}, 'where[0] ("t2m" min <)', "NaN"),
    ],
)
def test_malformed_selections_are_query_errors_before_any_request(c, kwargs, field, words):
    c.reset_requests()
    with pytest.raises(ac.QueryError) as info:
        c.select(**kwargs)
    error = info.value
    assert isinstance(error, ValueError) and isinstance(error, ac.AtlasError)
    assert error.kind == "invalid_query"
    assert error.field == field
    assert words.replace("'", '"') in str(error), str(error)
    assert str(error).startswith(f"{c.location}: select: {field}: ")
    assert c.request_count == 0, c.requests()


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"attrs": {"member": None}}, 'attrs["member"]: a value of type NoneType'),
        ({"attrs": {"member": [1, {}]}}, 'attrs["member"]: a value of type dict'),
        ({"attrs": [("member", 1)]}, "attrs must be a mapping"),
        ({"attrs": {1: 1}}, "key 1 is not a str"),
        ({"where": ("t2m", "max", ">", 1.0)}, "where must be a list of"),
        ({"where": "t2m > 1"}, "where must be a list of"),
        ({"where": [("t2m", "max", 1.0)]}, "where[0]: expected (array, stat, op, value), got 3"),
        ({"where": [("t2m", "max", ">", None)]}, "where[0]: a value of type NoneType"),
        ({"where": [("t2m", 1, ">", 1.0)]}, "where[0]: stat 1 is not a str"),
    ],
)
def test_values_of_no_comparable_type_are_type_errors(c, kwargs, words):
    c.reset_requests()
    with pytest.raises(TypeError) as info:
        c.select(**kwargs)
    assert words in str(info.value)
    assert c.request_count == 0


def test_select_reads_one_segment_per_condition_target_and_caches_them(collection_dir):
    c = ac.open(collection_dir)
    c.reset_requests()
    c.select(attrs={"member": 1}, where=[("t2m", "max", ">", 300.0)])
    paths = [p for _, p in c.requests()]
    assert c.request_count == 2, c.requests()
    assert all(p.endswith("data.atlas") for p in paths)
    c.reset_requests()
    c.select(attrs={"region": "east", "member": [4, 9]}, where=[("t2m", "min", "<", 260.0)])
    assert c.request_count == 0, c.requests()


def test_timestamp_and_bytes_statistics(tmp_path):
    with ac.Writer(tmp_path / "t") as w:
        for i in range(3):
            days = np.datetime64("2024-01-01", "ns") + np.arange(3) * np.timedelta64(i + 1, "D")
            w.write(
                f"d{i}",
                {"time": days, "blob": np.array([bytes([i, 1]), b"\x00"], dtype=object)},
                attrs={"tag": bytes([i])},
            )
    c = ac.open(tmp_path / "t")
    assert c.select(where=[("time", "max", ">", np.datetime64("2024-01-04"))]) == ["d1", "d2"]
    import datetime

    assert c.select(where=[("time", "max", "<=", datetime.datetime(2024, 1, 3))]) == ["d0"]
    assert c.select(attrs={"tag": b"\x02"}) == ["d2"]
    assert c.select(where=[("blob", "max", ">=", b"\x01")]) == ["d1", "d2"]
    with pytest.raises(ac.QueryError, match="declared TimestampNs"):
        c.select(where=[("time", "max", ">", 5)])


def test_select_on_s3_costs_open_plus_two_requests_then_none(s3_prefix):
    write(s3_prefix)
    c = ac.open(s3_prefix)
    opened = c.request_count
    assert opened == 2, c.requests()  # the container's tail and the mask, at once
    got = c.select(attrs={"member": [1, 2, 3]}, where=[("t2m", "max", ">", 300.0)])
    assert c.request_count == opened + 2 == 4, c.requests()
    assert got == brute(c, {"member": [1, 2, 3]}, [("t2m", "max", ">", 300.0)])
    # select fetched t2m's footer, not the segment: its one ranged GET is the tail.
    ranges = [kind for kind, path in c.requests()[-2:] if kind.startswith("GET bytes=")]
    assert len(ranges) == 2, c.requests()
    lengths = [int(b) - int(a) + 1 for a, b in (r[len("GET bytes=") :].split("-") for r in ranges)]
    assert max(lengths) < 1.5 * 2**20, c.requests()
    # The data still reads (one more request for its block).
    np.testing.assert_array_equal(c["st_00001"]["t2m"][:], t2m_of(1))
    c.reset_requests()
    again = c.select(attrs={"member": [5]}, where=[("t2m", "null_count", "==", 0)])
    assert c.request_count == 0, c.requests()
    assert again == brute(c, {"member": [5]}, [("t2m", "null_count", "==", 0)])
