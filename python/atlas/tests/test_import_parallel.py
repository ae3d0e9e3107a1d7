"""NetCDF import in worker processes: ``jobs`` 1, 2 and 3 write the same bytes over hundreds of
station files; a refused file stops the import and leaves nothing, or with ``skip_bad`` is left
out and listed; the command's exit statuses and messages; Ctrl-C and SIGTERM stop the workers
and leave nothing; the decoded datasets waiting for the writer stay bounded."""

import concurrent.futures
import importlib.util
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import atlas_collections as ac
from atlas_collections.netcdf import IN_FLIGHT_PER_JOB, default_jobs

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_import.py"
_spec = importlib.util.spec_from_file_location("bench_import", BENCH)
assert _spec is not None and _spec.loader is not None
bench_import = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_import)

STATIONS = 300


@pytest.fixture(scope="module")
def stations(tmp_path_factory):
    """300 station files (the benchmark's: a year of daily values of 3 variables, scalar
    coordinates), in a shuffled order, so that input order is not name order."""
    paths = bench_import.write_station_files(tmp_path_factory.mktemp("stations"), STATIONS)
    random.Random(7).shuffle(paths)
    return paths


@pytest.fixture(scope="module")
def serial(stations, tmp_path_factory):
    """The ``data.atlas`` a ``jobs=1`` (in-process) import of the station files writes."""
    out = tmp_path_factory.mktemp("serial") / "out"
    summary = ac.import_netcdf(out, stations, jobs=1, progress=False)
    assert (summary.datasets, summary.files, summary.skipped) == (STATIONS, STATIONS, ())
    return (out / "data.atlas").read_bytes()


def bad_files(directory):
    """One file of each kind the importer refuses after reading it: a user-defined compound
    type, a variable name the format reserves, bytes that are not NetCDF."""
    import netCDF4

    directory.mkdir(exist_ok=True)
    compound = directory / "compound.nc"
    with netCDF4.Dataset(compound, "w") as nc:
        nc.createDimension("x", 2)
        pair = nc.createCompoundType(np.dtype([("n", "i4"), ("mean", "f8")]), "pair_t")
        nc.createVariable("obs", pair, ("x",))
    reserved = directory / "reserved.nc"
    xr.Dataset({"_v": (("x",), np.arange(3.0))}).to_netcdf(reserved)
    broken = directory / "broken.nc"
    broken.write_bytes(b"not a NetCDF file" * 50)
    return {"compound": compound, "reserved": reserved, "broken": broken}


