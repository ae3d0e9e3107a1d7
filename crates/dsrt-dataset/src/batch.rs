//! Many samples read at once: their payloads left where they lie or gathered into one buffer,
//! and whole batches as Arrow record batches (what a columnar consumer, the Python package's
//! `RankPlan.read_columnar` and `read_located` and Ray's datasource, reads without a copy per
//! sample).

use crate::{Dataset, DatasetError};
use arrow_array::builder::StringBuilder;
use arrow_array::types::Int32Type;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, Int32Array,
    Int64Array, LargeBinaryArray, RecordBatch, StructArray, UInt64Array,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Schema};
use dsrt_metadata::gather_column;
use dsrt_plan::PlanError;
use dsrt_reader::{Cache, CacheError, FileMap, MappedPayload, SampleBuf};
use dsrt_schema::ValueRef;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// Where one read left its payload.
#[derive(Debug, Clone)]
pub enum PayloadAt {
    /// Stored uncompressed: `len` bytes at byte `offset` of shard `shard`'s file, which `map`
    /// maps whole (holding it keeps the bytes readable).
    InShard {
        /// Shard id.
        shard: u64,
        /// Byte offset of the payload in the shard file.
        offset: u64,
        /// Payload length.
        len: usize,
        /// The shard's mapping.
        map: FileMap,
    },
    /// Decoded (it was stored compressed, or its cache has no local shard files) into the
    /// batch's buffer, at this range.
    Decoded(Range<usize>),
}

impl PayloadAt {
    /// The payload's bytes, given the buffer its batch decoded into.
    pub fn bytes<'a>(&'a self, decoded: &'a [u8]) -> &'a [u8] {
        match self {
            Self::InShard {
                offset, len, map, ..
            } => usize::try_from(*offset)
                .ok()
                .and_then(|at| map.get(at..at.checked_add(*len)?))
                .unwrap_or_default(),
            Self::Decoded(range) => &decoded[range.clone()],
        }
    }
}

/// The payloads of many reads: each one's place, and the buffer the decoded ones share.
#[derive(Debug, Default)]
pub struct LocatedPayloads {
    /// The payloads decoded, one after another, in read order.
    pub decoded: Vec<u8>,
    /// Each read's payload, in read order.
    pub places: Vec<PayloadAt>,
}

/// Reads `items` (mapped reads: every record checked as `Cache::read` checks it), leaving each
/// uncompressed payload in its shard and decoding the others into one buffer.
pub fn read_located(items: &[(&Cache, u64)]) -> Result<LocatedPayloads, CacheError> {
    let mut buf = SampleBuf::new();
    let mut out = LocatedPayloads {
        decoded: Vec::new(),
        places: Vec::with_capacity(items.len()),
    };
    for &(cache, sample) in items {
        let payload = cache.read_mapped_location(sample, &mut buf)?;
        out.places
            .push(PayloadAt::appended(payload, &mut out.decoded));
    }
    Ok(out)
}

impl PayloadAt {
    /// Where `payload` is: in its shard, or appended (decoded) to `decoded`.
    pub fn appended(payload: MappedPayload<'_>, decoded: &mut Vec<u8>) -> Self {
        match payload {
            MappedPayload::InShard {
                shard,
                offset,
                len,
                map,
            } => PayloadAt::InShard {
                shard,
                offset,
                len,
                map,
            },
            MappedPayload::Decoded(payload) => {
                let at = decoded.len();
                decoded.extend_from_slice(payload);
                PayloadAt::Decoded(at..decoded.len())
            }
        }
    }
}

/// Reads `items` into one contiguous buffer: the buffer and each payload's range in it.
pub fn read_copied(items: &[(&Cache, u64)]) -> Result<(Vec<u8>, Vec<Range<usize>>), CacheError> {
    let mut buf = SampleBuf::new();
    let mut out = Vec::new();
    let mut ranges = Vec::with_capacity(items.len());
    for &(cache, sample) in items {
        let payload = cache.read_mapped(sample, &mut buf)?.payload;
        let at = out.len();
        out.extend_from_slice(payload);
        ranges.push(at..out.len());
    }
    Ok((out, ranges))
}

/// One row of a dataset batch: the sample (its cache's position in the dataset and its id),
/// the step it is read for, and whether it pads the last round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchRow {
    /// The cache's position in [`Dataset::caches`].
    pub cache: usize,
    /// The sample's id in its cache.
    pub sample_id: u64,
    /// The step (of a rank's share of an epoch) the row is read for.
    pub step: u64,
    /// Whether the row repeats a sample to pad the last round.
    pub padding: bool,
}

