//! The footer's bytes: compact msgpack, then one zstd frame.

use crate::budget::{hash_table_of_u32, heap_bytes, heap_of, FooterBudget};
use crate::consts::{FOOTER_ZSTD_LEVEL, MAX_DECODED_FOOTER};
use crate::datasets::RawDatasets;
use crate::dtype::{Codec, DType};
use crate::error::FooterError;
use crate::footer::{CollectionFooter, DatasetMap, IndexPairs, InternedSchema, VariableEntry};
use crate::inline_list::InlineList;
use smallvec::SmallVec;

/// Nesting a decode accepts. A `DType` list nests one level per child; real types nest a
/// handful, and the bound keeps hostile input from exhausting the stack.
const MAX_DECODE_DEPTH: usize = 64;

/// The msgpack form of `footer` (rmp-serde compact, positional).
pub fn to_msgpack(footer: &CollectionFooter) -> Vec<u8> {
    // Serializing into a Vec only fails for types serde cannot express; the footer has none,
    // and an error here would be a bug in this crate, not bad input.
    rmp_serde::to_vec(footer).unwrap_or_else(|e| unreachable!("footer serializes: {e}"))
}

/// The footer bytes as they sit in the container: zstd of the msgpack form.
pub fn encode_footer(footer: &CollectionFooter) -> Vec<u8> {
    dsrt_atlas_codec::zstd_frame::compress(&to_msgpack(footer), FOOTER_ZSTD_LEVEL)
}

/// Decodes the msgpack form. Does not validate: see [`crate::validate`].
///
/// The footer is a msgpack array of its eight fields, each read straight off the slice in the
/// compact (positional) form `rmp_serde::to_vec` writes: structs as arrays of their fields,
/// enums as rmp-serde's names, integers in any width. Every list is allocated once, at the
/// length its header declares, after that length is checked against the bytes left and its
/// memory charged to a [`FooterBudget`] (here one for a footer stored as these bytes
/// uncompressed; [`decode_footer`] and [`decode_and_validate`] charge the stored frame's), so
/// no claim is allocated before the bytes could hold it and the budget allows it. `datasets`,
/// one pair per dataset and so nearly all of a large footer, is read by `read_datasets` into
/// one name buffer and a hash table of ordinals (see [`DatasetMap`]), with no allocation per
/// name. Every footer accepted is one the derived `Deserialize` reads the same; forms only
/// rmp-serde's lenient reader takes (a struct as a map, a pair as bin, an enum by index) are
/// refused, as is the named (map) form of the footer itself: the layout is positional.
pub fn from_msgpack(bytes: &[u8]) -> Result<CollectionFooter, FooterError> {
    let mut budget = FooterBudget::for_footer_size(bytes.len() as u64);
    decode(bytes, &mut budget).map(|decoded| decoded.footer)
}

/// A decoded footer, and what the decode learned for validation on the way.
struct Decoded {
    footer: CollectionFooter,
    /// The first dataset whose schema index is past the schema pool, found while reading the
    /// pairs so that validation needs no second pass over 100,000 datasets.
    first_bad_schema: Option<usize>,
}

fn decode(bytes: &[u8], budget: &mut FooterBudget) -> Result<Decoded, FooterError> {
    let mut rd = bytes;
    let fields = rmp::decode::read_array_len(&mut rd).map_err(|e| failed("footer", &e))?;
    if fields != 8 {
        return Err(FooterError::corrupt(
            "footer",
            format!("an array of {fields} fields, expected 8"),
        ));
    }
    let version = read_u32(&mut rd, || "version".into())?;
    let codec = read_codec(&mut rd)?;
    let created_unix_ms = read_i64(&mut rd, || "created_unix_ms".into())?;
    let string_pool = read_strings(&mut rd, budget)?;
    let dtype_pool = read_dtypes(&mut rd, budget)?;
    let schema_pool = read_schemas(&mut rd, budget)?;
    let variables = read_variables(&mut rd, budget)?;
    let (datasets, first_bad_schema) = read_datasets(&mut rd, schema_pool.len(), budget)?;
    // A footer is exactly one msgpack value; bytes after it mean the frame is not ours.
    if !rd.is_empty() {
        return Err(FooterError::corrupt(
            "footer",
            format!("{} bytes after the msgpack value", rd.len()),
        ));
    }
    Ok(Decoded {
        footer: CollectionFooter {
            version,
            codec,
            created_unix_ms,
            string_pool,
            dtype_pool,
            schema_pool,
            variables,
            datasets,
        },
        first_bad_schema,
    })
}

