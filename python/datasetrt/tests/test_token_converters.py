"""Token converters against the peers themselves: Megatron-LM datasets written by
megatron-core's own IndexedDatasetBuilder, text tokenized by the `tokenizers` package's
encode_batch, Hugging Face save_to_disk and pyarrow list columns; identical ids, and refusals
naming the file and row with nothing left behind."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datasetrt

TOKENIZERS = Path(__file__).resolve().parents[3] / "fixtures" / "tokenizers"

# Article 1 of the Universal Declaration of Human Rights, in its official translations.
UDHR = [
    "All human beings are born free and equal in dignity and rights. They are endowed with "
    "reason and conscience and should act towards one another in a spirit of brotherhood.",
    "Tous les êtres humains naissent libres et égaux en dignité et en droits. Ils sont doués "
    "de raison et de conscience et doivent agir les uns envers les autres dans un esprit de "
    "fraternité.",
    "Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft "
    "und Gewissen begabt und sollen einander im Geist der Brüderlichkeit begegnen.",
    "Todos los seres humanos nacen libres e iguales en dignidad y derechos y, dotados como "
    "están de razón y conciencia, deben comportarse fraternalmente los unos con los otros.",
    "Все люди рождаются свободными и равными в своем достоинстве и правах. Они наделены "
    "разумом и совестью и должны поступать в отношении друг друга в духе братства.",
    "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。",
    "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。"
    "人間は、理性と良心とを授けられており、互いに同胞の精神をもって行動しなければならない。",
    "모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다. 인간은 천부적으로 "
    "이성과 양심을 부여받았으며 서로 형제애의 정신으로 행동하여야 한다.",
    "يولد جميع الناس أحراراً متساوين في الكرامة والحقوق. وقد وهبوا عقلاً وضميراً وعليهم أن "
    "يعامل بعضهم بعضاً بروح الإخاء.",
    "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता और समानता प्राप्त है। उन्हें "
    "बुद्धि और अन्तरात्मा की देन प्राप्त है और परस्पर उन्हें भाईचारे के भाव से बर्ताव करना चाहिए।",
    "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και τα δικαιώματα.",
    "כל בני האדם נולדו בני חורין ושווים בערכם ובזכויותיהם.",
    "Tüm insanlar hür, haysiyet ve haklar bakımından eşit doğarlar.",
    "มนุษย์ทั้งหลายเกิดมามีอิสระและเสมอภาคกันในเกียรติศักด์และสิทธิ",
    "Wszyscy ludzie rodzą się wolni i równi pod względem swej godności i swych praw.",
    "",
    "  leading spaces, tabs\tand\nnewlines, emoji 🙂👍🏽 and numbers 3.14159 1,000,000",
]


def texts(count):
    return [UDHR[i % len(UDHR)] * (1 + i % 3) for i in range(count)]


def ids_of(path):
    cache = datasetrt.Cache(path, validate_cache=True)
    dtype = {"uint16": "<u2", "uint32": "<u4"}[cache.manifest["tokens"]["dtype"]]
    out = []
    for i in range(len(cache)):
        sample = cache[i]
        ids = np.frombuffer(bytes(sample.payload), dtype=dtype).astype(np.int64)
        assert sample.metadata["n_tokens"] == len(ids)
        out.append(ids.tolist())
    return out


@pytest.mark.parametrize(
    "name,add_special_tokens,append_eos",
    [("gpt2.json", False, True), ("bert-base-uncased.json", True, False)],
)
def test_text_ids_equal_the_tokenizers_package(tmp_path, name, add_special_tokens, append_eos):
    from tokenizers import Tokenizer  # type: ignore[import-untyped]

    corpus = texts(300)
    pq.write_table(
        pa.table({"text": corpus, "i": list(range(300))}), tmp_path / "t.parquet", row_group_size=64
    )
    tokenizer = Tokenizer.from_file(str(TOKENIZERS / name))
    expected = [
        e.ids for e in tokenizer.encode_batch(corpus, add_special_tokens=add_special_tokens)
    ]
    if append_eos:
        eos = tokenizer.token_to_id("<|endoftext|>")
        expected = [ids + [eos] for ids in expected]
    outs = []
    for jobs in (1, 2):
        out = tmp_path / f"c{jobs}"
        summary = datasetrt.pack_parquet(
            tmp_path / "t.parquet",
            out,
            source="udhr",
            text_column="text",
            tokenizer=TOKENIZERS / name,
            add_special_tokens=add_special_tokens,
            append_eos=append_eos,
            jobs=jobs,
        )
        assert summary["samples"] == 300
        outs.append(out)
    assert ids_of(outs[0]) == expected
    for f in ("index.bin", "metadata.arrow", "manifest.json"):
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes()
    info = datasetrt.Cache(outs[0]).manifest["tokens"]
    assert info["vocab_size"] == tokenizer.get_vocab_size(with_added_tokens=True)
    assert info["tokenizer"] == name


def build_megatron(prefix, documents, dtype):
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder  # type: ignore[import-untyped]

    builder = IndexedDatasetBuilder(str(prefix) + ".bin", dtype=dtype)
    for document in documents:
        for sequence in document:
            builder.add_item(__import__("torch").tensor(sequence, dtype=__import__("torch").int64))
        builder.end_document()
    builder.finalize(str(prefix) + ".idx")


@pytest.mark.parametrize("dtype", [np.uint16, np.int32])
def test_megatron_core_datasets_import_with_identical_tokens(tmp_path, dtype):
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    rng = np.random.default_rng(7)
    documents = []
    for d in range(900):
        pieces = 1 + d % 3  # a document of several sequences, as --split-sentences writes
        documents.append(
            [rng.integers(0, 50_000, int(rng.integers(1, 300))).tolist() for _ in range(pieces)]
        )
    prefix = tmp_path / "corpus_text_document"
    build_megatron(prefix, documents, dtype)
    megatron = IndexedDataset(str(prefix))
    assert len(megatron.document_indices) == len(documents) + 1
    expected = []
    for d in range(len(documents)):
        start, end = megatron.document_indices[d], megatron.document_indices[d + 1]
        expected.append(np.concatenate([megatron[s] for s in range(start, end)]).tolist())
    assert expected == [sum(doc, []) for doc in documents]
    for jobs in (1, 2):
        out = tmp_path / f"m{jobs}"
        summary = datasetrt.pack_megatron(
            prefix, out, source="mega", vocab_size=50_257, eos_id=50_256, jobs=jobs
        )
        assert summary["samples"] == len(documents)
        assert ids_of(out) == expected
    assert (tmp_path / "m1" / "index.bin").read_bytes() == (
        tmp_path / "m2" / "index.bin"
    ).read_bytes()
    assert datasetrt.Cache(tmp_path / "m1").manifest["tokens"]["dtype"] == "uint16"


def test_list_columns_and_save_to_disk_give_the_ids_written(tmp_path):
    import datasets  # type: ignore[import-untyped]

    rng = np.random.default_rng(3)
    docs = [rng.integers(0, 32_000, int(rng.integers(0, 500))).tolist() for _ in range(400)]
    datasets.Dataset.from_dict({"input_ids": docs, "id": list(range(400))}).save_to_disk(
        str(tmp_path / "hf"), max_shard_size="200KB"
    )
    pq.write_table(
        pa.table({"ids": pa.array(docs, type=pa.large_list(pa.int32()))}),
        tmp_path / "large.parquet",
        row_group_size=50,
    )
    fixed = [d[:8] + [1] * (8 - len(d[:8])) for d in docs]
    pq.write_table(
        pa.table({"ids": pa.array(fixed, type=pa.list_(pa.uint16(), 8))}),
        tmp_path / "fixed.parquet",
    )
    datasetrt.pack_parquet(
        tmp_path / "hf", tmp_path / "a", source="s", tokens_column="input_ids", vocab_size=32_000
    )
    datasetrt.pack_parquet(
        tmp_path / "large.parquet", tmp_path / "b", source="s", tokens_column="ids"
    )
    datasetrt.pack_parquet(
        tmp_path / "fixed.parquet", tmp_path / "c", source="s", tokens_column="ids"
    )
    assert ids_of(tmp_path / "a") == docs
    assert [datasetrt.Cache(tmp_path / "a")[i].metadata["id"] for i in (0, 399)] == [0, 399]
    assert ids_of(tmp_path / "b") == docs
    assert ids_of(tmp_path / "c") == fixed
    assert datasetrt.Cache(tmp_path / "b").manifest["tokens"]["dtype"] == "uint32"
    assert datasetrt.Cache(tmp_path / "c").manifest["tokens"]["dtype"] == "uint16"


def test_refusals_name_file_and_row_and_leave_nothing(tmp_path):
    pq.write_table(pa.table({"ids": [[1, 2], [3, -4]]}), tmp_path / "neg.parquet")
    with pytest.raises(datasetrt.WriteError) as raised:
        datasetrt.pack_parquet(
            tmp_path / "neg.parquet", tmp_path / "out", source="s", tokens_column="ids"
        )
    assert raised.value.kind == "token_out_of_range"
    assert raised.value.input == f"{tmp_path / 'neg.parquet'} row 1"
    assert "token 1 is -4" in str(raised.value)
    assert not (tmp_path / "out").exists()
    pq.write_table(pa.table({"ids": [[1, 70_000]]}), tmp_path / "wide.parquet")
    with pytest.raises(datasetrt.WriteError, match="token 1 is 70000, outside 0..=50256"):
        datasetrt.pack_parquet(
            tmp_path / "wide.parquet",
            tmp_path / "out",
            source="s",
            tokens_column="ids",
            vocab_size=50_257,
        )
    assert not (tmp_path / "out").exists()
    (tmp_path / "bad.idx").write_bytes(b"MMIDIDX\x00\x00" + b"\x01" + b"\x00" * 30)
    (tmp_path / "bad.bin").write_bytes(b"")
    with pytest.raises(datasetrt.WriteError, match="bad.idx"):
        datasetrt.pack_megatron(tmp_path / "bad", tmp_path / "out", source="s")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="one of payload_column"):
        datasetrt.pack_parquet(tmp_path / "wide.parquet", tmp_path / "out", source="s")
