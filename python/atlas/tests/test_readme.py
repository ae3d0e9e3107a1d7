"""The commands of ``python/atlas/README.md`` work as written, in a fresh virtual environment.

The test reads the README itself, so it fails when the README drifts: its ``pip install`` line
is run (by uv's pip when uv is at hand, else by the fresh environment's own pip), then, in a
directory holding ``runs/*.nc``, its import command through a shell (so ``runs/*.nc`` is
globbed) and its Python block, with only the fresh environment's ``bin`` first on ``PATH``.

What is installed is not compiled from ``./python/atlas``: that would build the Rust extension
again, for minutes. It is the build the suite runs against, packed from this environment's
installed ``atlas-collections`` back into a wheel (every file its ``RECORD`` lists, less what
the installer added), and the README's requirement keeps its extras: ``"./python/atlas[netcdf]"``
becomes ``"<that wheel>[netcdf]"``. The extras' dependencies come from the package index
(versions held to ``python/requirements-test.txt``, which the uv cache already holds).

The root ``README.md`` has no command of this package to run: its Python block is
``datasetrt``'s, and its Atlas commands are the Rust ``atlas`` command, built by ``cargo``.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import xarray as xr

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "python" / "atlas" / "README.md"
CONSTRAINTS = ROOT / "python" / "requirements-test.txt"
#: What the installer writes into ``.dist-info``, which a wheel does not carry.
INSTALLER_FILES = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json", "uv_cache.json"}


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def commands(block: str) -> list[str]:
    """The block's command lines as written (for the shell to expand), trailing ``# comments``
    removed."""
    lines = []
    for line in block.splitlines():
        if shlex.split(line, comments=True):
            lines.append(re.sub(r"\s+#[^'\"]*$", "", line).strip())
    return lines


def repack_installed_wheel(directory: Path) -> Path:
    """This environment's installed ``atlas-collections`` as a wheel in ``directory``."""
    dist = importlib.metadata.distribution("atlas-collections")
    files = [f for f in dist.files or [] if not str(f).startswith("..")]
    info = next(f for f in files if f.name == "WHEEL" and f.parent.name.endswith(".dist-info"))
    tags = [
        line.split(":", 1)[1].strip()
        for line in Path(str(dist.locate_file(info))).read_text().splitlines()
        if line.startswith("Tag:")
    ]
    assert len(tags) == 1, tags
    name = dist.metadata["Name"].replace("-", "_")
    wheel = directory / f"{name}-{dist.version}-{tags[0]}.whl"
    record = io.StringIO()
    rows = csv.writer(record, lineterminator="\n")
    record_path = f"{info.parent}/RECORD"
    # Stored, not deflated: the native module is large, and this wheel is read once.
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_STORED) as archive:
        for file in files:
            path = str(file)
            in_info = file.parent.name.endswith(".dist-info") and file.parent == info.parent
            if (in_info and file.name in INSTALLER_FILES) or "__pycache__" in path:
                continue
            data = Path(str(dist.locate_file(file))).read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.writerow([path, f"sha256={digest.decode()}", len(data)])
            archive.writestr(path, data)
        rows.writerow([record_path, "", ""])
        archive.writestr(record_path, record.getvalue())
    return wheel


def uv_binary() -> str | None:
    """uv from ``PATH``, else the one ``cargo xtask test`` bootstraps (xtask/src/python.rs)."""
    found = shutil.which("uv")
    if found:
        return found
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    bootstrap = cache / "datasetrt-atlas" / "uv-bootstrap" / "bin" / "uv"
    return str(bootstrap) if bootstrap.is_file() else None