def with_bad(good, bad):
    """``good`` with the bad files spread through it (early, middle, late)."""
    files = list(good)
    for position, path in zip((5, len(files) // 2, len(files) - 3), bad.values()):
        files.insert(position, path)
    return files


def command(*args):
    return subprocess.run(
        [sys.executable, "-m", "atlas_collections", "import", *map(str, args)],
        capture_output=True,
        text=True,
    )


def assert_nothing_left(out):
    assert not out.exists(), list(out.iterdir())


def test_jobs_1_2_and_3_write_the_same_bytes_in_argument_order(stations, serial, tmp_path):
    for jobs in (2, 3):
        summary = ac.import_netcdf(tmp_path / f"j{jobs}", stations, jobs=jobs, progress=False)
        assert (summary.datasets, summary.files, summary.skipped) == (STATIONS, STATIONS, ())
        assert (tmp_path / f"j{jobs}" / "data.atlas").read_bytes() == serial
    collection = ac.open(tmp_path / "j3")
    assert collection.names == [p.stem for p in stations]
    for path in (stations[0], stations[-1]):
        with xr.open_dataset(path) as source:
            got = xr.open_dataset(tmp_path / "j3", engine="atlas", group=path.stem).load()
            xr.testing.assert_identical(got, source.load())
            assert got["lat"].dims == () and got["tas"].shape == (365,)


def test_the_command_with_its_default_jobs_writes_the_same_bytes(stations, serial, tmp_path):
    assert default_jobs() == len(os.sched_getaffinity(0)) > 1  # a worker per CPU
    done = command(tmp_path / "out", *stations)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"imported {STATIONS} datasets into ")
    assert f"{STATIONS}/{STATIONS}" in done.stderr  # the progress bar, every file
    assert (tmp_path / "out" / "data.atlas").read_bytes() == serial


@pytest.mark.parametrize("kind", ["compound", "reserved", "broken"])
def test_a_bad_file_stops_a_parallel_import_naming_it_and_leaves_nothing(stations, tmp_path, kind):
    bad = bad_files(tmp_path / "bad")[kind]
    files = list(stations[:40])
    files.insert(25, bad)
    out = tmp_path / "out"
    with pytest.raises(ac.ImportRefusedError) as info:
        ac.import_netcdf(out, files, jobs=2, progress=False)
    assert info.value.file == str(bad) and str(bad) in str(info.value)
    expected = {
        "compound": "structured/void",
        "reserved": "a leading '_' is reserved",
        "broken": "cannot be read",
    }[kind]
    assert expected in info.value.reason
    assert_nothing_left(out)
    with pytest.raises(ac.NotACollectionError):
        ac.open(out)


def test_skip_bad_leaves_out_and_lists_the_bad_files_and_imports_the_rest(
    stations, serial, tmp_path
):
    bad = bad_files(tmp_path / "bad")
    invalid_stem = tmp_path / "bad" / "_hidden.nc"
    bench_import.station_dataset(0).to_netcdf(invalid_stem)
    files = with_bad(stations, bad)
    files.insert(1, invalid_stem)
    summary = ac.import_netcdf(tmp_path / "out", files, jobs=2, progress=False, skip_bad=True)
    assert (summary.datasets, summary.files) == (STATIONS, STATIONS + 4)
    # In the order given, each with its reason.
    assert [e.file for e in summary.skipped] == [
        str(p) for p in files if p in (invalid_stem, *bad.values())
    ]
    reasons = {Path(e.file).stem: e.reason for e in summary.skipped}
    assert "structured/void" in reasons["compound"] and "reserved" in reasons["reserved"]
    assert "cannot be read" in reasons["broken"] and "reserved" in reasons["_hidden"]
    assert next(e for e in summary.skipped if "compound" in e.file).variable == "obs"
    assert next(e for e in summary.skipped if "reserved.nc" in e.file).variable == "_v"
    # The rest is exactly what importing only the good files writes.
    assert (tmp_path / "out" / "data.atlas").read_bytes() == serial


def test_skip_bad_with_every_file_bad_publishes_nothing(tmp_path):
    bad = bad_files(tmp_path / "bad")
    out = tmp_path / "out"
    with pytest.raises(ac.ImportRefusedError) as info:
        ac.import_netcdf(out, list(bad.values()), jobs=2, progress=False, skip_bad=True)
    assert "every one of the 3 files" in str(info.value)
    skipped = info.value.skipped  # type: ignore[attr-defined]  # a field of this raise only
    assert [e.file for e in skipped] == [str(p) for p in bad.values()]
    assert_nothing_left(out)


def test_the_command_exit_statuses_and_messages(stations, tmp_path):
    bad = bad_files(tmp_path / "bad")
    files = with_bad(stations[:60], bad)

    stopped = command(tmp_path / "stopped", *files, "--jobs", "2", "--no-progress")
    assert stopped.returncode == 1, stopped.stderr
    assert stopped.stdout == ""
    assert stopped.stderr.startswith(f"error: refused to import {bad['compound']}: ")
    assert "nothing was written" in stopped.stderr
    assert_nothing_left(tmp_path / "stopped")

    skipped = command(tmp_path / "skipped", *files, "--jobs", "2", "--skip-bad", "--no-progress")
    assert skipped.returncode == 3, skipped.stderr
    assert skipped.stdout.startswith("imported 60 datasets into ")
    lines = skipped.stderr.splitlines()
    assert lines[0] == "skipped 3 of 63 files:"
    assert lines[1].startswith(f"  {bad['compound']}: variable 'obs': dtype ")
    assert lines[2].startswith(f"  {bad['reserved']}: variable '_v': invalid variable name")
    assert lines[3].startswith(f"  {bad['broken']}: cannot be read as NetCDF")
    assert len(lines) == 4
    assert ac.open(tmp_path / "skipped").names == [p.stem for p in stations[:60]]

    none = command(tmp_path / "none", *bad.values(), "--skip-bad", "--no-progress", "-j", "2")
    assert none.returncode == 1, none.stderr
    assert none.stderr.startswith("skipped 3 of 3 files:\n")
    assert "error: refused every one of the 3 files" in none.stderr
    assert_nothing_left(tmp_path / "none")

    for jobs in ("0", "two"):
        usage = command(tmp_path / "usage", stations[0], "--jobs", jobs)
        assert usage.returncode == 2 and "--jobs" in usage.stderr, usage.stderr
    assert_nothing_left(tmp_path / "usage")
    helped = command("--help")
    assert helped.returncode == 0 and "exit status" in helped.stdout
    assert "--skip-bad" in helped.stdout and "--jobs" in helped.stdout


def process_group(pgid):
    """The live (not zombie) processes of process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


@pytest.mark.parametrize(
    ("signum", "group", "status", "said"),
    [
        (signal.SIGINT, True, 130, "interrupted"),  # Ctrl-C: the terminal signals the group
        (signal.SIGTERM, False, 143, "terminated"),  # kill PID: the command alone
    ],
)
def test_ctrl_c_or_sigterm_stops_the_workers_and_leaves_nothing(
    stations, tmp_path, signum, group, status, said
):
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "atlas_collections", "import", str(out), *map(str, stations)]
        + ["--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    assert process.stderr is not None
    stderr = bytearray()

    def read() -> None:
        assert process.stderr is not None
        while chunk := os.read(process.stderr.fileno(), 65536):
            stderr.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def written() -> int:
        found = re.findall(rb"(\d+)/%d" % STATIONS, bytes(stderr))
        return int(found[-1]) if found else 0

    # Wait, by the progress bar, until the import is well under way.
    deadline = time.monotonic() + 60
    while written() < 20 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    assert 20 <= written() < STATIONS, bytes(stderr)
    members = process_group(process.pid)
    assert len(members) >= 4, members  # the command, the fork server, two workers
    if group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    assert process.wait(timeout=30) == status
    reader.join(timeout=30)
    text = stderr.decode()
    assert f"{said}: nothing was written to {out}" in text
    assert "Traceback" not in text, text
    assert_nothing_left(out)
    deadline = time.monotonic() + 10
    while process_group(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_group(process.pid) == []


def test_decoded_datasets_waiting_for_the_writer_stay_bounded(stations, tmp_path, monkeypatch):
    """However slow the writer, besides the dataset being written at most
    ``IN_FLIGHT_PER_JOB`` per worker are submitted and not yet written."""
    from atlas_collections._core import Writer

    submitted = []
    ahead = []
    real_submit = concurrent.futures.ProcessPoolExecutor.submit
    real_write = Writer._write_items

    def submit(self, *args, **kwargs):
        submitted.append(1)
        return real_submit(self, *args, **kwargs)

    def slow_write(self, name, items, pairs):
        ahead.append(len(submitted) - self.dataset_count)
        time.sleep(0.005)
        return real_write(self, name, items, pairs)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", submit)
    monkeypatch.setattr(Writer, "_write_items", slow_write)
    ac.import_netcdf(tmp_path / "out", stations[:100], jobs=2, progress=False)
    assert len(submitted) == 100 and len(ahead) == 100
    assert max(ahead) == 1 + 2 * IN_FLIGHT_PER_JOB