/// `CorruptCollection` at `field` for a msgpack read that failed.
#[cold]
fn failed(field: impl Into<String>, e: &dyn std::fmt::Display) -> FooterError {
    FooterError::corrupt(field, format!("msgpack decode failed: {e}"))
}

/// A `u32` written in any msgpack integer width.
fn read_u32(rd: &mut &[u8], field: impl FnOnce() -> String) -> Result<u32, FooterError> {
    rmp::decode::read_int(rd).map_err(|e| failed(field(), &e))
}

/// A `u64` written in any msgpack integer width.
fn read_u64(rd: &mut &[u8], field: impl FnOnce() -> String) -> Result<u64, FooterError> {
    rmp::decode::read_int(rd).map_err(|e| failed(field(), &e))
}

/// An `i64` written in any msgpack integer width.
fn read_i64(rd: &mut &[u8], field: impl FnOnce() -> String) -> Result<i64, FooterError> {
    rmp::decode::read_int(rd).map_err(|e| failed(field(), &e))
}

/// A msgpack str, as UTF-8.
fn read_str<'a>(rd: &mut &'a [u8], field: impl FnOnce() -> String) -> Result<&'a str, FooterError> {
    let (text, rest) = rmp::decode::read_str_from_slice(*rd).map_err(|e| failed(field(), &e))?;
    *rd = rest;
    Ok(text)
}

/// An array header of exactly `expected` elements (a struct or a pair).
fn read_fields(
    rd: &mut &[u8],
    expected: u32,
    field: impl Fn() -> String,
) -> Result<(), FooterError> {
    let found = rmp::decode::read_array_len(rd).map_err(|e| failed(field(), &e))?;
    if found != expected {
        return Err(FooterError::corrupt(
            field(),
            format!("msgpack decode failed: an array of {found} elements, expected {expected}"),
        ));
    }
    Ok(())
}

/// The header of a list whose items take at least `min_item` bytes each: its length, refused
/// when the bytes left cannot hold that many items (so no claim sizes an allocation).
fn read_list_len(
    rd: &mut &[u8],
    min_item: usize,
    field: impl Fn() -> String,
) -> Result<usize, FooterError> {
    let len = rmp::decode::read_array_len(rd).map_err(|e| failed(field(), &e))?;
    let len = usize::try_from(len).map_err(|e| failed(field(), &e))?;
    if len > rd.len() / min_item {
        return Err(FooterError::corrupt(
            field(),
            format!(
                "msgpack decode failed: a list of {len} items, but {} bytes are left",
                rd.len()
            ),
        ));
    }
    Ok(len)
}

fn read_codec(rd: &mut &[u8]) -> Result<Codec, FooterError> {
    let field = || "codec".to_owned();
    match read_str(rd, field)? {
        "None" => Ok(Codec::None),
        "Lz4" => Ok(Codec::Lz4),
        "Zstd" => Ok(Codec::Zstd),
        other => Err(FooterError::corrupt(
            field(),
            format!("msgpack decode failed: unknown codec '{other}'"),
        )),
    }
}

fn read_strings(rd: &mut &[u8], budget: &mut FooterBudget) -> Result<Vec<String>, FooterError> {
    let len = read_list_len(rd, 1, || "string_pool".into())?;
    budget.charge(heap_of::<String>(len as u64), || {
        format!("string_pool: {len} strings")
    })?;
    let mut strings = Vec::with_capacity(len);
    for i in 0..len {
        let text = read_str(rd, || format!("string_pool[{i}]"))?;
        budget.charge(heap_bytes(text.len() as u64), || {
            format!("string_pool[{i}]: {} bytes", text.len())
        })?;
        strings.push(text.to_owned());
    }
    Ok(strings)
}

