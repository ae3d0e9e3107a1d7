"""Test 1 of issue 42: every CF calendar through import and read-back.

One NetCDF file per calendar, written with netCDF4 (time bounds, a timedelta variable, a
fill value on time, dates before 1582 for `standard` and `julian`), plus the station and
packed-data cases: each imports and reads back through ``engine="atlas"`` identical to xarray
reading the file, with xarray's defaults, ``use_cftime=True`` (the keyword and the
``CFDatetimeCoder`` form), ``decode_times=False`` and the ``decode_timedelta`` variants; where
xarray cannot decode a file (calendar ``none``) the collection fails alike. 12 monthly
``noleap`` files combine along time as ``xr.open_mfdataset`` combines them; ``select`` on a
time statistic compares in the stored encoding; ``write_xarray`` stores cftime dates, timedeltas
and booleans CF-encoded."""

import warnings
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr

import atlas_collections as ac
from atlas_collections.mfdataset import RunBackendArray

CALENDARS = [
    "standard",
    "gregorian",
    "proleptic_gregorian",
    "noleap",
    "365_day",
    "all_leap",
    "366_day",
    "360_day",
    "julian",
    "none",
]

DECODINGS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "use_cftime": {"use_cftime": True},
    "cftime_coder": {"decode_times": xr.coders.CFDatetimeCoder(use_cftime=True)},
    "decode_times=False": {"decode_times": False},
    "decode_timedelta=True": {"decode_timedelta": True},
    "decode_timedelta=False": {"decode_timedelta": False},
    "no_times_but_timedeltas": {"decode_times": False, "decode_timedelta": True},
}


def write_calendar_file(path, calendar: str, *, start: float = 0.0, months: int = 12) -> None:
    """Monthly means in ``calendar``: ``time`` (float days, with bounds and a fill value),
    ``time_bnds`` (no units of its own: CF has them inherited), ``lead`` (a timedelta in
    hours), ``tas`` (float32 with a fill value). `standard` and `julian` start in 1500, before
    the Gregorian reform."""
    epoch = "1500-01-01" if calendar in ("standard", "gregorian", "julian") else "2000-01-01"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None)
        nc.createDimension("nv", 2)
        nc.createDimension("site", 3)
        time = nc.createVariable("time", "f8", ("time",), fill_value=-9999.0)
        time.units = f"days since {epoch}"
        time.calendar = calendar
        time.bounds = "time_bnds"
        time.standard_name = "time"
        time.axis = "T"
        bounds = nc.createVariable("time_bnds", "f8", ("time", "nv"))
        lead = nc.createVariable("lead", "i4", ("time",))
        lead.units = "hours"
        lead.long_name = "forecast lead"
        tas = nc.createVariable("tas", "f4", ("time", "site"), fill_value=np.float32(1e20))
        tas.units = "K"
        tas.cell_methods = "time: mean"
        lengths = 30.0
        starts = start + np.arange(months) * lengths
        time[:] = starts + lengths / 2
        bounds[:] = np.stack([starts, starts + lengths], axis=1)
        lead[:] = np.arange(months) * 6
        values = np.arange(months * 3, dtype="f4").reshape(months, 3) + 270
        values[-1, 2] = 1e20  # a missing value
        tas[:] = values
        nc.title = f"monthly means, {calendar} calendar"
        nc.Conventions = "CF-1.8"


