"""The remote options' defaults are defined once, by the Rust `RemoteOptions`: the text
signatures, the stub, the torch module and the docs say the same values."""

import ast
import inspect
import re
from pathlib import Path

import pytest

import datasetrt
from datasetrt import _native
from datasetrt import torch as dsrt_torch

ROOT = Path(__file__).resolve().parents[3]
DEFAULTS = _native.REMOTE_DEFAULTS


def test_the_rust_defaults_are_the_documented_ones():
    assert DEFAULTS == {
        "prefetch_shards": 8,
        "read_while_downloading": True,
        "attempts": 5,
        "first_backoff": 0.1,
        "wait_for_room": 600.0,
    }


@pytest.mark.parametrize("cls", [datasetrt.Cache, datasetrt.Dataset])
def test_the_text_signatures_show_the_rust_defaults(cls):
    parameters = inspect.signature(cls).parameters
    shown = {name: parameters[name].default for name in DEFAULTS}
    assert shown == DEFAULTS


@pytest.mark.parametrize("name", ["Cache", "Dataset"])
def test_the_stub_shows_the_rust_defaults(name):
    stub = ast.parse((ROOT / "python/datasetrt/src/datasetrt/_native.pyi").read_text())
    (cls,) = [n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == name]
    (new,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__new__"]
    names = [a.arg for a in new.args.kwonlyargs]
    values = [ast.literal_eval(d) if d is not None else None for d in new.args.kw_defaults]
    shown = dict(zip(names, values))
    assert {key: shown[key] for key in DEFAULTS} == DEFAULTS


def test_the_torch_module_forwards_the_rust_defaults():
    assert dsrt_torch._REMOTE_DEFAULTS == DEFAULTS


@pytest.mark.parametrize("name", ["Cache", "Dataset"])
def test_the_docs_show_the_rust_defaults(name):
    docs = (ROOT / "docs/python.md").read_text()
    (heading,) = re.findall(rf"^### `{name}\((.*)\)`$", docs, flags=re.M)
    shown = dict(re.findall(r"(\w+)=([^,]+)", heading))
    assert {key: ast.literal_eval(shown[key]) for key in DEFAULTS} == DEFAULTS