fn read_dtypes(rd: &mut &[u8], budget: &mut FooterBudget) -> Result<Vec<DType>, FooterError> {
    let len = read_list_len(rd, 1, || "dtype_pool".into())?;
    budget.charge(heap_of::<DType>(len as u64), || {
        format!("dtype_pool: {len} dtypes")
    })?;
    let mut dtypes = Vec::with_capacity(len);
    for i in 0..len {
        dtypes.push(read_dtype(rd, &|| format!("dtype_pool[{i}]"), 0, budget)?);
    }
    Ok(dtypes)
}

/// One `DType` in rmp-serde's enum form: a unit variant is its name as a str, a struct
/// variant a one-entry map from its name to the array of its fields. A child costs a `Box`.
fn read_dtype(
    rd: &mut &[u8],
    field: &dyn Fn() -> String,
    depth: usize,
    budget: &mut FooterBudget,
) -> Result<DType, FooterError> {
    if depth >= MAX_DECODE_DEPTH {
        return Err(FooterError::corrupt(
            field(),
            format!("msgpack decode failed: dtype nested deeper than {MAX_DECODE_DEPTH}"),
        ));
    }
    let unknown = |name: &str| {
        FooterError::corrupt(
            field(),
            format!("msgpack decode failed: unknown dtype variant '{name}'"),
        )
    };
    if rd
        .first()
        .is_some_and(|&b| (0x80..=0x8f).contains(&b) || b == 0xde || b == 0xdf)
    {
        let entries = rmp::decode::read_map_len(rd).map_err(|e| failed(field(), &e))?;
        if entries != 1 {
            return Err(FooterError::corrupt(
                field(),
                format!("msgpack decode failed: a dtype map of {entries} entries, expected 1"),
            ));
        }
        let name = read_str(rd, field)?;
        let fields = match name {
            "List" => 1,
            "FixedSizeList" => 2,
            other => return Err(unknown(other)),
        };
        read_fields(rd, fields, field)?;
        budget.charge(heap_of::<DType>(1), || {
            format!("{}: a nested dtype", field())
        })?;
        let child = Box::new(read_dtype(rd, field, depth + 1, budget)?);
        return Ok(if fields == 1 {
            DType::List { child }
        } else {
            let size = read_u32(rd, field)?;
            DType::FixedSizeList { child, size }
        });
    }
    Ok(match read_str(rd, field)? {
        "Bool" => DType::Bool,
        "Int8" => DType::Int8,
        "Int16" => DType::Int16,
        "Int32" => DType::Int32,
        "Int64" => DType::Int64,
        "UInt8" => DType::UInt8,
        "UInt16" => DType::UInt16,
        "UInt32" => DType::UInt32,
        "UInt64" => DType::UInt64,
        "Float32" => DType::Float32,
        "Float64" => DType::Float64,
        "String" => DType::String,
        "Binary" => DType::Binary,
        "TimestampNs" => DType::TimestampNs,
        other => return Err(unknown(other)),
    })
}

