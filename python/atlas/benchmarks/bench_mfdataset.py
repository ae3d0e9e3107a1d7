"""atlas_collections.open_mfdataset vs xr.open_mfdataset over the NetCDF files, same combine.

The data: N station files (default 2,000; a year of daily values, three variables, 0-d
lat/lon/station_name, the CF discrete-sampling shape), written once as NetCDF-4 and imported
into one Atlas collection with ``import_netcdf`` (and, with ``--s3``, a second collection on
the S3 test server). Measured in one run, for each place:

1. open: ``ac.open_mfdataset(collection, combine="nested", concat_dim="station")`` (a fresh
   Collection each time) vs ``xr.open_mfdataset(files, combine="nested",
   concat_dim="station")`` (xarray's defaults for data_vars/coords/compat/join); target ratio
   <= 0.05;
2. mean of one variable over all stations, open included: ``...["tas"].mean("station")`` with
   ``chunks={"station": 500}`` (four run reads) vs xarray's (dask, one chunk per file); target
   ratio <= 0.1.

The NetCDF files stay on local disk in both cases (xarray reads them from disk, measured once
per run and compared with both places); the Atlas collection is on local disk, then on the S3
test server. Results are asserted identical first.

Usage (needs xarray, netCDF4, dask, atlas_collections):

    python python/atlas/benchmarks/bench_mfdataset.py --stations 2000 --dir /tmp/bench-mf
    bash .ci/s3-server.sh start /tmp/s3 && source /tmp/s3/env
    python python/atlas/benchmarks/bench_mfdataset.py --stations 2000 --dir /tmp/bench-mf --s3

Prints a Markdown table; the files and the collections are kept (in ``--dir`` and under
``bench-mfdataset/<stations>`` in the bucket) for the next run.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import xarray as xr

import atlas_collections as ac

DAYS = pd.date_range("2023-01-01", "2023-12-31", freq="D")
CHUNK = 500


def station(i: int) -> xr.Dataset:
    rng = np.random.default_rng(i)
    n = len(DAYS)
    return xr.Dataset(
        {
            "tas": (("time",), rng.normal(280 + i / 100, 5, n).astype("f4"), {"units": "K"}),
            "pr": (("time",), rng.gamma(1.0, 2.0, n), {"units": "mm/day"}),
            "valid": (("time",), rng.integers(0, 2, n).astype("i2")),
        },
        coords={
            "time": ("time", DAYS),
            "lat": ((), 35.0 + (i % 200) * 0.1, {"units": "degrees_north"}),
            "lon": ((), -10.0 + (i // 200) * 0.5, {"units": "degrees_east"}),
            "station_name": ((), f"STATION-{i:05d}", {"cf_role": "timeseries_id"}),
        },
        attrs={"featureType": "timeSeries", "source": f"gauge {i}"},
    )


def write_station(i: int, path: Path) -> None:
    if not path.exists():
        station(i).to_netcdf(path)


def xr_open(files: list[Path], **kwargs: Any) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return xr.open_mfdataset(files, combine="nested", concat_dim="station", **kwargs)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def xr_side(files: list[Path]) -> tuple[float, float, xr.Dataset, np.ndarray]:
    """xarray over the files: open, and open + mean (the files are local either way, so one
    measurement serves both places)."""
    t_open, want = timed(lambda: xr_open(files))
    t_mean, mean = timed(lambda: xr_open(files)["tas"].mean("station").values)
    return t_open, t_mean, want, mean


def ac_side(location: str, want: xr.Dataset, mean: np.ndarray) -> tuple[float, float]:
    got = ac.open_mfdataset(location, combine="nested", concat_dim="station")
    xr.testing.assert_identical(got, want)
    t_open, _ = timed(lambda: ac.open_mfdataset(location, combine="nested", concat_dim="station"))

    def ac_mean() -> np.ndarray:
        ds = ac.open_mfdataset(
            location, combine="nested", concat_dim="station", chunks={"station": CHUNK}
        )
        return ds["tas"].mean("station").values

    t_mean, got_mean = timed(ac_mean)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-5)
    return t_open, t_mean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stations", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bench-mfdataset"))
    parser.add_argument("--s3", action="store_true", help="also on the S3 test server")
    args = parser.parse_args()
    nc = args.dir / f"nc-{args.stations}"
    nc.mkdir(parents=True, exist_ok=True)
    files = [nc / f"station_{i:05d}.nc" for i in range(args.stations)]
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(write_station, range(args.stations), files, chunksize=100))
    local = args.dir / f"atlas-{args.stations}"
    if not (local / "data.atlas").exists():
        ac.import_netcdf(local, files, progress=False)
    x_open, x_mean, want, mean = xr_side(files)
    places = [("local disk", str(local))]
    if args.s3:
        # Written once per size and kept: later runs reuse it.
        s3 = f"s3://{os.environ['ATLAS_S3_TEST_BUCKET']}/bench-mfdataset/{args.stations}"
        try:
            ac.open(s3)
        except ac.NotACollectionError:
            ac.import_netcdf(s3, files, progress=False)
        places.append(("S3 test server", s3))
    rows = []
    for place, location in places:
        a_open, a_mean = ac_side(location, want, mean)
        rows.append((f"{place}: open_mfdataset", x_open, a_open))
        rows.append((f"{place}: open + mean of tas over stations", x_mean, a_mean))
    print(f"{args.stations} stations, {len(DAYS)} days, 3 variables\n")
    print("| operation | xr.open_mfdataset (NetCDF) | ac.open_mfdataset (Atlas) | ratio |")
    print("|---|---:|---:|---:|")
    for name, base, ours in rows:
        print(f"| {name} | {base:.3f} s | {ours:.3f} s | {ours / base:.4f}x |")


if __name__ == "__main__":
    main()