def fresh_environment(venv: Path) -> tuple[Path, dict[str, str]]:
    """A new virtual environment at ``venv``: its interpreter, and the environment variables a
    shell with it activated has (nothing of this test run's ``PYTHONPATH``)."""
    uv = uv_binary()
    if uv:
        run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
    else:
        run([sys.executable, "-m", "venv", str(venv)])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv / "bin" / "python", env


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{argv}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def write_runs(directory: Path, n: int = 3) -> None:
    """``runs/run_000.nc`` ...: the files the README's commands take (``t2m`` on 24 x 32)."""
    directory.mkdir()
    for i in range(n):
        rng = np.random.default_rng(i)
        xr.Dataset(
            {"t2m": (("y", "x"), rng.standard_normal((24, 32)).astype("f4"), {"units": "K"})},
            coords={"y": np.arange(24.0), "x": np.arange(32.0)},
            attrs={"run": i},
        ).to_netcdf(directory / f"run_{i:03d}.nc")


#: Runs a block as the README shows it, printing the type of each expression statement's value
#: (the README's comments say what they are).
SHOW_TYPES = """
import ast, sys
tree = ast.parse(sys.argv[1])
scope = {}
for statement in tree.body:
    if isinstance(statement, ast.Expr):
        value = eval(compile(ast.Expression(statement.value), "<README>", "eval"), scope)
        kind = type(value)
        print(f"{kind.__module__}.{kind.__qualname__}", getattr(value, "shape", ""))
    else:
        exec(compile(ast.Module([statement], []), "<README>", "exec"), scope)
"""


def test_the_readme_commands_work_as_written_in_a_fresh_environment(tmp_path):
    text = README.read_text()
    shell_blocks, python_blocks = blocks(text, "sh"), blocks(text, "python")
    assert len(shell_blocks) == 1 and len(python_blocks) == 1, "the test knows one of each"
    install, *rest = commands(shell_blocks[0])

    # The install line, with the wheel of this build in place of the source directory.
    words = shlex.split(install)
    assert words[:2] == ["pip", "install"] and len(words) == 3, install
    match = re.fullmatch(r"(\./python/atlas)(\[[\w,]+\])?", words[2])
    assert match, f"the README installs {words[2]!r}, not ./python/atlas[...]"
    source, extras = match.groups()
    assert (ROOT / source / "pyproject.toml").read_text().count('name = "atlas-collections"') == 1
    assert extras == "[netcdf]", "the README's commands need the netcdf extra"
    (tmp_path / "wheels").mkdir()
    wheel = repack_installed_wheel(tmp_path / "wheels")
    python, env = fresh_environment(tmp_path / "venv")
    requirement = f"{wheel}{extras}"
    uv = uv_binary()
    installer = [uv, "pip", "install", "--python", str(python)] if uv else [str(python), "-m"]
    if not uv:
        installer += ["pip", "install"]
    run([*installer, "--constraint", str(CONSTRAINTS), requirement], env=env)
    # Nothing more than the README's extra is there: no test requirement came along.
    listed = run([str(python), "-m", "pip", "list"] if not uv else [uv, "pip", "list"], env=env)
    assert "dask" not in listed.stdout and "pytest" not in listed.stdout, listed.stdout

    # The import command, through a shell, from the directory the README's paths are relative to.
    work = tmp_path / "work"
    work.mkdir()
    write_runs(work / "runs")
    assert len(rest) == 1 and rest[0].startswith("python -m atlas_collections import "), rest
    done = run(["bash", "-c", rest[0]], cwd=work, env=env)
    assert done.stdout.startswith("imported 3 datasets into out/"), done.stdout
    assert "3/3" in done.stderr  # the progress bar: tqdm came with the extra

    # The Python block, in the same directory.
    shown = run([str(python), "-c", SHOW_TYPES, python_blocks[0]], cwd=work, env=env)
    lines = shown.stdout.splitlines()
    assert lines == ["numpy.ndarray (10, 16)", "xarray.core.dataset.Dataset "], lines
    # The environment is the fresh one, not this test run's.
    where = run([str(python), "-c", "import atlas_collections; print(atlas_collections.__file__)"])
    assert where.stdout.startswith(str(tmp_path / "venv")), where.stdout