fn read_schemas(
    rd: &mut &[u8],
    budget: &mut FooterBudget,
) -> Result<Vec<InternedSchema>, FooterError> {
    // The smallest schema is `[[], [], []]`: four bytes.
    let len = read_list_len(rd, 4, || "schema_pool".into())?;
    budget.charge(heap_of::<InternedSchema>(len as u64), || {
        format!("schema_pool: {len} schemas")
    })?;
    let mut schemas = Vec::with_capacity(len);
    for i in 0..len {
        let at = |part: &str| format!("schema_pool[{i}]{part}");
        read_fields(rd, 3, || at(""))?;
        let arrays = read_pairs(rd, &|| at(".arrays"), budget)?;
        let attrs = read_pairs(rd, &|| at(".attrs"), budget)?;
        // The smallest entry is `[position, []]`: three bytes.
        let entries = read_list_len(rd, 3, || at(".array_attrs"))?;
        let mut array_attrs = InlineList(SmallVec::new());
        if entries > array_attrs.inline_size() {
            budget.charge(heap_of::<(u32, IndexPairs)>(entries as u64), || {
                format!("{}: {entries} entries", at(".array_attrs"))
            })?;
        }
        array_attrs.reserve_exact(entries);
        for j in 0..entries {
            let entry = || at(&format!(".array_attrs[{j}]"));
            read_fields(rd, 2, entry)?;
            let position = read_u32(rd, entry)?;
            let keys = read_pairs(rd, &entry, budget)?;
            array_attrs.push((position, keys));
        }
        schemas.push(InternedSchema {
            arrays,
            attrs,
            array_attrs,
        });
    }
    Ok(schemas)
}

/// A list of `[u32, u32]` pairs, kept inline up to four.
fn read_pairs(
    rd: &mut &[u8],
    field: &dyn Fn() -> String,
    budget: &mut FooterBudget,
) -> Result<IndexPairs, FooterError> {
    let len = read_list_len(rd, 3, field)?;
    let mut pairs = InlineList(SmallVec::new());
    if len > pairs.inline_size() {
        budget.charge(heap_of::<(u32, u32)>(len as u64), || {
            format!("{}: {len} pairs", field())
        })?;
    }
    pairs.reserve_exact(len);
    for k in 0..len {
        let pair = || format!("{}[{k}]", field());
        read_fields(rd, 2, pair)?;
        pairs.push((read_u32(rd, pair)?, read_u32(rd, pair)?));
    }
    Ok(pairs)
}

fn read_variables(
    rd: &mut &[u8],
    budget: &mut FooterBudget,
) -> Result<Vec<VariableEntry>, FooterError> {
    // The smallest entry is `[name, seg_offset, seg_len]` of fixints: four bytes.
    let len = read_list_len(rd, 4, || "variables".into())?;
    budget.charge(heap_of::<VariableEntry>(len as u64), || {
        format!("variables: {len} segments")
    })?;
    let mut variables = Vec::with_capacity(len);
    for i in 0..len {
        let field = || format!("variables[{i}]");
        read_fields(rd, 3, field)?;
        variables.push(VariableEntry {
            name: read_u32(rd, field)?,
            seg_offset: read_u64(rd, field)?,
            seg_len: read_u64(rd, field)?,
        });
    }
    Ok(variables)
}

/// What rmp says of any string it cannot decode (its `DecodeStringError` displays this for
/// every kind), so a name the fast path refuses reads as rmp would have it.
const STRING_ERROR: &str = "error while decoding string";

