//! Arrays that will not change again, held as compact records until `finish`.
//!
//! Added in `atlas-array-format` (not in array-format 0.15.0). A writer keeps the metadata of
//! every array until it finishes, and an Atlas segment has one array per dataset, so that state
//! multiplies by the dataset count. [`ArrayWriter::seal_array`](crate::ArrayWriter::seal_array)
//! turns an array's state into one record of a byte arena: varints for every number, the
//! chunk statistics already merged into the array's totals, and attributes as indices into
//! pools shared by every sealed array. `finish` seals what is still open, then serializes the
//! footer with the arrays decoded from their records one at a time ([`SealedMetas`]), straight
//! into a temp file ([`FooterSink`]), so neither the `ArrayMeta` list nor the footer bytes are
//! ever held whole.
//!
//! The file does not change: a record decodes to exactly the `ArrayMeta` 0.15.0 builds at
//! `finish` (statistics merged in the same chunk order), the string and value pools are
//! rebuilt in the order 0.15.0 interns them (keys in array order, then the strings of values),
//! and rkyv's `serialize_from_iter` writes what `Vec::serialize` writes.

use std::cell::RefCell;
use std::hash::{BuildHasher, RandomState};
use std::io::Write;

use ecow::EcoString;
use hashbrown::HashTable;
use indexmap::IndexSet;
use rkyv::rancor::Source;
use rkyv::ser::{Allocator, Positional, Writer};
use rkyv::vec::{ArchivedVec, VecResolver};
use rkyv::{Archive, Place, Serialize};

use crate::address::{BlockId, ChunkAddress};
use crate::attr::{AttributeValue, DiskValue, StringPool};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::footer::{ArchivedArrayMeta, ArrayMeta};
use crate::layout::{ChunkEntry, FillValue};
use crate::stats::{ArrayStats, StatValue};

/// `offsets` entry of an array that is defined but not sealed.
const OPEN: u64 = u64::MAX;

/// What a record holds, before it is encoded.
pub(crate) struct ArrayRecord<'a> {
    pub name: &'a str,
    pub dtype: &'a DType,
    pub shape: &'a [u32],
    pub dimension_names: &'a [String],
    pub chunk_shape: &'a [u32],
    pub fill_value: Option<&'a FillValue>,
    /// Sorted by coordinate.
    pub chunks: &'a [ChunkEntry],
    pub min: Option<&'a StatValue>,
    pub max: Option<&'a StatValue>,
    pub null_count: u64,
    pub row_count: u64,
}

/// The sealed arrays of one writer, and the definition order of all its arrays.
#[derive(Default)]
pub(crate) struct SealedArrays {
    /// One record per sealed array; see [`SealedArrays::seal`] for the layout.
    arena: Vec<u8>,
    /// Per definition index, where the array's record starts in `arena`, or [`OPEN`].
    offsets: Vec<u64>,
    /// Definition indices of the sealed arrays, hashed by name (the name is read from the
    /// record).
    names: HashTable<u32>,
    hasher: RandomState,
    /// Attribute keys of sealed arrays, each once, in first-sealed order.
    keys: IndexSet<EcoString>,
    /// Attribute values of sealed arrays, each once (bit-exact equality), in first-sealed order.
    values: IndexSet<AttributeValue>,
}

impl SealedArrays {
    /// Reserves the next definition index for an array that is still open.
    pub(crate) fn define(&mut self) -> Result<u32> {
        let index = u32::try_from(self.offsets.len())
            .map_err(|_| Error::Serialization("more than u32::MAX arrays in one file".into()))?;
        self.offsets.push(OPEN);
        Ok(index)
    }

    /// Whether an array called `name` is sealed.
    pub(crate) fn contains(&self, name: &str) -> bool {
        let hash = self.hasher.hash_one(name);
        self.names
            .find(hash, |&index| self.name_of(index) == Some(name))
            .is_some()
    }

    /// The name in the record of sealed array `index`.
    fn name_of(&self, index: u32) -> Option<&str> {
        let offset = *self.offsets.get(index as usize)?;
        let mut cursor = Cursor::at(&self.arena, offset).ok()?;
        cursor.str().ok()
    }