def read_source(path, options):
    """What xarray gives for the file (loaded), or the error it raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with xr.open_dataset(path, **options) as ds:
                return ds.load()
        except Exception as e:  # noqa: BLE001 - compared with the collection's failure
            return e


def read_atlas(location, name, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return xr.open_dataset(location, engine="atlas", group=name, **options).load()
        except Exception as e:  # noqa: BLE001
            return e


def assert_same_reading(got, want) -> None:
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"xarray fails ({want!r}), the collection gives {got}"
        assert type(got) is type(want), (got, want)
        return
    assert not isinstance(got, Exception), got
    xr.testing.assert_identical(got, want)
    for name, var in want.variables.items():
        if var.dtype.kind in "OUS":
            # Strings: an object array of str (the documented mapping) equals a <U array.
            assert got[name].dtype.kind in "OUS", (name, got[name].dtype)
        else:
            assert got[name].dtype == var.dtype, (name, got[name].dtype, var.dtype)


@pytest.fixture(scope="module")
def calendar_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("calendars")
    files = []
    for calendar in CALENDARS:
        path = root / f"{calendar}.nc"
        write_calendar_file(path, calendar)
        files.append(path)
    out = root / "coll"
    summary = ac.import_netcdf(out, files, progress=False)
    assert summary.datasets == len(CALENDARS)
    return {"files": files, "out": out}


@pytest.mark.parametrize("decoding", list(DECODINGS))
def test_every_calendar_reads_back_as_xarray_reads_the_file(calendar_corpus, decoding):
    options = DECODINGS[decoding]
    for path in calendar_corpus["files"]:
        want = read_source(path, options)
        got = read_atlas(calendar_corpus["out"], path.stem, options)
        assert_same_reading(got, want)
    # The decodings each give what they should, so the comparison above means something.
    noleap = read_source(calendar_corpus["files"][CALENDARS.index("noleap")], options)
    assert isinstance(noleap, xr.Dataset)
    if options.get("decode_times") is False:
        assert noleap["time"].dtype == np.float64 and noleap["time"].attrs["calendar"] == "noleap"
    else:
        assert noleap["time"].values[0].calendar == "noleap"
        assert noleap["time_bnds"].values[0, 0].calendar == "noleap"
    if options.get("decode_timedelta"):
        assert noleap["lead"].dtype.kind == "m"
    if decoding == "defaults":
        standard = read_source(calendar_corpus["files"][0], options)
        assert isinstance(standard, xr.Dataset)
        assert type(standard["time"].values[0]).__name__ == "DatetimeGregorian", (
            "dates before 1582 in the standard calendar decode to cftime"
        )
        assert np.isnan(standard["tas"].values[-1, 2])


def test_times_are_stored_as_the_file_encodes_them(calendar_corpus):
    """The import keeps the numbers, their units, calendar and fill value (the decision in
    docs/python-atlas.md): what the Array API reads is the file's encoding."""
    c = ac.open(calendar_corpus["out"])
    time = c["360_day"]["time"]
    assert time.dtype == np.float64
    assert time.attrs["units"] == "days since 2000-01-01"
    assert time.attrs["calendar"] == "360_day"
    assert time.attrs["_FillValue"] == -9999.0
    np.testing.assert_array_equal(time[:3], [15.0, 45.0, 75.0])
    assert "units" not in c["360_day"]["time_bnds"].attrs  # CF: inherited, as in the file
    assert c["360_day"]["lead"].attrs["units"] == "hours"


def test_select_on_a_time_statistic_compares_in_the_stored_encoding(calendar_corpus):
    """A date threshold is encoded with each dataset's own units and calendar, then compared
    with the stored statistics; a date no encoding can hold is a QueryError saying why."""
    c = ac.open(calendar_corpus["out"])
    import cftime

    # noleap and 360_day files both run from 2000-01-16 (encoded 15) to day 345 of the year.
    late = cftime.datetime(2000, 12, 1, calendar="noleap")
    chosen = c.select(where=[("time", "max", ">=", late)])
    # In each calendar, 2000-12-01 is day 334 (noleap, 365_day), 335 (all_leap, 366_day,
    # proleptic_gregorian) or 330 (360_day) since the epoch; the last mid-month is day 345.
    assert set(chosen) == {
        "proleptic_gregorian",
        "noleap",
        "365_day",
        "all_leap",
        "366_day",
        "360_day",
    }
    assert c.select(where=[("time", "min", "<", cftime.datetime(2000, 1, 20, calendar="360_day"))])
    early = c.select(where=[("time", "min", "<", np.datetime64("1500-02-01"))])
    assert set(early) == {"standard", "gregorian", "julian"}
    with pytest.raises(ac.QueryError, match="calendar"):
        c.select(where=[("time", "max", ">", cftime.datetime(2000, 2, 30, calendar="360_day"))])
    # A plain number compares with the stored numbers as they are.
    assert set(c.select(where=[("time", "max", ">", 300.0)])) == set(CALENDARS)


def test_twelve_monthly_noleap_files_combine_along_time_as_xarray_combines_them(tmp_path):
    files = []
    for month in range(12):
        path = tmp_path / f"tas_{month + 1:02d}.nc"
        write_calendar_file(path, "noleap", start=month * 30.0, months=1)
        files.append(path)
    ac.import_netcdf(tmp_path / "coll", files, progress=False)
    c = ac.open(tmp_path / "coll")
    choices: list[dict[str, Any]] = [{}, {"decode_times": False}, {"use_cftime": True}]
    for options in choices:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with xr.open_mfdataset(files, combine="by_coords", **options) as want:
                want = want.load()
            combines: list[dict[str, Any]] = [
                {"combine": "by_coords"},
                {"combine": "nested", "concat_dim": "time"},
            ]
            for combine in combines:
                got = ac.open_mfdataset(c, **combine, **options).load()
                assert_same_reading(got, want)
            datasets: Any = list(c.datasets())
            per_dataset = xr.open_mfdataset(
                datasets, engine="atlas", combine="by_coords", **options
            ).load()
            assert_same_reading(per_dataset, want)
    assert want["time"].size == 12
    # The fast path: one run read per variable, decoded after combining (one epoch and
    # calendar in every dataset).
    lazy = ac.open_mfdataset(c, combine="by_coords")
    assert isinstance(lazy["tas"].variable._data.array, RunBackendArray)
    assert lazy["time"].values[0].calendar == "noleap"