/// Reads `datasets` (a msgpack array of `[name, schema_index]` pairs) off the front of `rd`,
/// refusing a repeated name or one that is not UTF-8, and returns the map with the first
/// ordinal whose schema index is not below `schemas` (the schema pool's length).
///
/// One pass: each pair is read, its name appended to the map's buffer and its ordinal to the
/// hash table (which is where a repeat shows). The usual pair (see [`fast_pair`]) is read
/// inline; any other encoding goes through `rmp::decode`, which accepts every form
/// the derived `Deserialize` did. Names are checked to be UTF-8 all together at the end, and
/// before any other error is reported, so the first bad pair is still the one named.
///
/// The header's claim is refused when the bytes left cannot hold that many pairs (a pair is at
/// least three bytes); the names are reserved at most the bytes the pairs leave them, and all
/// of it is charged to `budget` first.
fn read_datasets(
    rd: &mut &[u8],
    schemas: usize,
    budget: &mut FooterBudget,
) -> Result<(DatasetMap, Option<usize>), FooterError> {
    let corrupt = |ordinal: Option<usize>, e: &dyn std::fmt::Display| {
        let at = ordinal.map_or_else(|| "datasets".to_owned(), |o| format!("datasets[{o}]"));
        FooterError::corrupt(at, format!("msgpack decode failed: {e}"))
    };
    let count = read_list_len(rd, 3, || "datasets".into())?;
    // Each pair spends at least three bytes on its array header, its name's str header and its
    // schema index: the names hold the rest at most.
    let name_bytes = rd.len() - 3 * count;
    let (items, names) = (count as u64, name_bytes as u64);
    budget.charge(
        heap_bytes(names) + 2 * heap_of::<u32>(items) + hash_table_of_u32(items),
        || format!("datasets: {count} datasets with up to {name_bytes} bytes of names"),
    )?;
    let mut raw = RawDatasets::with_capacity(count, name_bytes);
    // An error found at pair `ordinal` is reported there unless an earlier name is not UTF-8.
    let fail = |raw: &RawDatasets, error: FooterError| match raw.first_invalid_name() {
        Some((bad, _, _)) => corrupt(Some(bad), &STRING_ERROR),
        None => error,
    };
    let schemas = u64::try_from(schemas).unwrap_or(u64::MAX);
    let mut first_bad_schema = None;
    for ordinal in 0..count {
        let (name, schema) = match fast_pair(rd) {
            Some((name, schema, rest)) => {
                *rd = rest;
                (name, schema)
            }
            None => match slow_pair(rd) {
                Ok(pair) => pair,
                Err(e) => return Err(fail(&raw, corrupt(Some(ordinal), &e))),
            },
        };
        if u64::from(schema) >= schemas && first_bad_schema.is_none() {
            first_bad_schema = Some(ordinal);
        }
        match raw.push(name, schema) {
            Ok(()) => {}
            Err(Some(existing)) => {
                let error = FooterError::corrupt(
                    "footer",
                    format!(
                        "msgpack decode failed: datasets: name '{}' at ordinal {ordinal} repeats ordinal {existing}",
                        String::from_utf8_lossy(name)
                    ),
                );
                return Err(fail(&raw, error));
            }
            Err(None) => {
                let error = corrupt(Some(ordinal), &"more names than u32 offsets address");
                return Err(fail(&raw, error));
            }
        }
    }
    let datasets = raw
        .finish()
        .map_err(|(ordinal, _)| corrupt(Some(ordinal), &STRING_ERROR))?;
    Ok((datasets, first_bad_schema))
}

/// A pair as the encoder writes it for names under 256 bytes and schema indices under 65,536:
/// `[fixstr or str8 name, positive fixint, uint8 or uint16]`. Returns the name's bytes (not yet
/// checked to be UTF-8), the index and the bytes after the pair; `None` for any other
/// encoding, truncation included, which [`slow_pair`] then reads (or refuses).
#[inline(always)]
fn fast_pair(bytes: &[u8]) -> Option<(&[u8], u32, &[u8])> {
    let [0x92, marker, rest @ ..] = bytes else {
        return None;
    };
    let (len, rest) = match *marker {
        0xa0..=0xbf => (usize::from(marker & 0x1f), rest),
        0xd9 => {
            let (&len, rest) = rest.split_first()?;
            (usize::from(len), rest)
        }
        _ => return None,
    };
    let (name, rest) = rest.split_at_checked(len)?;
    let (schema, rest) = match rest {
        [index @ 0x00..=0x7f, rest @ ..] | [0xcc, index, rest @ ..] => (u32::from(*index), rest),
        [0xcd, high, low, rest @ ..] => (u32::from(u16::from_be_bytes([*high, *low])), rest),
        _ => return None,
    };
    Some((name, schema, rest))
}

/// Any other encoding of a pair, read with `rmp::decode` (and its error messages).
#[inline(never)]
fn slow_pair<'a>(rd: &mut &'a [u8]) -> Result<(&'a [u8], u32), String> {
    let pair = rmp::decode::read_array_len(rd).map_err(|e| e.to_string())?;
    if pair != 2 {
        return Err(format!("a pair of {pair} elements"));
    }
    let (name, rest) = rmp::decode::read_str_from_slice(*rd).map_err(|e| e.to_string())?;
    *rd = rest;
    let schema: u32 = rmp::decode::read_int(rd).map_err(|e| e.to_string())?;
    Ok((name.as_bytes(), schema))
}

