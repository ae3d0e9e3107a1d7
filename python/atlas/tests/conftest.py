"""Shared helpers for the atlas_collections tests: every test writes and reads real collections."""

import os
import uuid

import numpy as np
import pytest

import atlas_collections as ac


def small_dataset(i: int) -> dict:
    """Three 24 x 32 variables (float32, int16, float64) and a time axis for dataset ``i``."""
    rng = np.random.default_rng(i)
    return {
        "t2m": (("y", "x"), (rng.standard_normal((24, 32)) + i).astype("float32"), {"units": "K"}),
        "count": (("y", "x"), np.arange(24 * 32, dtype="int16").reshape(24, 32) + i, {}),
        "precip": (("y", "x"), rng.random((24, 32)), {"units": "mm", "scale": np.float32(0.5)}),
    }


def write_collection(location, n: int = 5) -> list:
    """Writes ``n`` datasets ``ds_000`` ... and returns their names."""
    names = [f"ds_{i:03d}" for i in range(n)]
    with ac.Writer(location) as w:
        for i, name in enumerate(names):
            w.write(name, small_dataset(i), attrs={"member": i, "source": "pytest"})
    return names


@pytest.fixture
def collection_dir(tmp_path):
    path = tmp_path / "coll"
    write_collection(path)
    return path


@pytest.fixture
def s3_prefix():
    """A fresh ``s3://bucket/prefix`` on the test server. Fails (never skips) without one:
    ``cargo xtask test`` starts it; by hand, ``bash .ci/s3-server.sh start /tmp/s3 && source
    /tmp/s3/env``."""
    missing = [v for v in ("AWS_ENDPOINT_URL", "ATLAS_S3_TEST_BUCKET") if not os.environ.get(v)]
    if missing:
        pytest.fail(
            f"the S3 tests need {', '.join(missing)}: start the test server with "
            "`bash .ci/s3-server.sh start /tmp/s3 && source /tmp/s3/env` (cargo xtask test does)"
        )
    return f"s3://{os.environ['ATLAS_S3_TEST_BUCKET']}/pytest-atlas-python/{uuid.uuid4().hex}"