    /// Seals array `index`: appends its record and interns its attributes.
    ///
    /// Record layout (numbers are LEB128 varints, `i64` zigzag-encoded, `f64` 8 bytes LE):
    /// name; attribute count, then (key, value) pool indices sorted by key; dtype;
    /// rank, shape, chunk shape; dimension-name count and names; fill value; chunk count, then
    /// per chunk its coordinate (length and values) and address (block, offset, size);
    /// min, max, null count, row count.
    pub(crate) fn seal(
        &mut self,
        index: u32,
        record: &ArrayRecord<'_>,
        mut attributes: Vec<(EcoString, AttributeValue)>,
    ) {
        // The order the footer stores them in (keys are unique).
        attributes.sort_by(|a, b| a.0.cmp(&b.0));
        let start = self.arena.len() as u64;
        let out = &mut self.arena;
        put_bytes(out, record.name.as_bytes());
        put(out, attributes.len() as u64);
        for (key, value) in attributes {
            let (key, _) = self.keys.insert_full(key);
            let (value, _) = self.values.insert_full(value);
            put(out, key as u64);
            put(out, value as u64);
        }
        put_dtype(out, record.dtype);
        put(out, record.shape.len() as u64);
        for &s in record.shape {
            put(out, u64::from(s));
        }
        put(out, record.chunk_shape.len() as u64);
        for &c in record.chunk_shape {
            put(out, u64::from(c));
        }
        put(out, record.dimension_names.len() as u64);
        for name in record.dimension_names {
            put_bytes(out, name.as_bytes());
        }
        put_fill(out, record.fill_value);
        put(out, record.chunks.len() as u64);
        for chunk in record.chunks {
            put(out, chunk.coord.len() as u64);
            for &c in &chunk.coord {
                put(out, u64::from(c));
            }
            put(out, u64::from(chunk.address.block_id.0));
            put(out, u64::from(chunk.address.offset));
            put(out, u64::from(chunk.address.size));
        }
        put_stat(out, record.min);
        put_stat(out, record.max);
        put(out, record.null_count);
        put(out, record.row_count);

        if let Some(slot) = self.offsets.get_mut(index as usize) {
            *slot = start;
        }
        let hasher = &self.hasher;
        let hash = hasher.hash_one(record.name);
        let (arena, offsets) = (&self.arena, &self.offsets);
        self.names.insert_unique(hash, index, |&i| {
            let name = offsets
                .get(i as usize)
                .and_then(|&o| Cursor::at(arena, o).ok())
                .and_then(|mut c| c.str().ok());
            hasher.hash_one(name.unwrap_or_default())
        });
    }

    /// The string and value pools of the footer, and, per sealed key and value, its index in
    /// them. Every array must be sealed.
    ///
    /// 0.15.0 interns, array by array in definition order and key by key in key order, each
    /// key into the string pool and each value into the value pool; then it encodes the
    /// values in pool order, interning their strings after all keys. This walks the records
    /// in the same order and rebuilds both pools as that would.
    pub(crate) fn pools(&mut self) -> Result<Pools> {
        let mut key_index = vec![u32::MAX; self.keys.len()];
        let mut value_index = vec![u32::MAX; self.values.len()];
        let mut key_order = Vec::new();
        let mut value_order = Vec::new();
        for &offset in &self.offsets {
            let mut cursor = Cursor::at(&self.arena, offset)?;
            cursor.bytes()?;
            for _ in 0..cursor.u64()? {
                let key = cursor.index(key_index.len())?;
                let value = cursor.index(value_index.len())?;
                if key_index[key] == u32::MAX {
                    key_index[key] = key_order.len() as u32;
                    key_order.push(key);
                }
                if value_index[value] == u32::MAX {
                    value_index[value] = value_order.len() as u32;
                    value_order.push(value);
                }
            }
        }
        let mut strings = StringPool::default();
        for &key in &key_order {
            if let Some(key) = self.keys.get_index(key) {
                strings.intern(key);
            }
        }
        let values = std::mem::take(&mut self.values);
        let mut disk = Vec::with_capacity(value_order.len());
        for &value in &value_order {
            if let Some(value) = values.get_index(value) {
                disk.push(DiskValue::encode(value, &mut strings));
            }
        }
        self.keys = IndexSet::new();
        Ok(Pools {
            strings: strings.into_strings(),
            values: disk,
            index: PoolIndex {
                key_index,
                value_index,
            },
        })
    }