def test_mfdataset_decodes_each_dataset_where_their_encodings_differ(tmp_path):
    """Two files of one noleap run with different epochs: decoding after combining would be
    wrong, so the datasets are decoded one by one, as xarray decodes each file."""
    first, second = tmp_path / "a.nc", tmp_path / "b.nc"
    write_calendar_file(first, "noleap", months=2)
    with netCDF4.Dataset(second, "w") as nc:
        nc.createDimension("time", 2)
        nc.createDimension("nv", 2)
        nc.createDimension("site", 3)
        t = nc.createVariable("time", "f8", ("time",), fill_value=-9999.0)
        t.units, t.calendar, t.bounds = "hours since 2000-03-01", "noleap", "time_bnds"
        t.standard_name, t.axis = "time", "T"
        t[:] = [360.0, 1080.0]
        nc.createVariable("time_bnds", "f8", ("time", "nv"))[:] = [[0, 720], [720, 1440]]
        lead = nc.createVariable("lead", "i4", ("time",))
        lead.units, lead.long_name = "hours", "forecast lead"
        lead[:] = [12, 18]
        tas = nc.createVariable("tas", "f4", ("time", "site"), fill_value=np.float32(1e20))
        tas.units, tas.cell_methods = "K", "time: mean"
        tas[:] = np.ones((2, 3), "f4")
        nc.title, nc.Conventions = "monthly means, noleap calendar", "CF-1.8"
    ac.import_netcdf(tmp_path / "coll", [first, second], progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_mfdataset([first, second], combine="by_coords") as want:
            want = want.load()
    got = ac.open_mfdataset(tmp_path / "coll", combine="by_coords").load()
    assert_same_reading(got, want)
    assert [t.month for t in got["time"].values] == [1, 2, 3, 4]


def test_write_xarray_stores_cftime_timedeltas_and_booleans_encoded(tmp_path):
    source = read_source(_one(tmp_path, "360_day"), {"decode_timedelta": True})
    source["wet"] = (("time",), np.arange(12) % 2 == 0)
    ac.write_xarray(tmp_path / "coll", {"d": source})
    back = xr.open_dataset(tmp_path / "coll", engine="atlas", group="d", decode_timedelta=True)
    xr.testing.assert_identical(back.load(), source)
    stored = ac.open(tmp_path / "coll")["d"]
    assert stored["time"].attrs["calendar"] == "360_day" and stored["time"].dtype.kind == "f"
    assert stored["lead"].dtype.kind in "if" and stored["wet"].attrs["dtype"] == "bool"


def _one(tmp_path, calendar):
    path = tmp_path / f"{calendar}.nc"
    write_calendar_file(path, calendar)
    return path


def test_standard_times_outside_datetime64_and_the_existing_cases_under_every_decoding(
    tmp_path,
):
    """Dates in year 1 and year 3000 (no datetime64[ns] can hold them, so xarray decodes them
    to cftime), a station file, and packed, masked and character data."""
    far = tmp_path / "far.nc"
    with netCDF4.Dataset(far, "w") as nc:
        nc.createDimension("time", 3)
        t = nc.createVariable("time", "i8", ("time",))
        t.units, t.calendar = "days since 0001-01-01", "standard"
        t[:] = [0, 365 * 1500, 365 * 2999]
        nc.createVariable("v", "f4", ("time",))[:] = [1, 2, 3]
    station = tmp_path / "station.nc"
    xr.Dataset(
        {"tas": (("time",), np.arange(5, dtype="f4"), {"units": "K"})},
        coords={
            "time": ("time", np.arange(5), {"units": "hours since 2020-01-01"}),
            "lat": ((), 45.0, {"units": "degrees_north"}),
            "station_name": ((), "Torino"),
        },
        attrs={"featureType": "timeSeries"},
    ).to_netcdf(station)
    packed = tmp_path / "packed.nc"
    with netCDF4.Dataset(packed, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("x", 4)
        nc.createDimension("strlen", 5)
        k = nc.createVariable("k", "i2", ("x",), fill_value=np.int16(-1))
        k.scale_factor, k.add_offset = np.float32(0.5), np.float32(10)
        k.set_auto_maskandscale(False)
        k[:] = np.array([0, 1, -1, 3], "i2")
        c = nc.createVariable("c", "S1", ("x", "strlen"))
        c[:] = netCDF4.stringtochar(np.array(["ab", "cde", "", "fghij"], dtype="S5"))
        d = nc.createVariable("d", "f8", ("x",))
        d.units = "days"
        d[:] = [0.5, 1, 1.5, 2]
    files = [far, station, packed]
    ac.import_netcdf(tmp_path / "coll", files, progress=False)
    for decoding, options in DECODINGS.items():
        for path in files:
            want = read_source(path, options)
            got = read_atlas(tmp_path / "coll", path.stem, options)
            assert_same_reading(got, want)
            if path is far and decoding == "defaults":
                assert want["time"].values[2].year > 2262, "beyond datetime64[ns]: cftime"