impl Dataset {
    /// Reads `rows` as one record batch of columns `payload` (large_binary, the decoded
    /// payloads, copied once into one buffer), then `key`, `padding`, `step` and `metadata`
    /// ([`Dataset::batch_columns`]).
    pub fn read_columnar(&self, rows: &[BatchRow]) -> Result<RecordBatch, DatasetError> {
        let items = self.items(rows)?;
        let (data, ranges) = read_copied(&items)?;
        let payload = LargeBinaryArray::new(
            offsets_of(ranges.iter().map(ExactSizeIterator::len)),
            Buffer::from_vec(data),
            None,
        );
        let mut columns = vec![column("payload", false, Arc::new(payload))];
        columns.extend(self.batch_columns(rows, &items)?);
        batch(columns)
    }

    /// Reads `rows` (checking each record) without copying an uncompressed payload: a record
    /// batch of where each payload lies, `shard` (its shard file's path, dictionary-encoded;
    /// null for a payload stored compressed or read from a remote cache), `offset` and `length`
    /// (its bytes in that file) and `decoded` (large_binary: the decoded payload where there is
    /// no file to read it from, else null), then `key`, `padding`, `step` and `metadata`
    /// ([`Dataset::batch_columns`]). For a reader that maps the shard files itself.
    pub fn read_located(&self, rows: &[BatchRow]) -> Result<RecordBatch, DatasetError> {
        let items = self.items(rows)?;
        let located = read_located(&items)?;
        // (cache, shard) -> its key in the dictionary of paths.
        let mut keys: HashMap<(usize, u64), i32> = HashMap::new();
        let mut paths = StringBuilder::new();
        let mut shard_keys = Vec::with_capacity(rows.len());
        let mut offsets = Vec::with_capacity(rows.len());
        let mut lengths = Vec::with_capacity(rows.len());
        for (row, place) in rows.iter().zip(&located.places) {
            let (offset, len) = match place {
                PayloadAt::InShard {
                    shard, offset, len, ..
                } => {
                    let key = match keys.get(&(row.cache, *shard)) {
                        Some(&key) => key,
                        None => {
                            let key = i32::try_from(keys.len()).map_err(|_| {
                                DatasetError::Batch("more shard files than a batch can name".into())
                            })?;
                            paths.append_value(self.shard_path_text(row.cache, *shard)?);
                            keys.insert((row.cache, *shard), key);
                            key
                        }
                    };
                    shard_keys.push(Some(key));
                    (*offset, *len)
                }
                PayloadAt::Decoded(range) => {
                    shard_keys.push(None);
                    (0, range.len())
                }
            };
            offsets.push(to_i64(offset)?);
            lengths.push(to_i64(len as u64)?);
        }
        // The decoded payloads lie one after another in `decoded`, in row order.
        let decoded_lens = located.places.iter().map(|place| match place {
            PayloadAt::Decoded(range) => range.len(),
            PayloadAt::InShard { .. } => 0,
        });
        let decoded_valid: NullBuffer = located
            .places
            .iter()
            .map(|place| matches!(place, PayloadAt::Decoded(_)))
            .collect();
        let decoded = LargeBinaryArray::new(
            offsets_of(decoded_lens),
            Buffer::from_vec(located.decoded),
            Some(decoded_valid),
        );
        let shards = DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(shard_keys),
            Arc::new(paths.finish()),
        )
        .map_err(arrow_error)?;
        let mut columns = vec![
            column("shard", true, Arc::new(shards)),
            column("offset", false, Arc::new(Int64Array::from(offsets))),
            column("length", false, Arc::new(Int64Array::from(lengths))),
            column("decoded", true, Arc::new(decoded)),
        ];
        columns.extend(self.batch_columns(rows, &items)?);
        batch(columns)
    }

    /// The columns every dataset batch has after its payload columns: `key` (each row's
    /// `(cache_id, sample_id)`, a fixed-size list of two uint64), `padding` (bool), `step`
    /// (int64) and `metadata`: a struct of the dataset's metadata columns, in the order the
    /// caches first name them, each typed by its values (`dsrt_metadata::gather_column`: null
    /// where a value is null or its cache lacks the column, a dense union where caches give it
    /// different types).
    pub fn batch_columns(
        &self,
        rows: &[BatchRow],
        items: &[(&Cache, u64)],
    ) -> Result<Vec<(Field, ArrayRef)>, DatasetError> {
        let caches = self.caches();
        let keys: Vec<u64> = rows
            .iter()
            .flat_map(|row| [caches[row.cache].cache_id, row.sample_id])
            .collect();
        let item = Arc::new(Field::new("item", DataType::UInt64, false));
        let keys = FixedSizeListArray::new(
            Arc::clone(&item),
            2,
            Arc::new(UInt64Array::from(keys)),
            None,
        );
        let padding: BooleanArray = rows.iter().map(|row| Some(row.padding)).collect();
        let steps = rows
            .iter()
            .map(|row| {
                i64::try_from(row.step).map_err(|_| {
                    PlanError::TooLarge(format!("step {} past the int64 range", row.step))
                })
            })
            .collect::<Result<Int64Array, _>>()?;
        let metadata = self.metadata_columns(items);
        Ok(vec![
            column("key", false, Arc::new(keys)),
            column("padding", false, Arc::new(padding)),
            column("step", false, Arc::new(steps)),
            column("metadata", false, Arc::new(metadata)),
        ])
    }

    /// The path of shard `shard` of the cache at `position`, as text a batch can carry.
    fn shard_path_text(&self, position: usize, shard: u64) -> Result<&str, DatasetError> {
        let cache = &self.caches()[position];
        let path = cache.cache.shard_path(shard);
        path.and_then(|p| p.to_str()).ok_or_else(|| {
            DatasetError::Batch(format!(
                "shard {shard} of cache {} has no UTF-8 path to name in a batch",
                cache.cache_id
            ))
        })
    }

    /// The `(cache, sample)` each row reads.
    fn items(&self, rows: &[BatchRow]) -> Result<Vec<(&Cache, u64)>, DatasetError> {
        rows.iter()
            .map(|row| match self.caches().get(row.cache) {
                Some(cache) => Ok((&cache.cache, row.sample_id)),
                None => Err(DatasetError::Batch(format!(
                    "no cache at position {} of a dataset of {}",
                    row.cache,
                    self.caches().len()
                ))),
            })
            .collect()
    }

    /// The dataset's metadata columns for `items`, as one struct array.
    fn metadata_columns(&self, items: &[(&Cache, u64)]) -> StructArray {
        let mut names: Vec<&str> = Vec::new();
        for cache in self.caches() {
            for column in cache.cache.schema().columns() {
                if !names.contains(&column.name.as_str()) {
                    names.push(&column.name);
                }
            }
        }
        let mut values = Vec::with_capacity(items.len());
        let mut fields = Vec::with_capacity(names.len());
        let mut arrays = Vec::with_capacity(names.len());
        for name in names {
            values.clear();
            values.extend(items.iter().map(|&(cache, sample)| {
                cache
                    .schema()
                    .position(name)
                    .and_then(|i| cache.metadata().value(sample, i))
                    .unwrap_or(ValueRef::Null)
            }));
            let array = gather_column(&values);
            fields.push(Field::new(name, array.data_type().clone(), true));
            arrays.push(array);
        }
        if fields.is_empty() {
            return StructArray::new_empty_fields(items.len(), None);
        }
        StructArray::new(fields.into(), arrays, None)
    }
}