    /// Every array's metadata, in definition order, decoded as it is iterated.
    pub(crate) fn metas<'a>(
        &'a self,
        pools: &'a PoolIndex,
        failure: &'a RefCell<Option<Error>>,
    ) -> SealedMetas<'a> {
        SealedMetas {
            sealed: self,
            pools,
            next: 0,
            failure,
        }
    }

    /// Decodes the record at `offset`.
    fn decode(&self, offset: u64, pools: &PoolIndex) -> Result<ArrayMeta> {
        let mut c = Cursor::at(&self.arena, offset)?;
        let name = c.string()?;
        let attribute_count = c.len()?;
        let mut attributes = Vec::with_capacity(attribute_count);
        for _ in 0..attribute_count {
            let key = pools.key_index[c.index(pools.key_index.len())?];
            let value = pools.value_index[c.index(pools.value_index.len())?];
            attributes.push((key, value));
        }
        let dtype = c.dtype()?;
        let shape = c.u32s()?;
        let chunk_shape = c.u32s()?;
        let dimension_names = (0..c.len()?)
            .map(|_| c.string())
            .collect::<Result<Vec<_>>>()?;
        let fill_value = c.fill()?;
        let chunk_count = c.len()?;
        let mut chunks = Vec::with_capacity(chunk_count);
        for _ in 0..chunk_count {
            let coord = c.u32s()?;
            let address = ChunkAddress {
                block_id: BlockId(c.u32()?),
                offset: c.u32()?,
                size: c.u32()?,
            };
            chunks.push(ChunkEntry { coord, address });
        }
        let min = c.stat()?;
        let max = c.stat()?;
        let null_count = c.u64()?;
        let row_count = c.u64()?;
        Ok(ArrayMeta {
            stats: Some(ArrayStats {
                name: name.clone(),
                min,
                max,
                null_count,
                row_count,
            }),
            name,
            dtype,
            shape,
            dimension_names,
            chunk_shape,
            chunks,
            fill_value,
            attributes,
        })
    }
}

/// The footer's pools, and where each sealed key and value landed in them.
pub(crate) struct Pools {
    pub strings: Vec<String>,
    pub values: Vec<DiskValue>,
    pub index: PoolIndex,
}

/// Per sealed key and value, its index in the footer's pools.
pub(crate) struct PoolIndex {
    key_index: Vec<u32>,
    value_index: Vec<u32>,
}

/// The arrays of a footer, decoded from their records as rkyv asks for them. Archived as the
/// `Vec<ArrayMeta>` it stands for.
///
/// rkyv walks the list twice (dependencies, then the array of structs), so every record is
/// decoded twice and no `ArrayMeta` outlives its step. A record that does not decode (a bug:
/// the writer made it) yields an empty `ArrayMeta` and leaves the error in `failure`, which
/// the caller checks before using the bytes.
#[derive(Clone)]
pub(crate) struct SealedMetas<'a> {
    sealed: &'a SealedArrays,
    pools: &'a PoolIndex,
    next: usize,
    failure: &'a RefCell<Option<Error>>,
}

impl Iterator for SealedMetas<'_> {
    type Item = ArrayMeta;

    fn next(&mut self) -> Option<ArrayMeta> {
        let offset = *self.sealed.offsets.get(self.next)?;
        self.next += 1;
        Some(
            self.sealed
                .decode(offset, self.pools)
                .unwrap_or_else(|error| {
                    self.failure.borrow_mut().get_or_insert(error);
                    ArrayMeta {
                        name: String::new(),
                        dtype: DType::UInt8,
                        shape: Vec::new(),
                        dimension_names: Vec::new(),
                        chunk_shape: Vec::new(),
                        chunks: Vec::new(),
                        fill_value: None,
                        attributes: Vec::new(),
                        stats: None,
                    }
                }),
        )
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.sealed.offsets.len() - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for SealedMetas<'_> {}

impl Archive for SealedMetas<'_> {
    type Archived = ArchivedVec<ArchivedArrayMeta>;
    type Resolver = VecResolver;

    fn resolve(&self, resolver: VecResolver, out: Place<Self::Archived>) {
        ArchivedVec::resolve_from_len(self.len(), resolver, out);
    }
}

