"""Hostile Atlas containers, built in Python for the tests: small files that ask a reader for far
more memory than they hold. The same kinds as ``crates/dsrt-atlas-fixtures/src/hostile.rs``
(which the Rust tests and the fuzz seeds use); ``docs/reliability.md`` ("Hostile inputs",
Atlas) lists what each gets.

zstd frames that decode to hundreds of megabytes are written by hand as run-length blocks (four
bytes per 128 KiB), never by compressing that much, so every file takes milliseconds to make.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa

import atlas_collections as ac

MAGIC = b"ATLS"
VERSION = 8
BLOCK_MAX = 128 * 1024


def rle_frame(*parts: bytes | tuple[int, int]) -> bytes:
    """One zstd frame of ``parts`` in order: ``bytes`` as raw blocks, ``(byte, count)`` as RLE
    blocks; it declares its content size and a 128 KiB window."""
    content = sum(len(p) if isinstance(p, bytes) else p[1] for p in parts)
    frame = bytearray(b"\x28\xb5\x2f\xfd\xc0\x38") + struct.pack("<Q", content)
    blocks: list[tuple[int, int, bytes]] = []
    for part in parts:
        if isinstance(part, bytes):
            for start in range(0, len(part), BLOCK_MAX):
                chunk = part[start : start + BLOCK_MAX]
                blocks.append((0, len(chunk), chunk))
        else:
            byte, count = part
            while count > 0:
                size = min(count, BLOCK_MAX)
                blocks.append((1, size, bytes([byte])))
                count -= size
    if not blocks:
        blocks.append((0, 0, b""))
    for i, (kind, size, body) in enumerate(blocks):
        header = int(i == len(blocks) - 1) | (kind << 1) | (size << 3)
        frame += header.to_bytes(3, "little") + body
    return bytes(frame)


def container_with_footer(frame: bytes, segments: bytes = b"") -> bytes:
    """``data.atlas``: header, ``segments``, the footer frame, the trailer."""
    header = MAGIC + struct.pack("<I", VERSION)
    trailer = struct.pack("<QI", len(frame), VERSION) + MAGIC
    return header + segments + frame + trailer


def _head(strings: int) -> bytes:
    """The footer's first fields (8-field array, version 8, "Zstd", time 0) and a string pool
    header of ``strings`` strings."""
    return b"\x98\x08\xa4Zstd\x00\xdd" + struct.pack(">I", strings)


def empty_string_pool(strings: int) -> bytes:
    """A valid footer of ``strings`` empty strings: one byte of msgpack, a 24-byte string in a
    decoded footer, each."""
    return container_with_footer(rle_frame(_head(strings), (0xA0, strings), b"\x90\x90\x90\x90"))


def zero_footer(zeros: int) -> bytes:
    """A footer frame of ``zeros`` zero bytes: not msgpack, which a reader learns only by
    decoding it."""
    return container_with_footer(rle_frame((0, zeros)))


def deep_attribute_types(attributes: int, depth: int) -> bytes:
    """A valid footer whose one schema declares ``attributes`` dataset attributes, every one
    keyed ``_datasets`` and typed by a list nested ``depth`` deep: three bytes of msgpack each,
    and ``depth`` boxes each in a reader that resolves every attribute to its own copy of the
    type. zstd-compressed (by pyarrow's zstd) as a writer would; one 1-byte ``_datasets``
    segment makes it valid."""
    msgpack = bytearray(b"\x98\x08\xa4Zstd\x00")
    msgpack += b"\x91\xa9_datasets\x91"
    msgpack += b"\x81\xa4List\x91" * depth + b"\xa4Int8"
    msgpack += b"\x91\x93\x90\xdd" + struct.pack(">I", attributes)
    msgpack += b"\x92\x00\x00" * attributes
    msgpack += b"\x90\x91\x93\x00\x08\x01\x90"
    frame = pa.compress(bytes(msgpack), codec="zstd", asbytes=True)
    return container_with_footer(frame, segments=b"\x00")


def write(path: Path, data: bytes) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "data.atlas").write_bytes(data)
    return path


def block_bomb(path: Path, claim: int) -> Path:
    """A collection of datasets ``big`` (65,536 random float32) and ``small`` (32 float32) in
    one block of variable ``v``, whose zstd frame is replaced by one that really decodes to
    ``claim`` zero bytes (padded by a skippable frame) and whose block table says so: a reader
    that trusts the table decodes ``claim`` bytes to read 128."""
    rng = np.random.default_rng(7)
    big = rng.integers(0, 2**32, 65_536, dtype=np.uint32).view(np.float32)
    with ac.Writer(path) as w:
        w.write("big", {"v": big})
        w.write("small", {"v": np.arange(32, dtype=np.float32)})
    data = bytearray((path / "data.atlas").read_bytes())
    decoded = (65_536 + 32) * 4
    entries = [
        at
        for at in range(8, len(data) - 24)
        if data[at + 16 : at + 24] == struct.pack("<Q", decoded)
        and data[at : at + 8] == bytes(8)
        and 0 < struct.unpack_from("<Q", data, at + 8)[0] < 2 * decoded
    ]
    assert len(entries) == 1, entries
    entry = entries[0]
    stored = struct.unpack_from("<Q", data, entry + 8)[0]
    frame = rle_frame((0, claim))
    padding = stored - len(frame) - 8
    assert padding >= 0, "the claim needs more frame bytes than the block stores"
    frame += struct.pack("<II", 0x184D2A50, padding) + bytes(padding)
    # The segment starts at 8 and its one block at the segment's start.
    data[8 : 8 + stored] = frame
    struct.pack_into("<Q", data, entry + 16, claim)
    (path / "data.atlas").write_bytes(bytes(data))
    return path