/// Samples `samples` of `cache` as one record batch: `payload` (large_binary, the decoded
/// payloads) and then the metadata columns with their declared types. Refused when the range
/// is not within the cache or a metadata column is named `payload`.
pub fn read_arrow(cache: &Cache, samples: Range<u64>) -> Result<RecordBatch, DatasetError> {
    let table = cache.metadata();
    let fields = table.arrow_schema().fields().clone();
    if samples.start > samples.end || samples.end > cache.len() {
        return Err(DatasetError::Batch(format!(
            "samples {}..{} are not within the cache's {}",
            samples.start,
            samples.end,
            cache.len()
        )));
    }
    if fields.iter().any(|f| f.name() == "payload") {
        return Err(DatasetError::Batch(format!(
            "{}: a metadata column named \"payload\" clashes with the payload column",
            cache.path().display()
        )));
    }
    let items: Vec<(&Cache, u64)> = samples.clone().map(|s| (cache, s)).collect();
    let (data, ranges) = read_copied(&items)?;
    let payload = LargeBinaryArray::new(
        offsets_of(ranges.iter().map(ExactSizeIterator::len)),
        Buffer::from_vec(data),
        None,
    );
    let mut columns = vec![column("payload", false, Arc::new(payload))];
    let mut values = Vec::with_capacity(items.len());
    for (at, field) in fields.iter().enumerate() {
        values.clear();
        values.extend(
            samples
                .clone()
                .map(|s| table.value(s, at).unwrap_or(ValueRef::Null)),
        );
        let mut array = gather_column(&values);
        if array.data_type() != field.data_type() {
            // Every value null: the column keeps its declared type.
            array = new_null_array(field.data_type(), items.len());
        }
        columns.push((field.as_ref().clone(), array));
    }
    batch(columns)
}