impl<S> Serialize<S> for SealedMetas<'_>
where
    S: rkyv::rancor::Fallible + Allocator + Writer + ?Sized,
    S::Error: Source,
{
    fn serialize(&self, serializer: &mut S) -> std::result::Result<VecResolver, S::Error> {
        ArchivedVec::<ArchivedArrayMeta>::serialize_from_iter::<ArrayMeta, _, _>(
            self.clone(),
            serializer,
        )
    }
}

/// rkyv's output, buffered into a file; counts the bytes it was given.
pub(crate) struct FooterSink {
    out: std::io::BufWriter<std::fs::File>,
    pos: usize,
    /// The first write error; rkyv only carries a message.
    pub io_error: Option<std::io::Error>,
}

impl FooterSink {
    pub(crate) fn new(file: std::fs::File) -> Self {
        Self {
            out: std::io::BufWriter::with_capacity(256 * 1024, file),
            pos: 0,
            io_error: None,
        }
    }

    /// Flushes and returns the file and the bytes written.
    pub(crate) fn into_file(self) -> Result<(std::fs::File, u64)> {
        if let Some(error) = self.io_error {
            return Err(Error::Io(error));
        }
        let file = self
            .out
            .into_inner()
            .map_err(|e| Error::Io(e.into_error()))?;
        Ok((file, self.pos as u64))
    }
}

impl Positional for FooterSink {
    fn pos(&self) -> usize {
        self.pos
    }
}

impl<E: Source> Writer<E> for FooterSink {
    fn write(&mut self, bytes: &[u8]) -> std::result::Result<(), E> {
        if let Err(error) = self.out.write_all(bytes) {
            let message = error.to_string();
            self.io_error.get_or_insert(error);
            return Err(E::new(std::io::Error::other(message)));
        }
        self.pos += bytes.len();
        Ok(())
    }
}

