"""Tokenizing text into a token cache: ``datasetrt.pack_parquet(text_column=...,
tokenizer=..., jobs=2)`` against the Python ``tokenizers`` package's ``encode_batch`` on the
same texts.

The input is 24,000 documents of multilingual text (the Universal Declaration's first article
in fifteen languages, repeated 1-12 times per document with a document number: 30 MB of
UTF-8), one Parquet file in row groups of 1,000, in the page cache. Arms:

- ``encode_batch``: ``Tokenizer.from_file(tokenizer.json).encode_batch(texts,
  add_special_tokens=False)`` over every text, already in memory as a Python list: the
  package's own batch API, its Rust threads on every CPU (2 here), tokenizing only.
- ``pack_jobs2``: ``datasetrt.pack_parquet(..., text_column="text", tokenizer=...,
  append_eos=False, jobs=2)``: reads the Parquet file, tokenizes in 2 workers, checks and
  writes every id, hashes and fsyncs the cache: all of that against tokenizing alone.
  Target: >= 0.8x ``encode_batch``'s documents/s.

Each round runs both arms in an order that alternates, after a ``sync`` and a second's pause;
the report is each arm's median documents/s and the median ratio over the rounds, with the
lowest and highest. The ids are checked equal once.

``python bench_tokens.py [--rounds 3] [--tokenizer fixtures/tokenizers/gpt2.json]``
(a release build of the package: ``maturin develop --release``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tokenizers import Tokenizer  # type: ignore[import-untyped]

import datasetrt

ROOT = Path(__file__).resolve().parents[3]
ARTICLE_1 = [
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
    "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。",
    "모든 인간은 태어날 때부터 자유로우며 그 존엄과 권리에 있어 동등하다.",
    "يولد جميع الناس أحراراً متساوين في الكرامة والحقوق. وقد وهبوا عقلاً وضميراً.",
    "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता और समानता प्राप्त है।",
    "Όλοι οι άνθρωποι γεννιούνται ελεύθεροι και ίσοι στην αξιοπρέπεια και τα δικαιώματα.",
    "כל בני האדם נולדו בני חורין ושווים בערכם ובזכויותיהם.",
    "Tüm insanlar hür, haysiyet ve haklar bakımından eşit doğarlar.",
    "มนุษย์ทั้งหลายเกิดมามีอิสระและเสมอภาคกันในเกียรติศักด์และสิทธิ",
    "Wszyscy ludzie rodzą się wolni i równi pod względem swej godności i swych praw.",
]
DOCUMENTS = 24_000


def corpus() -> list[str]:
    rng = np.random.default_rng(11)
    texts = []
    for d in range(DOCUMENTS):
        picks = rng.integers(0, len(ARTICLE_1), int(rng.integers(1, 13)))
        texts.append(f"Document {d}. " + " ".join(ARTICLE_1[p] for p in picks))
    return texts


def settle() -> None:
    subprocess.run(["sync"], check=False)
    time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokenizer", type=Path, default=ROOT / "fixtures/tokenizers/gpt2.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-tokens-"))
    texts = corpus()
    pq.write_table(pa.table({"text": texts}), work / "t.parquet", row_group_size=1_000)
    size = sum(len(t.encode()) for t in texts)
    print(
        f"bench_tokens: {DOCUMENTS} documents, {size / 1e6:.1f} MB of text, {args.tokenizer.name}"
    )
    tokenizer = Tokenizer.from_file(str(args.tokenizer))

    def encode_batch() -> float:
        started = time.perf_counter()
        encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
        took = time.perf_counter() - started
        assert len(encodings) == DOCUMENTS
        return took

    def pack(out: Path) -> float:
        started = time.perf_counter()
        datasetrt.pack_parquet(
            work / "t.parquet",
            out,
            source="bench",
            text_column="text",
            tokenizer=args.tokenizer,
            jobs=2,
        )
        took = time.perf_counter() - started
        return took

    # Untimed: warm both, and check the ids are the package's.
    expected = [e.ids for e in tokenizer.encode_batch(texts[:500], add_special_tokens=False)]
    pack(work / "check")
    cache = datasetrt.Cache(work / "check")
    dtype = "<u2" if cache.manifest["tokens"]["dtype"] == "uint16" else "<u4"
    for i in range(500):
        assert np.frombuffer(bytes(cache[i].payload), dtype=dtype).tolist() == expected[i]
    shutil.rmtree(work / "check")

    times: dict[str, list[float]] = {"encode_batch": [], "pack_jobs2": []}
    ratios = []
    for round_ in range(args.rounds):
        took = {}
        for arm in (
            ["encode_batch", "pack_jobs2"] if round_ % 2 == 0 else ["pack_jobs2", "encode_batch"]
        ):
            settle()
            if arm == "encode_batch":
                took[arm] = encode_batch()
            else:
                out = work / f"out-{round_}"
                took[arm] = pack(out)
                shutil.rmtree(out)
        for arm, seconds in took.items():
            times[arm].append(seconds)
        ratios.append(took["encode_batch"] / took["pack_jobs2"])
    for arm, values in times.items():
        print(
            f"{arm:>13}: {DOCUMENTS / statistics.median(values):>9.0f} documents/s "
            f"({size / statistics.median(values) / 1e6:.1f} MB/s)"
        )
    print(
        f"pack_jobs2 / encode_batch: median {statistics.median(ratios):.3f} "
        f"(low {min(ratios):.3f}, high {max(ratios):.3f})"
    )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