/// Decodes the footer bytes as they sit in the container (zstd, then msgpack). Does not
/// validate: see [`crate::validate`].
pub fn decode_footer(frame: &[u8]) -> Result<CollectionFooter, FooterError> {
    let mut budget = FooterBudget::for_footer_size(frame.len() as u64);
    decode(&unzstd(frame, &mut budget)?, &mut budget).map(|decoded| decoded.footer)
}

/// The frame's msgpack, decoded into at most what `budget` has left (and never more than
/// [`MAX_DECODED_FOOTER`]), its buffer charged.
fn unzstd(frame: &[u8], budget: &mut FooterBudget) -> Result<Vec<u8>, FooterError> {
    use dsrt_atlas_codec::zstd_frame::{decompress, ZstdError};
    let limit = budget.remaining().min(MAX_DECODED_FOOTER);
    let msgpack = decompress(frame, limit).map_err(|e| match e {
        ZstdError::TooLarge { .. } if limit < MAX_DECODED_FOOTER => {
            let over = limit.saturating_add(1);
            budget
                .clone()
                .charge(over, || {
                    format!("decoding the frame to more than {limit} bytes")
                })
                .err()
                .unwrap_or_else(|| FooterError::corrupt("footer", e.to_string()))
        }
        other => FooterError::corrupt("footer", other.to_string()),
    })?;
    budget.charge(heap_of::<u8>(msgpack.capacity() as u64), || {
        format!("the decoded frame ({} bytes)", msgpack.len())
    })?;
    Ok(msgpack)
}

/// Serde for `datasets`: a msgpack array of `[name, schema_index]` pairs, never a map.
///
/// As a map a repeated name would collapse two datasets into one and shift every ordinal after
/// it; as a sequence the decoder sees the repeat and refuses it. [`DatasetMap`]'s own
/// `Serialize` and `Deserialize` are this form; the module stays for `#[serde(with)]` users.
pub mod dataset_pairs {
    use crate::footer::DatasetMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes the map as a sequence of `[name, schema_index]` pairs in ordinal order.
    pub fn serialize<S: Serializer>(map: &DatasetMap, serializer: S) -> Result<S::Ok, S::Error> {
        map.serialize(serializer)
    }

    /// Reads the pairs back, refusing a repeated name.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DatasetMap, D::Error> {
        DatasetMap::deserialize(deserializer)
    }
}

/// Decodes and validates in one step: what a reader does with the footer frame, within the
/// budget of a footer of the frame's length (see [`decode_and_validate_within`]).
pub fn decode_and_validate(
    frame: &[u8],
    segments_end: u64,
) -> Result<(CollectionFooter, crate::validate::VariableIndex), FooterError> {
    let mut budget = FooterBudget::for_footer_size(frame.len() as u64);
    decode_and_validate_within(frame, segments_end, &mut budget)
}

/// [`decode_and_validate`], charging `budget` for the decoded bytes, the footer and the
/// validation's tables; a reader then charges what it builds from the footer to the same
/// budget. A footer that would take more is refused before it is allocated.
pub fn decode_and_validate_within(
    frame: &[u8],
    segments_end: u64,
    budget: &mut FooterBudget,
) -> Result<(CollectionFooter, crate::validate::VariableIndex), FooterError> {
    let decoded = decode(&unzstd(frame, budget)?, budget)?;
    let footer = &decoded.footer;
    budget.charge(crate::validate::validation_bytes(footer), || {
        format!(
            "validating {} strings and {} segments",
            footer.string_pool.len(),
            footer.variables.len()
        )
    })?;
    let index = crate::validate::validate_with(footer, segments_end, decoded.first_bad_schema)?;
    Ok((decoded.footer, index))
}
