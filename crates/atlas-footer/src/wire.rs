//! The footer's bytes: compact msgpack, then one zstd frame.

use crate::consts::{FOOTER_ZSTD_LEVEL, MAX_DECODED_FOOTER};
use crate::datasets::RawDatasets;
use crate::error::FooterError;
use crate::footer::{CollectionFooter, DatasetMap};
use serde::Deserialize;

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
/// The footer is a msgpack array of its eight fields. The first seven (version, codec, time,
/// pools, variables) hold a handful of entries and go through serde. `datasets`, one pair per
/// dataset and so nearly all of a large footer, is read by `read_datasets` straight off the
/// slice into one name buffer and a hash table of ordinals (see [`DatasetMap`]), with none of
/// serde's per-value dispatch and no allocation per name. The bytes accepted are exactly those
/// the derived `Deserialize` accepts in compact form; a footer in rmp-serde's named (map) form
/// is refused, as the format is positional.
pub fn from_msgpack(bytes: &[u8]) -> Result<CollectionFooter, FooterError> {
    decode(bytes).map(|decoded| decoded.footer)
}

/// A decoded footer, and what the decode learned for validation on the way.
struct Decoded {
    footer: CollectionFooter,
    /// The first dataset whose schema index is past the schema pool, found while reading the
    /// pairs so that validation needs no second pass over 100,000 datasets.
    first_bad_schema: Option<usize>,
}

fn decode(bytes: &[u8]) -> Result<Decoded, FooterError> {
    let corrupt = |e: &dyn std::fmt::Display| {
        FooterError::corrupt("footer", format!("msgpack decode failed: {e}"))
    };
    let mut rd = bytes;
    let fields = rmp::decode::read_array_len(&mut rd).map_err(|e| corrupt(&e))?;
    if fields != 8 {
        return Err(FooterError::corrupt(
            "footer",
            format!("an array of {fields} fields, expected 8"),
        ));
    }
    let mut de = rmp_serde::Deserializer::new(std::io::Cursor::new(rd));
    de.set_max_depth(MAX_DECODE_DEPTH);
    let version = u32::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let codec = crate::dtype::Codec::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let created_unix_ms = i64::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let string_pool = Vec::<String>::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let dtype_pool = Vec::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let schema_pool: Vec<crate::footer::InternedSchema> =
        Vec::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    let variables = Vec::deserialize(&mut de).map_err(|e| corrupt(&e))?;
    // The head is a few hundred bytes at most; what follows is the datasets array.
    let consumed = usize::try_from(de.position()).map_err(|e| corrupt(&e))?;
    let mut rd = rd
        .get(consumed..)
        .ok_or_else(|| corrupt(&"position past the end"))?;
    let (datasets, first_bad_schema) = read_datasets(&mut rd, schema_pool.len())?;
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
/// Reserves by what the bytes can hold, never by the header's claim: a pair is at least three
/// bytes, a name at most the bytes left.
fn read_datasets(
    rd: &mut &[u8],
    schemas: usize,
) -> Result<(DatasetMap, Option<usize>), FooterError> {
    let corrupt = |ordinal: Option<usize>, e: &dyn std::fmt::Display| {
        let at = ordinal.map_or_else(|| "datasets".to_owned(), |o| format!("datasets[{o}]"));
        FooterError::corrupt(at, format!("msgpack decode failed: {e}"))
    };
    let count = rmp::decode::read_array_len(rd).map_err(|e| corrupt(None, &e))?;
    let count = usize::try_from(count).map_err(|e| corrupt(None, &e))?;
    let mut raw = RawDatasets::with_capacity(count.min(rd.len() / 3), rd.len());
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
    from_msgpack(&unzstd(frame)?)
}

fn unzstd(frame: &[u8]) -> Result<Vec<u8>, FooterError> {
    dsrt_atlas_codec::zstd_frame::decompress(frame, MAX_DECODED_FOOTER)
        .map_err(|e| FooterError::corrupt("footer", e.to_string()))
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

/// Decodes and validates in one step: what a reader does with the footer frame.
pub fn decode_and_validate(
    frame: &[u8],
    segments_end: u64,
) -> Result<(CollectionFooter, crate::validate::VariableIndex), FooterError> {
    let decoded = decode(&unzstd(frame)?)?;
    let index =
        crate::validate::validate_with(&decoded.footer, segments_end, decoded.first_bad_schema)?;
    Ok((decoded.footer, index))
}