// ── Encoding ─────────────────────────────────────────────────────────

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_i64(out: &mut Vec<u8>, v: i64) {
    put(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn put_dtype(out: &mut Vec<u8>, dtype: &DType) {
    let tag = match dtype {
        DType::Bool => 0,
        DType::Int8 => 1,
        DType::Int16 => 2,
        DType::Int32 => 3,
        DType::Int64 => 4,
        DType::UInt8 => 5,
        DType::UInt16 => 6,
        DType::UInt32 => 7,
        DType::UInt64 => 8,
        DType::Float32 => 9,
        DType::Float64 => 10,
        DType::String => 11,
        DType::Binary => 12,
        DType::FixedSizeList { child, size } => {
            out.push(13);
            put(out, u64::from(*size));
            return put_dtype(out, child);
        }
        DType::List { child } => {
            out.push(14);
            return put_dtype(out, child);
        }
        DType::TimestampNs => 15,
    };
    out.push(tag);
}

fn put_fill(out: &mut Vec<u8>, fill: Option<&FillValue>) {
    match fill {
        None => out.push(0),
        Some(FillValue::Bool(v)) => {
            out.push(1);
            out.push(u8::from(*v));
        }
        Some(FillValue::Int(v)) => {
            out.push(2);
            put_i64(out, *v);
        }
        Some(FillValue::UInt(v)) => {
            out.push(3);
            put(out, *v);
        }
        Some(FillValue::Float(v)) => {
            out.push(4);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Some(FillValue::String(v)) => {
            out.push(5);
            put_bytes(out, v.as_bytes());
        }
        Some(FillValue::TimestampNs(v)) => {
            out.push(6);
            put_i64(out, *v);
        }
    }
}

fn put_stat(out: &mut Vec<u8>, stat: Option<&StatValue>) {
    match stat {
        None => out.push(0),
        Some(StatValue::Int(v)) => {
            out.push(1);
            put_i64(out, *v);
        }
        Some(StatValue::UInt(v)) => {
            out.push(2);
            put(out, *v);
        }
        Some(StatValue::Float(v)) => {
            out.push(3);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Some(StatValue::Bytes(v)) => {
            out.push(4);
            put_bytes(out, v);
        }
        Some(StatValue::TimestampNs(v)) => {
            out.push(5);
            put_i64(out, *v);
        }
    }
}

// ── Decoding ─────────────────────────────────────────────────────────

/// Reads a record. Every failure is a bug of the encoder above, reported as an error.
struct Cursor<'a> {
    bytes: &'a [u8],
}

fn corrupt(what: &str) -> Error {
    Error::Serialization(format!("sealed array record: {what}"))
}

impl<'a> Cursor<'a> {
    fn at(arena: &'a [u8], offset: u64) -> Result<Self> {
        usize::try_from(offset)
            .ok()
            .and_then(|o| arena.get(o..))
            .map(|bytes| Self { bytes })
            .ok_or_else(|| corrupt("array not sealed"))
    }

    fn byte(&mut self) -> Result<u8> {
        let (&first, rest) = self
            .bytes
            .split_first()
            .ok_or_else(|| corrupt("truncated"))?;
        self.bytes = rest;
        Ok(first)
    }

    fn u64(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(corrupt("varint too long"))
    }

    fn i64(&mut self) -> Result<i64> {
        let v = self.u64()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn u32(&mut self) -> Result<u32> {
        u32::try_from(self.u64()?).map_err(|_| corrupt("u32 out of range"))
    }

    /// A count of items that each take at least one byte.
    fn len(&mut self) -> Result<usize> {
        usize::try_from(self.u64()?)
            .ok()
            .filter(|&n| n <= self.bytes.len())
            .ok_or_else(|| corrupt("length past the record"))
    }

    /// An index below `bound`.
    fn index(&mut self, bound: usize) -> Result<usize> {
        usize::try_from(self.u64()?)
            .ok()
            .filter(|&i| i < bound)
            .ok_or_else(|| corrupt("pool index out of range"))
    }

    fn f64(&mut self) -> Result<f64> {
        let (bits, rest) = self
            .bytes
            .split_first_chunk::<8>()
            .ok_or_else(|| corrupt("truncated"))?;
        self.bytes = rest;
        Ok(f64::from_bits(u64::from_le_bytes(*bits)))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.len()?;
        let (bytes, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(bytes)
    }

    fn str(&mut self) -> Result<&'a str> {
        std::str::from_utf8(self.bytes()?).map_err(|_| corrupt("name is not UTF-8"))
    }

    fn string(&mut self) -> Result<String> {
        self.str().map(str::to_owned)
    }

    fn u32s(&mut self) -> Result<Vec<u32>> {
        (0..self.len()?).map(|_| self.u32()).collect()
    }

    fn dtype(&mut self) -> Result<DType> {
        Ok(match self.byte()? {
            0 => DType::Bool,
            1 => DType::Int8,
            2 => DType::Int16,
            3 => DType::Int32,
            4 => DType::Int64,
            5 => DType::UInt8,
            6 => DType::UInt16,
            7 => DType::UInt32,
            8 => DType::UInt64,
            9 => DType::Float32,
            10 => DType::Float64,
            11 => DType::String,
            12 => DType::Binary,
            13 => {
                let size = self.u32()?;
                DType::FixedSizeList {
                    child: Box::new(self.dtype()?),
                    size,
                }
            }
            14 => DType::List {
                child: Box::new(self.dtype()?),
            },
            15 => DType::TimestampNs,
            _ => return Err(corrupt("unknown dtype")),
        })
    }

    fn fill(&mut self) -> Result<Option<FillValue>> {
        Ok(Some(match self.byte()? {
            0 => return Ok(None),
            1 => FillValue::Bool(self.byte()? != 0),
            2 => FillValue::Int(self.i64()?),
            3 => FillValue::UInt(self.u64()?),
            4 => FillValue::Float(self.f64()?),
            5 => FillValue::String(self.string()?),
            6 => FillValue::TimestampNs(self.i64()?),
            _ => return Err(corrupt("unknown fill value")),
        }))
    }

    fn stat(&mut self) -> Result<Option<StatValue>> {
        Ok(Some(match self.byte()? {
            0 => return Ok(None),
            1 => StatValue::Int(self.i64()?),
            2 => StatValue::UInt(self.u64()?),
            3 => StatValue::Float(self.f64()?),
            4 => StatValue::Bytes(self.bytes()?.to_vec()),
            5 => StatValue::TimestampNs(self.i64()?),
            _ => return Err(corrupt("unknown statistic")),
        }))
    }
}
