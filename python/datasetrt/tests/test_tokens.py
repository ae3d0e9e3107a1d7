"""datasetrt.TokenWriter: documents of token ids from NumPy arrays of every integer dtype and
from lists, read back byte for byte; the token info in the manifest; every refusal typed,
naming the cache, the document and the id, with nothing written."""

import numpy as np
import pytest

import datasetrt


def documents(count, vocab, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.minimum(1 + rng.pareto(1.2, count) * 40, 20_000).astype(np.int64)
    return [rng.integers(0, vocab, n, dtype=np.int64) for n in lengths]


@pytest.mark.parametrize(
    "vocab,dtype,np_dtype", [(50_257, "uint16", np.uint16), (128_256, "uint32", np.uint32)]
)
def test_documents_round_trip(tmp_path, vocab, dtype, np_dtype):
    docs = documents(400, vocab)
    path = tmp_path / "c"
    input_dtypes = [np.int64, np.uint32, np.int32, np.uint64, list]
    with datasetrt.TokenWriter(
        path,
        source="web",
        vocab_size=vocab,
        eos_id=vocab - 1,
        tokenizer="test",
        schema={"url": "utf8"},
        max_shard_bytes=64 << 10,
    ) as writer:
        assert writer.token_dtype == dtype
        for i, doc in enumerate(docs):
            kind = input_dtypes[i % len(input_dtypes)]
            tokens = doc.tolist() if kind is list else doc.astype(kind)
            assert writer.add(tokens, url=f"u{i}") == i
        assert writer.documents == len(docs)
        assert writer.tokens == sum(len(d) for d in docs)
    cache = datasetrt.Cache(path, validate_cache=True)
    assert cache.manifest["tokens"] == {
        "dtype": dtype,
        "vocab_size": vocab,
        "bos_id": None,
        "eos_id": vocab - 1,
        "pad_id": None,
        "tokenizer": "test",
    }
    assert len(cache.manifest["shards"]) > 1
    for i, doc in enumerate(docs):
        sample = cache[i]
        assert sample.metadata == {"n_tokens": len(doc), "url": f"u{i}"}
        ids = np.frombuffer(bytes(sample.payload), dtype=np.dtype(np_dtype).newbyteorder("<"))
        np.testing.assert_array_equal(ids, doc)


def test_narrow_inputs_and_byte_order(tmp_path):
    with datasetrt.TokenWriter(tmp_path / "c", source="s", token_dtype=np.uint16) as writer:
        writer.add(np.array([1, 2, 300], dtype=">i2"))
        writer.add(np.array([7], dtype=np.uint8))
        writer.add([])
        writer.add(np.arange(10, dtype=np.int16)[::3])
    cache = datasetrt.Cache(tmp_path / "c")
    assert bytes(cache[0].payload) == np.array([1, 2, 300], dtype="<u2").tobytes()
    assert bytes(cache[1].payload) == b"\x07\x00"
    assert bytes(cache[2].payload) == b"" and cache[2].metadata == {"n_tokens": 0}
    assert bytes(cache[3].payload) == np.array([0, 3, 6, 9], dtype="<u2").tobytes()


def test_refusals_name_the_cache_document_and_id_and_write_nothing(tmp_path):
    path = tmp_path / "r"
    writer = datasetrt.TokenWriter(path, source="s", vocab_size=1000)
    writer.add([1, 2, 3])
    cases = [
        (np.array([5, 1000], dtype=np.int64), "token 1 is 1000"),
        ([0, -1], "token 1 is -1"),
        (np.array([70_000], dtype=np.uint32), "token 0 is 70000"),
        ([2**70], "token 0 is"),
    ]
    for tokens, text in cases:
        with pytest.raises(datasetrt.WriteError) as raised:
            writer.add(tokens)
        assert raised.value.kind == "token_out_of_range"
        assert text in str(raised.value) and "document 1" in str(raised.value)
        assert raised.value.path == str(path)
    with pytest.raises(TypeError, match="integer dtype"):
        writer.add(np.array([1.5]))
    with pytest.raises(TypeError, match="token 1 is not an int"):
        writer.add([1, "x"])
    with pytest.raises(ValueError, match="one-dimensional"):
        writer.add(np.zeros((2, 2), dtype=np.int64))
    assert writer.documents == 1
    writer.add([4])
    summary = writer.finish()
    assert summary["samples"] == 2 and summary["tokens"] == 4
    assert summary["token_dtype"] == "uint16"

    with pytest.raises(datasetrt.WriteError) as raised:
        datasetrt.TokenWriter(tmp_path / "x", source="s", token_dtype="uint16", vocab_size=128_256)
    assert raised.value.kind == "bad_token_info"
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match="token_dtype"):
        datasetrt.TokenWriter(tmp_path / "y", source="s")
    with pytest.raises(ValueError, match="uint16"):
        datasetrt.TokenWriter(tmp_path / "y", source="s", token_dtype="int8")


def test_an_exception_in_the_block_publishes_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with datasetrt.TokenWriter(tmp_path / "c", source="s", token_dtype="uint32") as writer:
            writer.add([1])
            raise RuntimeError("stop")
    assert not (tmp_path / "c" / "manifest.json").exists()