fn column(name: &str, nullable: bool, array: ArrayRef) -> (Field, ArrayRef) {
    (Field::new(name, array.data_type().clone(), nullable), array)
}

fn batch(columns: Vec<(Field, ArrayRef)>) -> Result<RecordBatch, DatasetError> {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(arrow_error)
}

fn arrow_error(error: arrow_schema::ArrowError) -> DatasetError {
    DatasetError::Batch(error.to_string())
}

fn to_i64(value: u64) -> Result<i64, DatasetError> {
    i64::try_from(value).map_err(|_| DatasetError::Batch(format!("{value} past the int64 range")))
}

/// Offsets of values laid one after another, `lens` bytes each. A buffer's length fits an
/// `isize`, so every sum of the lengths of one fits an `i64`.
fn offsets_of(lens: impl Iterator<Item = usize>) -> OffsetBuffer<i64> {
    OffsetBuffer::from_lengths(lens)
}

/// The columns of a batch [`Dataset::read_located`] made, read back (by the process that maps
/// the shard files the batch names, after the batch crossed to it).
#[derive(Debug, Clone, Copy)]
pub struct LocatedColumns<'a> {
    shards: &'a DictionaryArray<Int32Type>,
    paths: &'a arrow_array::StringArray,
    offsets: &'a Int64Array,
    lengths: &'a Int64Array,
    decoded: &'a LargeBinaryArray,
}

/// A payload a located batch places past the end of its shard file as mapped now: the file
/// changed after the batch was read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a payload at {offset} (+{length}) lies past the end of its mapped shard ({file_len} \
     bytes): the shard file changed after it was checked"
)]
pub struct PastEnd {
    /// The shard file, as the batch's dictionary numbers it.
    pub file: usize,
    /// The payload's offset.
    pub offset: i64,
    /// Its length.
    pub length: i64,
    /// The file's length now.
    pub file_len: usize,
}

/// Where one row's payload lies: in shard file `file` of the batch's dictionary, or (`None`)
/// in the batch's decoded bytes, at `range`.
pub type PayloadRange = (Option<usize>, Range<usize>);

impl<'a> LocatedColumns<'a> {
    /// The location columns of `batch`, checked for their types.
    pub fn of(batch: &'a RecordBatch) -> Result<Self, DatasetError> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::Int64Type;
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                DatasetError::Batch(format!("not a located batch: no `{name}` column"))
            })
        };
        let wrong = |name: &str| {
            DatasetError::Batch(format!(
                "a located batch's `{name}` column has another type"
            ))
        };
        let shards = column("shard")?
            .as_dictionary_opt::<Int32Type>()
            .ok_or_else(|| wrong("shard"))?;
        Ok(Self {
            shards,
            paths: shards
                .values()
                .as_string_opt::<i32>()
                .ok_or_else(|| wrong("shard"))?,
            offsets: column("offset")?
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| wrong("offset"))?,
            lengths: column("length")?
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| wrong("length"))?,
            decoded: column("decoded")?
                .as_binary_opt::<i64>()
                .ok_or_else(|| wrong("decoded"))?,
        })
    }

    /// The shard files the batch names, in the order its rows number them.
    pub fn shard_paths(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        let paths = self.paths;
        (0..paths.len()).map(move |i| paths.value(i))
    }

    /// The decoded payloads' bytes, one after another.
    pub fn decoded(&self) -> &'a [u8] {
        self.decoded.values()
    }

    /// Each row's payload, given the length of each shard file as mapped now (in
    /// [`LocatedColumns::shard_paths`] order); a range past its file's end is refused.
    pub fn ranges(&self, file_lens: &[usize]) -> Result<Vec<PayloadRange>, PastEnd> {
        let bounds = self.decoded.value_offsets();
        (0..self.offsets.len())
            .map(|row| {
                if !self.shards.is_valid(row) {
                    let at = |i: usize| usize::try_from(bounds[i]).unwrap_or(usize::MAX);
                    return Ok((None, at(row)..at(row + 1)));
                }
                let file = usize::try_from(self.shards.keys().value(row)).unwrap_or(usize::MAX);
                let (offset, length) = (self.offsets.value(row), self.lengths.value(row));
                let file_len = file_lens.get(file).copied().unwrap_or(0);
                let range = usize::try_from(offset)
                    .ok()
                    .zip(usize::try_from(length).ok())
                    .and_then(|(start, len)| Some(start..start.checked_add(len)?))
                    .filter(|range| range.end <= file_len);
                range.map(|range| (Some(file), range)).ok_or(PastEnd {
                    file,
                    offset,
                    length,
                    file_len,
                })
            })
            .collect()
    }
}
